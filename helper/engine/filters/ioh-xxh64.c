/* ioh-xxh64.c - XXH64 of many equal-length regions at once
 *
 * XXH64 runs four 64-bit lanes over 32-byte stripes, two multiplies per 8 bytes, so one
 * hash is bound by the scalar multiplier. Eight regions go through four zmm registers, two
 * regions of four lanes each, with vpmullq: about twice one hash's speed on AVX-512DQ
 * (docs/benchmarks.md, "Engine A/Bs: XXH64"). The stripes' lanes are XXH64's own; the end
 * (the lanes' merge, the last bytes, the avalanche) is libxxhash's XXH64_digest on a state
 * holding them.
 */
#define XXH_STATIC_LINKING_ONLY
#include "ioh-xxh64.h"

#include <string.h>
#include <xxhash.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_VECTOR 1
#else
#define HAVE_VECTOR 0
#endif

#define GROUP 8
#define STRIPE 32
#define PRIME1 0x9E3779B185EBCA87ULL
#define PRIME2 0xC2B2AE3D27D4EB4FULL

#if HAVE_VECTOR
/* The hash of @len bytes whose stripes left the lanes @v; the bytes after the last whole
 * stripe are at @tail. */
static guint64
digest(const guint64 v[4], gsize len, const guint8 *tail)
{
    XXH64_state_t st;

    memset(&st, 0, sizeof(st));
    st.total_len = len;
    memcpy(st.v, v, sizeof(st.v));
    st.memsize = (XXH32_hash_t)(len % STRIPE);
    memcpy(st.mem64, tail, len % STRIPE);
    return XXH64_digest(&st);
}

/* Regions @p[0..7], @len >= STRIPE bytes each, copied to @dst[0..7] unless NULL. */
__attribute__((target("avx512f,avx512dq"))) static void
xxh64_group(const guint8 *const *p, guint8 *const *dst, gsize len, guint64 *out)
{
    const __m512i p1 = _mm512_set1_epi64((long long)PRIME1);
    const __m512i p2 = _mm512_set1_epi64((long long)PRIME2);
    const __m512i init = _mm512_set_epi64((long long)(0 - PRIME1), 0, (long long)PRIME2,
                                          (long long)(PRIME1 + PRIME2), (long long)(0 - PRIME1),
                                          0, (long long)PRIME2, (long long)(PRIME1 + PRIME2));
    __m512i acc[GROUP / 2];
    gsize body = len / STRIPE * STRIPE;

    for (guint k = 0; k < GROUP / 2; k++) {
        acc[k] = init;
    }
    for (gsize off = 0; off < body; off += STRIPE) {
        for (guint k = 0; k < GROUP / 2; k++) {
            __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(p[2 * k] + off));
            __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p[2 * k + 1] + off));
            __m512i in = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);

            if (dst) {
                _mm256_storeu_si256((__m256i *)(void *)(dst[2 * k] + off), a);
                _mm256_storeu_si256((__m256i *)(void *)(dst[2 * k + 1] + off), b);
            }

            acc[k] = _mm512_add_epi64(acc[k], _mm512_mullo_epi64(in, p2));
            acc[k] = _mm512_mullo_epi64(_mm512_rol_epi64(acc[k], 31), p1);
        }
    }
    for (guint k = 0; k < GROUP / 2; k++) {
        guint64 v[8];

        _mm512_storeu_si512(v, acc[k]);
        if (dst) {
            memcpy(dst[2 * k] + body, p[2 * k] + body, len - body);
            memcpy(dst[2 * k + 1] + body, p[2 * k + 1] + body, len - body);
        }
        out[2 * k] = digest(v, len, p[2 * k] + body);
        out[2 * k + 1] = digest(v + 4, len, p[2 * k + 1] + body);
    }
}

#endif

/* 2 when the eight-at-a-time path can run here, else 1. */
static gsize
vector_level(void)
{
#if HAVE_VECTOR
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") ? 2 : 1;
#else
    return 1;
#endif
}

void
ioh_xxh64_many(const guint8 *const *p, guint8 *const *dst, guint n, gsize len, guint64 *out)
{
    static gsize vector;    /* 1: no AVX-512, 2: AVX-512 */
    guint i = 0;

    if (g_once_init_enter(&vector)) {
        g_once_init_leave(&vector, vector_level());
    }
#if HAVE_VECTOR
    for (; vector == 2 && len >= STRIPE && i + GROUP <= n; i += GROUP) {
        xxh64_group(p + i, dst ? dst + i : NULL, len, out + i);
    }
#endif
    for (; i < n; i++) {
        out[i] = XXH64(p[i], len, 0);
        if (dst) {
            memcpy(dst[i], p[i], len);
        }
    }
}
