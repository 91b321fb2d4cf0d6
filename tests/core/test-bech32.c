/* test-bech32.c - Bech32 (helper/core/ioh-bech32): an identity's text decoded leaves no
 * copy of the secret on the stack. (Its encoding is checked against age-keygen's output
 * in tests/engine/test-age.c.) */
#include <string.h>

#include "ioh-bech32.h"
#include "ioh-test.h"

/* age-keygen's format, a throwaway identity for this test only */
static const char identity[] =
    "AGE-SECRET-KEY-1XUJG6XMDK75926S54VMKLWU5FK06ZMMVRPVQ4T4ENV49SZWSSQDSLM324C";

#define PROBE (16 * 1024)
static guint8 below[PROBE];

static __attribute__((noinline)) gboolean
decode(guint8 data[33], gsize *len)
{
    char hrp[32];

    return ioh_bech32_decode(identity, hrp, sizeof(hrp), data, 33, len);
}

/* The bytes just below this frame (where decode()'s frames were) into below[], with no
 * call that would put a frame of its own over them. */
static __attribute__((noinline)) void
decode_and_probe(guint8 data[33], gsize *len)
{
    const volatile guint8 *sp;

    g_assert_true(decode(data, len));
    sp = (const volatile guint8 *)__builtin_frame_address(0);
    for (gsize i = 0; i < PROBE; i++) {
        below[i] = sp[(gssize)i - PROBE];
    }
}

/* The 5-bit groups of the key's data part: what the decoder holds before regrouping. */
static void
groups_of(const char *text, guint8 *ret, gsize n)
{
    static const char charset[] = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
    const char *data = strrchr(text, '1') + 1;

    for (gsize i = 0; i < n; i++) {
        ret[i] = (guint8)(strchr(charset, g_ascii_tolower(data[i])) - charset);
    }
}

static void
test_stack_wiped(void)
{
    guint8 data[33], groups[32];
    gsize len = 0;

#if defined(__SANITIZE_ADDRESS__)
    g_test_skip("ASan may move stack frames to its fake stack: nothing to probe");
    return;
#endif
    decode_and_probe(data, &len);
    g_assert_cmpuint(len, ==, 32);
    groups_of(identity, groups, sizeof(groups));
    g_assert_null(memmem(below, sizeof(below), data, 16));
    g_assert_null(memmem(below, sizeof(below), groups, sizeof(groups)));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bech32/decode/stack-wiped", test_stack_wiped);
    return g_test_run();
}
