/* y[m, n] = sum_k x[m, k] * w[n, k], float32, AVX2 + FMA (the caller adds a bias).

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

static inline float lanes_sum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); /* (0+4, 1+5, 2+6, 3+7) */
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));                                       /* (0+4+2+6, 1+5+3+7, ..) */
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/* x [rows, K] (row stride K) times w [cols, K] -> y [rows, cols] (row stride N); rows * cols <= 12 */
static inline __attribute__((always_inline)) void block(int rows, int cols, const float *x, const float *w, float *y,
                                                         int64_t K, int64_t N) {
    __m256 acc[4][8];
    int64_t k8 = K - K % 8;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) acc[r][c] = _mm256_setzero_ps();
    for (int64_t k = 0; k < k8; k += 8) {
        __m256 wv[8];
        for (int c = 0; c < cols; c++) wv[c] = _mm256_loadu_ps(w + c * K + k);
        if (rows > 1)  /* the next block's weights asked for ahead (8 rows: 0.6x the time with cold weights; 1 row: slower) */
            for (int c = 0; c < cols; c++)
                _mm_prefetch((const char *)((uintptr_t)w + sizeof(float) * ((cols + c) * K + k)), _MM_HINT_T0);
        for (int r = 0; r < rows; r++) {
            __m256 xv = _mm256_loadu_ps(x + r * K + k);
            for (int c = 0; c < cols; c++) acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
        }
    }
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float s = lanes_sum(acc[r][c]);
            for (int64_t k = k8; k < K; k++) s = fmaf(x[r * K + k], w[c * K + k], s);
            y[r * N + c] = s;
        }
}

/* Every row of one block of `cols` columns (w, y at the block's first column): rows taken `rows` at a time. */
static inline __attribute__((always_inline)) void columns(int rows, int cols, const float *x, const float *w,
                                                           float *y, int64_t M, int64_t K, int64_t N) {
    int64_t m = 0;
    for (; m + rows <= M; m += rows) block(rows, cols, x + m * K, w, y + m * N, K, N);
    switch (M - m) {  /* the rows left, fewer than `rows` */
    case 3: block(3, cols, x + m * K, w, y + m * N, K, N); break;
    case 2: block(2, cols, x + m * K, w, y + m * N, K, N); break;
    case 1: block(1, cols, x + m * K, w, y + m * N, K, N); break;
    }
}

/* The blocks: one row, eight columns (a one-token pass streams the weights); two rows, four; three, four; four
   rows or more, four rows by three columns (measured fastest of these on a 2-core AMD EPYC, for SmolLM2's shapes;
   the last block's prefetches name addresses past the weights, as integers: a prefetch never faults) */
#define PLAN(rows, cols)                                                                                       \
    _Pragma("omp parallel for schedule(static) num_threads(threads)")                                          \
    for (int64_t b = 0; b < N / cols; b++) columns(rows, cols, x, w + b * cols * K, y + b * cols, M, K, N);  \
    for (int64_t n = N - N % cols; n < N; n++) columns(rows, 1, x, w + n * K, y + n, M, K, N);

void row_products(const float *x, const float *w, float *y, int64_t M, int64_t K, int64_t N, int threads) {
    if (M == 1) { PLAN(1, 8) }
    else if (M == 2) { PLAN(2, 4) }
    else if (M == 3) { PLAN(3, 4) }
    else { PLAN(4, 3) }
}
