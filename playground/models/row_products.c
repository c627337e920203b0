/* y[m, n] = sum_k x[m, k] * w[n, k], float32, AVX2 + FMA (the caller adds a bias); the weights float32
   (row_products) or bfloat16 (row_products_bf16: each widened to float32 exactly, by a shift, before its product,
   so a layer whose float32 weights are all bfloat16 values gives bitwise the same outputs from half the bytes).

   Every output is summed in one fixed order, whatever the number of rows M and of threads: eight lanes
   over k (lane j sums k = j, j + 8, ... of the first K - K % 8 products, each by a fused multiply-add), the
   lanes added in a fixed tree, then the last K % 8 products one by one. So a row's outputs are bitwise the
   same in a pass of one token and of many, which speculation's verify pass needs to give the target alone's
   greedy tokens. How outputs are grouped (a block of `rows` x `cols` accumulators, kept in registers, each
   weight and input vector loaded once per step of k for the whole block) is for speed alone: it follows M
   (plan below), and no output's arithmetic depends on its neighbours. Each thread owns whole columns. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "row_simd.h"

/* Weights i to i + 7 (one weight: i) as float32, from float32 or from bfloat16 (half: its 16 bits are a float32's
   top 16). `half` is a constant at every call (all inlined), so each kernel is compiled for its own weights. */
static inline __attribute__((always_inline)) __m256 weights8(const void *w, int64_t i, int half) {
    if (!half) return _mm256_loadu_ps((const float *)w + i);
    __m128i bits = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
}

static inline __attribute__((always_inline)) float weight1(const void *w, int64_t i, int half) {
    if (!half) return ((const float *)w)[i];
    union { uint32_t bits; float value; } v = { (uint32_t)((const uint16_t *)w)[i] << 16 };
    return v.value;
}

/* Where weight i of w starts, in bytes */
#define AT(w, i, half) ((const char *)(w) + (half ? 2 : 4) * (i))

/* x [rows, K] (row stride K) times w [cols, K] -> y [rows, cols] (row stride N); rows * cols <= 12 */
static inline __attribute__((always_inline)) void block(int rows, int cols, const float *x, const void *w, float *y,
                                                         int64_t K, int64_t N, int half) {
    __m256 acc[4][8];
    int64_t k8 = K - K % 8;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) acc[r][c] = _mm256_setzero_ps();
    for (int64_t k = 0; k < k8; k += 8) {
        __m256 wv[8];
        for (int c = 0; c < cols; c++) wv[c] = weights8(w, c * K + k, half);
        if (rows > 1 || half)  /* the next block's weights asked for ahead (8 rows: 0.6x the time with cold weights;
                                  1 row: slower from float32, 0.56-0.61x the time from bfloat16: SmolLM2's shapes) */
            for (int c = 0; c < cols; c++)
                _mm_prefetch((const char *)((uintptr_t)w + (half ? 2 : 4) * ((cols + c) * K + k)), _MM_HINT_T0);
        for (int r = 0; r < rows; r++) {
            __m256 xv = _mm256_loadu_ps(x + r * K + k);
            for (int c = 0; c < cols; c++) acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
        }
    }
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float s = lanes_sum(acc[r][c]);
            for (int64_t k = k8; k < K; k++) s = fmaf(x[r * K + k], weight1(w, c * K + k, half), s);
            y[r * N + c] = s;
        }
}

/* Every row of one block of `cols` columns (w, y at the block's first column): rows taken `rows` at a time. */
static inline __attribute__((always_inline)) void columns(int rows, int cols, const float *x, const void *w,
                                                           float *y, int64_t M, int64_t K, int64_t N, int half) {
    int64_t m = 0;
    for (; m + rows <= M; m += rows) block(rows, cols, x + m * K, w, y + m * N, K, N, half);
    switch (M - m) {  /* the rows left, fewer than `rows` */
    case 3: block(3, cols, x + m * K, w, y + m * N, K, N, half); break;
    case 2: block(2, cols, x + m * K, w, y + m * N, K, N, half); break;
    case 1: block(1, cols, x + m * K, w, y + m * N, K, N, half); break;
    }
}

/* The blocks: one row, eight columns (a one-token pass streams the weights); two rows, four; three, four (from
   bfloat16: three, 0.91x the time); four rows or more, four rows by three columns (measured fastest of these on a
   2-core AMD EPYC, for SmolLM2's shapes; the last block's prefetches name addresses past the weights, as integers:
   a prefetch never faults) */
#define PLAN(rows, cols, half)                                                                                   \
    _Pragma("omp parallel for schedule(static) num_threads(threads)")                                            \
    for (int64_t b = 0; b < N / cols; b++)                                                                       \
        columns(rows, cols, x, AT(w, b * cols * K, half), y + b * cols, M, K, N, half);                          \
    for (int64_t n = N - N % cols; n < N; n++) columns(rows, 1, x, AT(w, n * K, half), y + n, M, K, N, half);

void row_products(const float *x, const float *w, float *y, int64_t M, int64_t K, int64_t N, int threads) {
    if (M == 1) { PLAN(1, 8, 0) }
    else if (M == 2) { PLAN(2, 4, 0) }
    else if (M == 3) { PLAN(3, 4, 0) }
    else { PLAN(4, 3, 0) }
}

void row_products_bf16(const float *x, const uint16_t *w, float *y, int64_t M, int64_t K, int64_t N, int threads) {
    if (M == 1) { PLAN(1, 8, 1) }
    else if (M == 2) { PLAN(2, 4, 1) }
    else if (M == 3) { PLAN(3, 3, 1) }
    else { PLAN(4, 3, 1) }
}
