/* ioh-bech32.c - Bech32 encoding and decoding (ioh-bech32.h), as BIP 173 specifies it */
#include "ioh-bech32.h"

#include <string.h>

#include "ioh-secmem.h"

static const char charset[] = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

static guint32
polymod_step(guint32 chk, guint8 v)
{
    static const guint32 gen[5] = { 0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd,
                                    0x2a1462b3 };
    guint32 top = chk >> 25;

    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (int i = 0; i < 5; i++) {
        if ((top >> i) & 1) {
            chk ^= gen[i];
        }
    }
    return chk;
}

/* The checksum state over the expanded @hrp and @n 5-bit values. */
static guint32
polymod(const char *hrp, const guint8 *values, gsize n)
{
    guint32 chk = 1;
    gsize h = strlen(hrp);

    for (gsize i = 0; i < h; i++) {
        chk = polymod_step(chk, (guint8)(hrp[i] >> 5));
    }
    chk = polymod_step(chk, 0);
    for (gsize i = 0; i < h; i++) {
        chk = polymod_step(chk, (guint8)(hrp[i] & 31));
    }
    for (gsize i = 0; i < n; i++) {
        chk = polymod_step(chk, values[i]);
    }
    return chk;
}

/* Regroups @n @from-bit values into @to-bit ones (@pad: a last partial group padded; else
 * the leftover bits must be fewer than @from and zero). Returns the count, -1 if refused. */
static gssize
regroup(const guint8 *in, gsize n, int from, int to, gboolean pad, guint8 *out, gsize max)
{
    guint32 acc = 0;
    int bits = 0;
    gsize k = 0;

    for (gsize i = 0; i < n; i++) {
        acc = (acc << from) | in[i];
        bits += from;
        while (bits >= to) {
            bits -= to;
            if (k == max) {
                return -1;
            }
            out[k++] = (acc >> bits) & ((1u << to) - 1);
        }
    }
    if (pad && bits > 0) {
        if (k == max) {
            return -1;
        }
        out[k++] = (acc << (to - bits)) & ((1u << to) - 1);
    } else if (!pad && (bits >= from || ((acc << (to - bits)) & ((1u << to) - 1)))) {
        return -1;
    }
    return (gssize)k;
}

/* The 5-bit values of @s's data part (after the last '1'), lower-cased. */
static gboolean
data_values(const char *s, gsize sep, gsize n, guint8 *values)
{
    for (gsize i = sep + 1; i < n; i++) {
        const char *c = strchr(charset, g_ascii_tolower(s[i]));

        if (!c || !s[i]) {
            return FALSE;
        }
        values[i - sep - 1] = (guint8)(c - charset);
    }
    return TRUE;
}

/* One case only, printable US-ASCII only. */
static gboolean
one_case(const char *s, gsize n)
{
    gboolean lower = FALSE, upper = FALSE;

    for (gsize i = 0; i < n; i++) {
        if (s[i] < 33 || s[i] > 126) {
            return FALSE;
        }
        lower |= g_ascii_islower(s[i]);
        upper |= g_ascii_isupper(s[i]);
    }
    return !(lower && upper);
}

/* ioh_bech32_decode() with the 5-bit values in @values (256 of them). */
static gboolean
decode_with(const char *s, char *hrp, gsize hrp_size, guint8 *data, gsize data_size,
            gsize *ret_len, guint8 *values)
{
    gsize n = strlen(s);
    const char *one = strrchr(s, '1');
    gsize sep = one ? (gsize)(one - s) : 0;
    gssize len;

    if (!one || sep == 0 || sep >= hrp_size || n - sep - 1 < 6 || n - sep - 1 > 256 ||
        !one_case(s, n) || !data_values(s, sep, n, values)) {
        return FALSE;
    }
    for (gsize i = 0; i < sep; i++) {
        hrp[i] = g_ascii_tolower(s[i]);
    }
    hrp[sep] = '\0';
    if (polymod(hrp, values, n - sep - 1) != 1) {
        return FALSE;
    }
    len = regroup(values, n - sep - 1 - 6, 5, 8, FALSE, data, data_size);
    if (len < 0) {
        return FALSE;
    }
    *ret_len = (gsize)len;
    return TRUE;
}

gboolean
ioh_bech32_decode(const char *s, char *hrp, gsize hrp_size, guint8 *data, gsize data_size,
                  gsize *ret_len)
{
    guint8 values[256];
    gboolean ok = decode_with(s, hrp, hrp_size, data, data_size, ret_len, values);

    /* they are an identity's secret scalar, 5 bits at a time: no copy left on the stack */
    explicit_bzero(values, sizeof(values));
    return ok;
}

char *
ioh_bech32_encode(const char *hrp, const guint8 *data, gsize len, gboolean upper)
{
    guint8 values[256 + 6];
    gssize n = regroup(data, len, 8, 5, TRUE, values, sizeof(values) - 6);
    GString *s;
    guint32 chk;

    g_return_val_if_fail(n >= 0, NULL);
    memset(values + n, 0, 6);
    chk = polymod(hrp, values, (gsize)n + 6) ^ 1;
    for (int i = 0; i < 6; i++) {
        values[n + i] = (chk >> (5 * (5 - i))) & 31;
    }
    s = g_string_new(hrp);
    g_string_append_c(s, '1');
    for (gssize i = 0; i < n + 6; i++) {
        g_string_append_c(s, charset[values[i]]);
    }
    if (upper) {
        for (gsize i = 0; i < s->len; i++) {
            s->str[i] = g_ascii_toupper(s->str[i]);
        }
    }
    return g_string_free(s, FALSE);
}
