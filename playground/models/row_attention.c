/* Causal attention of a pass's query rows, each computed alone in one fixed order (float32, AVX2 + FMA): a row's
   output is bitwise the same in a pass of one token and of many, as row_products' products are, so a verify pass
   gives the target alone's logits. One call attends every query row and head of a layer (a row at a time in
   Python cost 7 tensor operations a row and layer).

   For query row i and head h (key/value head h / groups), over its first seen[i] keys:
       s_j = (q . k_j) * scale                 (the dot product summed as row_products sums: 8 lanes, a fixed tree)
       e_j = exp(s_j - max_j s_j)              (exp8 below: eight keys at a time)
       w_j = e_j / sum_j e_j                   (the sum in eight lanes in key order, a fixed tree, then the last n % 8)
       out = sum_j w_j v_j                     (out's d lanes each accumulated in key order)
   Layouts (strides in floats): q [H, Q, d] (strides q_head, q_row, 1), k and v [KV, L, d] (strides kv_head, kv_row,
   1), out [Q, H, d] contiguous; scratch: at least 3 * max(seen) floats. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "row_simd.h"

/* scores[h][j] = (q_h . k_j) * scale for `heads` (1 to 3) query heads q_h (stride q_head) and keys j < n: each dot
   product 8 lanes over d by fused multiply-adds in order, the lanes added in a fixed tree, then the last d % 8 one by
   one. Four keys and up to three heads at a time (independent chains, each key loaded once for its heads: speed
   alone; a score's arithmetic does not depend on its neighbours). */
static void scores_of(const float *q, int64_t q_head, int heads, const float *k, int64_t kv_row, int64_t n, int64_t d,
                      float scale, float *scores, int64_t scores_head) {
    int64_t d8 = d - d % 8;
    for (int64_t j = 0; j < n; j += 4) {
        int keys = n - j < 4 ? (int)(n - j) : 4;
        __m256 acc[3][4];
        for (int h = 0; h < heads; h++)
            for (int r = 0; r < keys; r++) acc[h][r] = _mm256_setzero_ps();
        for (int64_t i = 0; i < d8; i += 8) {
            __m256 qv[3];
            for (int h = 0; h < heads; h++) qv[h] = _mm256_loadu_ps(q + h * q_head + i);
            for (int r = 0; r < keys; r++) {
                __m256 kv = _mm256_loadu_ps(k + (j + r) * kv_row + i);
                for (int h = 0; h < heads; h++) acc[h][r] = _mm256_fmadd_ps(qv[h], kv, acc[h][r]);
            }
        }
        for (int h = 0; h < heads; h++)
            for (int r = 0; r < keys; r++) {
                float s = lanes_sum(acc[h][r]);
                for (int64_t i = d8; i < d; i++) s = fmaf(q[h * q_head + i], k[(j + r) * kv_row + i], s);
                scores[h * scores_head + j + r] = s * scale;
            }
    }
}

/* w[j] = e^(w[j] - max w) / sum_j e^(w[j] - max w), j < n, in place: eight at a time (the last n % 8 padded into a
   block of eight), the sum in eight lanes in key order, added in a fixed tree, then the last n % 8 one by one */
static void softmax(float *w, int64_t n) {
    int64_t n8 = n - n % 8;
    __m256 top8 = _mm256_set1_ps(-INFINITY);
    for (int64_t j = 0; j < n8; j += 8) top8 = _mm256_max_ps(top8, _mm256_loadu_ps(w + j));
    float top = -INFINITY, lanes[8], tail[8];
    _mm256_storeu_ps(lanes, top8);
    for (int i = 0; i < 8; i++) top = lanes[i] > top ? lanes[i] : top;
    for (int64_t j = n8; j < n; j++) top = w[j] > top ? w[j] : top;
    __m256 sum8 = _mm256_setzero_ps(), top_v = _mm256_set1_ps(top);
    for (int64_t j = 0; j < n8; j += 8) {
        __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(w + j), top_v));
        _mm256_storeu_ps(w + j, e);
        sum8 = _mm256_add_ps(sum8, e);
    }
    for (int i = 0; i < 8; i++) tail[i] = n8 + i < n ? w[n8 + i] - top : -87.0f;
    _mm256_storeu_ps(tail, exp8(_mm256_loadu_ps(tail)));
    float total = lanes_sum(sum8);
    for (int64_t j = n8; j < n; j++) total += (w[j] = tail[j - n8]);
    __m256 total_v = _mm256_set1_ps(total);
    for (int64_t j = 0; j < n8; j += 8) _mm256_storeu_ps(w + j, _mm256_div_ps(_mm256_loadu_ps(w + j), total_v));
    for (int64_t j = n8; j < n; j++) w[j] /= total;
}

/* out[0:d] = sum_j w[j] * v[j * kv_row + 0:d], j = 0 .. n-1 in order (each lane of out its own running sum by fused
   multiply-adds); 64 lanes of out at a time in registers */
static void weighted_values(const float *w, const float *v, int64_t kv_row, int64_t n, int64_t d, float *out) {
    int64_t d8 = d - d % 8;
    for (int64_t base = 0; base < d8; base += 64) {
        int chunks = (int)((d8 - base) / 8 < 8 ? (d8 - base) / 8 : 8);
        __m256 acc[8];
        for (int c = 0; c < chunks; c++) acc[c] = _mm256_setzero_ps();
        for (int64_t j = 0; j < n; j++) {
            __m256 wj = _mm256_set1_ps(w[j]);
            for (int c = 0; c < chunks; c++)
                acc[c] = _mm256_fmadd_ps(wj, _mm256_loadu_ps(v + j * kv_row + base + 8 * c), acc[c]);
        }
        for (int c = 0; c < chunks; c++) _mm256_storeu_ps(out + base + 8 * c, acc[c]);
    }
    for (int64_t i = d8; i < d; i++) {
        float acc = 0.0f;
        for (int64_t j = 0; j < n; j++) acc = fmaf(w[j], v[j * kv_row + i], acc);
        out[i] = acc;
    }
}

void row_attention(const float *q, const float *k, const float *v, float *out, float *scratch, const int64_t *seen,
                   int64_t H, int64_t groups, int64_t Q, int64_t d, int64_t q_head, int64_t q_row, int64_t kv_head,
                   int64_t kv_row, float scale) {
    for (int64_t i = 0; i < Q; i++) {
        int64_t n = seen[i];
        for (int64_t h0 = 0; h0 < H;) {  /* up to three query heads of one key/value head at a time */
            int64_t rest_of_group = groups - h0 % groups;
            int heads = (int)(rest_of_group < 3 ? rest_of_group : 3);
            const float *kh = k + (h0 / groups) * kv_head, *vh = v + (h0 / groups) * kv_head;
            scores_of(q + h0 * q_head + i * q_row, q_head, heads, kh, kv_row, n, d, scale, scratch, n);
            for (int h = 0; h < heads; h++) {
                softmax(scratch + h * n, n);
                weighted_values(scratch + h * n, vh, kv_row, n, d, out + (i * H + h0 + h) * d);
            }
            h0 += heads;
        }
    }
}
