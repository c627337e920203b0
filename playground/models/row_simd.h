/* What row_products.c, row_attention.c and row_layer.c share (AVX2 + FMA, float32): a fixed-order sum of eight
   lanes, and e^x for eight x <= 0. */
#ifndef ROW_SIMD_H
#define ROW_SIMD_H
#include <immintrin.h>

static inline float lanes_sum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); /* (0+4, 1+5, 2+6, 3+7) */
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));                                       /* (0+4+2+6, 1+5+3+7, ..) */
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/* e^x for eight x <= 0 (Cephes' expf: x = n ln 2 + r, |r| <= ln 2 / 2, e^r by a polynomial of degree 7, times 2^n;
   x below -87 taken as -87, e^x then under 2^-125: a weight of nothing beside the largest, which is 1) */
static inline __m256 exp8(__m256 x) {
    x = _mm256_max_ps(_mm256_set1_ps(-87.0f), x);  /* (this order keeps a NaN: max_ps returns its second on one) */
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i scale = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
}

#endif
