/* A decoder layer of the Llama kind (Llama, Qwen2, Qwen3, Mistral) around its attention, for a pass's M rows in
   float32 (AVX2 + FMA), each row computed alone in one fixed order: bitwise the same row in a pass of one token and
   of many, as row_products' products and row_attention's rows are (row_layers.py calls it, the attention between):

     row_layer_in:   h = rmsnorm(x)                        x [M, D]
                     qkv = h W_qkv^T (+ b_qkv)             [M, (H + 2 KV) d]: each row q | k | v
                     q, k heads: rmsnorm (Qwen3), then rotary: v cos + rotate_half(v) sin (cos, sin [M, d])
     (the attention of q over the cache's keys and values, in Python)
     row_layer_out:  mid = x + attn W_o^T (+ b_o)          attn [M, H d] -> out [M, D]
                     gu = rmsnorm(mid) W_gu^T (+ b_gu)     [M, 2 I]: gate | up
                     out = mid + (silu(gate) up) W_down^T (+ b_down)

   Weights float32 or bfloat16 (half: widened exactly, row_products.c); a norm sums its squares as a product sums
   (eight lanes in order, a fixed tree, then the last D % 8). One call a layer's half instead of some twenty tensor
   operations and seven products' calls from Python. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "row_simd.h"

void row_products(const float *x, const float *w, float *y, int64_t M, int64_t K, int64_t N, int threads);
void row_products_bf16(const float *x, const uint16_t *w, float *y, int64_t M, int64_t K, int64_t N, int threads);

#define CHUNK 256 /* rows a product call at most (a prompt's pass): as row_products.CHUNK_ROWS */

/* y [M, N] = x [M, K] w^T (+ bias [N]) */
static void product(const float *x, const void *w, int half, const float *bias, float *y, int64_t M, int64_t K,
                    int64_t N, int threads) {
    for (int64_t m = 0; m < M; m += CHUNK) {
        int64_t rows = M - m < CHUNK ? M - m : CHUNK;
        if (half) row_products_bf16(x + m * K, (const uint16_t *)w, y + m * N, rows, K, N, threads);
        else row_products(x + m * K, (const float *)w, y + m * N, rows, K, N, threads);
    }
    if (bias)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) y[m * N + n] += bias[n];
}

/* h = weight * (x * 1 / sqrt(mean(x^2) + eps)) for `count` vectors of D floats each (contiguous); h may be x */
static void rms_norm(const float *x, const float *weight, float eps, float *h, int64_t count, int64_t D) {
    int64_t d8 = D - D % 8;
    for (int64_t r = 0; r < count; r++) {
        const float *xr = x + r * D;
        float *hr = h + r * D;
        __m256 acc = _mm256_setzero_ps();
        for (int64_t i = 0; i < d8; i += 8) {
            __m256 v = _mm256_loadu_ps(xr + i);
            acc = _mm256_fmadd_ps(v, v, acc);
        }
        float squares = lanes_sum(acc);
        for (int64_t i = d8; i < D; i++) squares = fmaf(xr[i], xr[i], squares);
        float scale = 1.0f / sqrtf(squares / (float)D + eps);
        for (int64_t i = 0; i < D; i++) hr[i] = weight[i] * (xr[i] * scale);
    }
}

/* Rotary position embedding of `heads` vectors of d floats (contiguous), in place: v cos + rotate_half(v) sin,
   rotate_half(v) = (-v[d/2:], v[:d/2]) */
static void rotate(float *v, int64_t heads, int64_t d, const float *cos, const float *sin) {
    int64_t half = d / 2;
    for (int64_t h = 0; h < heads; h++) {
        float *x = v + h * d;
        for (int64_t i = 0; i < half; i++) {
            float a = x[i], b = x[i + half];
            x[i] = a * cos[i] - b * sin[i];
            x[i + half] = b * cos[i + half] + a * sin[i + half];
        }
    }
}

/* a [M, I] = silu(gate) * up, gu [M, 2 I] (gate | up); silu(g) = g / (1 + e^-g), from e^-|g| (exp8 takes x <= 0):
   g >= 0: g / (1 + e^-g); g < 0: g e^g / (1 + e^g), 0 below -87 (where exp8 stops: g e^g is under 2^-118 there). Eight
   at a time, the last I % 8 padded into a block of eight; a NaN stays a NaN. */
static inline __m256 silu_times8(__m256 g, __m256 u) {
    __m256 one = _mm256_set1_ps(1.0f);
    __m256 e = exp8(_mm256_or_ps(g, _mm256_set1_ps(-0.0f)));  /* e^-|g| */
    __m256 top = _mm256_blendv_ps(e, one, _mm256_cmp_ps(g, _mm256_setzero_ps(), _CMP_GE_OQ));
    __m256 silu = _mm256_mul_ps(g, _mm256_div_ps(top, _mm256_add_ps(one, e)));
    silu = _mm256_andnot_ps(_mm256_cmp_ps(g, _mm256_set1_ps(-87.0f), _CMP_LT_OQ), silu);  /* (a NaN compares false) */
    return _mm256_mul_ps(silu, u);
}

static void silu_times(const float *gu, float *a, int64_t M, int64_t I) {
    int64_t i8 = I - I % 8;
    for (int64_t m = 0; m < M; m++) {
        const float *g = gu + m * 2 * I, *u = g + I;
        float *am = a + m * I;
        for (int64_t i = 0; i < i8; i += 8)
            _mm256_storeu_ps(am + i, silu_times8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
        if (i8 < I) {
            float gt[8] = {0}, ut[8] = {0}, at[8];
            for (int64_t i = i8; i < I; i++) gt[i - i8] = g[i], ut[i - i8] = u[i];
            _mm256_storeu_ps(at, silu_times8(_mm256_loadu_ps(gt), _mm256_loadu_ps(ut)));
            for (int64_t i = i8; i < I; i++) am[i] = at[i - i8];
        }
    }
}

/* x [M, D] -> qkv [M, (H + 2 KV) d], rows q | k | v with q and k normed per head (q_norm, k_norm: Qwen3; NULL:
   none) and rotated; h [M, D] is scratch */
void row_layer_in(const float *x, const float *norm, float eps, const void *w_qkv, int half, const float *b_qkv,
                  const float *q_norm, const float *k_norm, float head_eps, const float *cos, const float *sin,
                  float *h, float *qkv, int64_t M, int64_t D, int64_t H, int64_t KV, int64_t d, int threads) {
    int64_t N = (H + 2 * KV) * d;
    rms_norm(x, norm, eps, h, M, D);
    product(h, w_qkv, half, b_qkv, qkv, M, D, N, threads);
    for (int64_t m = 0; m < M; m++) {
        float *q = qkv + m * N, *k = q + H * d;
        if (q_norm) {
            rms_norm(q, q_norm, head_eps, q, H, d);
            rms_norm(k, k_norm, head_eps, k, KV, d);
        }
        rotate(q, H, d, cos + m * d, sin + m * d);
        rotate(k, KV, d, cos + m * d, sin + m * d);
    }
}

/* x [M, D] and attn [M, A] (the attention's rows, A = H d) -> out [M, D]; h [M, D], gu [M, 2 I], a [M, I] scratch */
void row_layer_out(const float *x, const float *attn, const void *w_o, int half_o, const float *b_o, const float *norm,
                   float eps, const void *w_gu, int half_gu, const float *b_gu, const void *w_down, int half_down,
                   const float *b_down, float *h, float *gu, float *a, float *out, int64_t M, int64_t D, int64_t A,
                   int64_t I, int threads) {
    product(attn, w_o, half_o, b_o, out, M, A, D, threads);
    for (int64_t i = 0; i < M * D; i++) out[i] += x[i];
    rms_norm(out, norm, eps, h, M, D);
    product(h, w_gu, half_gu, b_gu, gu, M, D, 2 * I, threads);
    silu_times(gu, a, M, I);
    product(a, w_down, half_down, b_down, h, M, I, D, threads);
    for (int64_t i = 0; i < M * D; i++) out[i] += h[i];
}
