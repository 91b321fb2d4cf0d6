/* test-protocol.c - the helper protocol (helper/core/ioh-protocol, docs/protocol.md): the
 * exact lines, the round trip of every member, compatibility with the first format's
 * reader, hostile and malformed lines, the line reader's bounded memory, and writing
 * lines into real pipes that are full, closed or slow. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "core-util.h"
#include "ioh-error.h"
#include "ioh-protocol.h"

#define MiB (1024 * 1024)

static void
fill_progress(IohProtocolMsg *m)
{
    m->kind = IOH_PROTOCOL_PROGRESS;
    m->written = 3 * MiB;
    m->stored = 3 * MiB;
    m->synced = 2 * MiB;
    m->seconds = 1.5;
}

static void
fill_result(IohProtocolMsg *m)
{
    m->kind = IOH_PROTOCOL_RESULT;
    m->written = 2147483648u;
    m->stored = 734003200;
    m->synced = 734003200;
    m->seconds = 3.25;
    m->sync_seconds = 0.125;
    m->reads = 2125;
    m->writes = 700;
    m->direction = IOH_DIRECTION_SAVE;
    m->mode = IOH_CACHE_DIRECT;
    m->checksum_algorithm = g_strdup("xxh3");
    m->checksum = g_strdup("0123456789abcdef");
}

static void
fill_error(IohProtocolMsg *m)
{
    g_autoptr(GError) e = NULL;

    ioh_error_set_errno(&e, ENOSPC, "write", "/var/lib/vm1.save");
    m->written = 1048576;
    m->stored = 1048576;
    m->seconds = 0.5;
    ioh_protocol_msg_set_error(m, e);
}

/* ---- exact lines ---------------------------------------------------------------- */

static void
check_line(const IohProtocolMsg *m, const char *want)
{
    gsize len = 0;
    g_autofree char *line = ioh_protocol_encode(m, &len);

    g_assert_cmpstr(line, ==, want);
    g_assert_cmpuint(len, ==, strlen(want));
}

static void
test_encode_exact(void)
{
    g_auto(IohProtocolMsg) p = { 0 };
    g_auto(IohProtocolMsg) r = { 0 };
    g_auto(IohProtocolMsg) e = { 0 };

    fill_progress(&p);
    check_line(&p, "{\"v\":1,\"minor\":3,\"type\":\"progress\",\"written\":3145728,"
                   "\"stored\":3145728,\"synced\":2097152,\"seconds\":1.5,\"done\":false}\n");
    fill_result(&r);
    check_line(&r, "{\"v\":1,\"minor\":3,\"type\":\"result\",\"done\":true,"
                   "\"written\":2147483648,\"stored\":734003200,\"synced\":734003200,"
                   "\"seconds\":3.25,\"sync_seconds\":0.125,\"reads\":2125,\"writes\":700,"
                   "\"direction\":\"save\",\"mode\":\"direct\",\"checksum_algorithm\":\"xxh3\","
                   "\"checksum\":\"0123456789abcdef\"}\n");
    check_line(&(IohProtocolMsg){ .kind = IOH_PROTOCOL_READY },
               "{\"v\":1,\"minor\":3,\"type\":\"ready\"}\n");
    fill_error(&e);
    check_line(&e, "{\"v\":1,\"minor\":3,\"type\":\"error\",\"operation\":\"write\","
                   "\"path\":\"/var/lib/vm1.save\",\"errno\":28,\"errno_name\":\"ENOSPC\","
                   "\"message\":\"write /var/lib/vm1.save: No space left on device\","
                   "\"written\":1048576,\"stored\":1048576,\"synced\":0,\"seconds\":0.5}\n");
}

static void
test_encode_wrong_kind(void)
{
    g_auto(IohProtocolMsg) m = { 0 };

    g_test_expect_message("iohelper", G_LOG_LEVEL_CRITICAL, "*kind_name*");
    g_assert_null(ioh_protocol_encode(&m, NULL));
    g_test_assert_expected_messages();
    m.kind = IOH_PROTOCOL_UNKNOWN;
    g_test_expect_message("iohelper", G_LOG_LEVEL_CRITICAL, "*kind_name*");
    g_assert_null(ioh_protocol_encode(&m, NULL));
    g_test_assert_expected_messages();
}

/* ---- the first format's reader (libwrap/iohwrap.c at d11e86e) still reads progress -- */

static guint64
old_json_u64(const char *line, const char *key, gboolean *ret_found)
{
    const char *p = strstr(line, key);

    *ret_found = p != NULL;
    return p ? g_ascii_strtoull(p + strlen(key), NULL, 10) : 0;
}

static void
test_old_reader_compat(void)
{
    g_auto(IohProtocolMsg) p = { 0 };
    g_auto(IohProtocolMsg) r = { 0 };
    g_autofree char *pl = NULL;
    g_autofree char *rl = NULL;
    gboolean has_w, has_s;

    fill_progress(&p);
    pl = ioh_protocol_encode(&p, NULL);
    g_assert_cmpuint(old_json_u64(pl, "\"written\":", &has_w), ==, 3 * MiB);
    g_assert_cmpuint(old_json_u64(pl, "\"synced\":", &has_s), ==, 2 * MiB);
    g_assert_true(has_w && has_s);
    g_assert_null(strstr(pl, "\"done\":true"));
    fill_result(&r);
    rl = ioh_protocol_encode(&r, NULL);
    g_assert_cmpuint(old_json_u64(rl, "\"written\":", &has_w), ==, 2147483648u);
    g_assert_nonnull(strstr(rl, "\"done\":true"));
}

/* ---- round trips ---------------------------------------------------------------- */

static void
round_trip(const IohProtocolMsg *m, IohProtocolMsg *ret)
{
    g_autoptr(GError) e = NULL;
    gsize len = 0;
    g_autofree char *line = ioh_protocol_encode(m, &len);

    g_assert_nonnull(line);
    g_assert_cmpuint(len, <, IOH_PROTOCOL_MAX_LINE);
    g_assert_null(memchr(line, '\n', len - 1));    /* one line, whatever the strings hold */
    g_assert_true(ioh_protocol_decode(line, len, ret, &e));
    g_assert_no_error(e);
    g_assert_cmpint(ret->kind, ==, m->kind);
    g_assert_cmpuint(ret->minor, ==, IOH_PROTOCOL_MINOR);
    g_assert_cmpuint(ret->written, ==, m->written);
    g_assert_cmpuint(ret->stored, ==, m->stored);
    g_assert_cmpuint(ret->synced, ==, m->synced);
    g_assert_cmpfloat(ret->seconds, ==, m->seconds);
}

static void
test_round_trip_progress(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_auto(IohProtocolMsg) back = { 0 };

    fill_progress(&m);
    round_trip(&m, &back);
    m.written = m.stored = m.synced = 0;
    m.seconds = 0;
    round_trip(&m, &back);
    m.written = m.stored = m.synced = G_MAXINT64;
    m.seconds = 1e9 + 0.001;
    round_trip(&m, &back);
    m.seconds = 1.0 / 3.0;    /* doubles survive exactly */
    round_trip(&m, &back);
}

static void
test_round_trip_result(void)
{
    g_auto(IohProtocolMsg) m = { 0 };

    fill_result(&m);
    for (int d = IOH_DIRECTION_COPY; d <= IOH_DIRECTION_RESTORE; d++) {
        for (int mode = 0; mode < IOH_CACHE_MODE_COUNT; mode++) {
            g_auto(IohProtocolMsg) back = { 0 };

            m.direction = d;
            m.mode = mode;
            round_trip(&m, &back);
            g_assert_cmpint(back.direction, ==, d);
            g_assert_cmpint(back.mode, ==, mode);
            g_assert_cmpuint(back.reads, ==, m.reads);
            g_assert_cmpuint(back.writes, ==, m.writes);
            g_assert_cmpfloat(back.sync_seconds, ==, m.sync_seconds);
            g_assert_cmpstr(back.checksum_algorithm, ==, "xxh3");
            g_assert_cmpstr(back.checksum, ==, "0123456789abcdef");
            g_assert_true(ioh_protocol_msg_is_final(&back));
        }
    }
}

static void
test_round_trip_no_checksum(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_auto(IohProtocolMsg) back = { 0 };
    g_autofree char *line = NULL;

    fill_result(&m);
    g_clear_pointer(&m.checksum, g_free);    /* half a checksum is not sent */
    line = ioh_protocol_encode(&m, NULL);
    g_assert_null(strstr(line, "checksum"));
    round_trip(&m, &back);
    g_assert_null(back.checksum_algorithm);
    g_assert_null(back.checksum);
}

/* Minor 1: a compressed save's members, in the exact line and back (a negative level too),
 * and a line without them (minor 0) decodes as uncompressed. */
static void
test_round_trip_compression(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_autofree char *line = NULL;
    static const char minor0[] = "{\"v\":1,\"minor\":0,\"type\":\"result\",\"done\":true,"
        "\"written\":10,\"stored\":10,\"synced\":10,\"seconds\":1,\"sync_seconds\":0,"
        "\"reads\":1,\"writes\":1,\"direction\":\"save\",\"mode\":\"direct\"}";

    fill_result(&m);
    m.compression = g_strdup("zstd");
    m.has_level = TRUE;
    m.compression_level = 3;
    m.ratio = 0.5;
    m.compress_cpu_seconds = 1.25;
    m.cpu_seconds = 1.5;
    line = ioh_protocol_encode(&m, NULL);
    g_assert_nonnull(strstr(line, ",\"compression\":\"zstd\",\"compression_level\":3,"
                                  "\"ratio\":0.5,\"compress_cpu_seconds\":1.25,"
                                  "\"cpu_seconds\":1.5}\n"));
    for (int level = -7; level <= 19; level += 13) {
        g_auto(IohProtocolMsg) back = { 0 };

        m.compression_level = level;
        round_trip(&m, &back);
        g_assert_cmpstr(back.compression, ==, "zstd");
        g_assert_true(back.has_level);
        g_assert_cmpint(back.compression_level, ==, level);
        g_assert_cmpfloat(back.ratio, ==, 0.5);
        g_assert_cmpfloat(back.compress_cpu_seconds, ==, 1.25);
        g_assert_cmpfloat(back.cpu_seconds, ==, 1.5);
    }
    {
        /* a restore: no level (the helper cannot know it), and none read back */
        g_auto(IohProtocolMsg) back = { 0 };
        g_autofree char *restore = NULL;

        m.has_level = FALSE;
        restore = ioh_protocol_encode(&m, NULL);
        g_assert_null(strstr(restore, "compression_level"));
        round_trip(&m, &back);
        g_assert_cmpstr(back.compression, ==, "zstd");
        g_assert_false(back.has_level);
    }
    {
        g_auto(IohProtocolMsg) back = { 0 };
        g_autoptr(GError) e = NULL;

        g_assert_true(ioh_protocol_decode(minor0, strlen(minor0), &back, &e));
        g_assert_no_error(e);
        g_assert_null(back.compression);
        g_assert_cmpuint(back.stored, ==, back.written);
    }
}

/* Minor 3: an encrypted image's members (what, how many recipients; never a key), in the
 * exact line and back; a line without them decodes as not encrypted, an empty name is
 * refused. */
static void
test_round_trip_encryption(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_auto(IohProtocolMsg) back = { 0 };
    g_auto(IohProtocolMsg) none = { 0 };
    g_autofree char *line = NULL;
    g_autofree char *empty = NULL;
    g_autoptr(GError) e = NULL;

    fill_result(&m);
    m.encryption = g_strdup("age");
    m.encryption_recipients = 2;
    line = ioh_protocol_encode(&m, NULL);
    g_assert_nonnull(strstr(line, ",\"encryption\":\"age\",\"encryption_recipients\":2}\n"));
    round_trip(&m, &back);
    g_assert_cmpstr(back.encryption, ==, "age");
    g_assert_cmpuint(back.encryption_recipients, ==, 2);
    g_clear_pointer(&m.encryption, g_free);
    round_trip(&m, &none);
    g_assert_null(none.encryption);
    empty = g_strdup(line);
    memcpy(strstr(empty, "\"age\""), "\"\",   ", 6);
    g_assert_false(ioh_protocol_decode(empty, strlen(empty), &none, &e));
    g_assert_nonnull(strstr(e->message, "\"encryption\" is empty"));
}

/* Strings with everything a path can hold come back byte for byte (valid UTF-8) or with
 * U+FFFD for bytes that are not UTF-8. */
static void
test_round_trip_error_strings(void)
{
    static const char *const paths[] = {
        "/plain", "/with \"quotes\" and \\backslash\\", "/new\nline\r\tand\x1b[1mescape\x7f",
        "/\xc3\xa9t\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80", "nbd+unix:///x?socket=/s",
        "/slash/\x2f/u\\u0041", "",
    };

    for (guint i = 0; i < G_N_ELEMENTS(paths); i++) {
        g_auto(IohProtocolMsg) m = { 0 };
        g_auto(IohProtocolMsg) back = { 0 };
        g_autoptr(GError) e = NULL;
        g_autoptr(GError) rebuilt = NULL;

        ioh_error_set_errno(&e, EIO, "read", paths[i]);
        ioh_protocol_msg_set_error(&m, e);
        round_trip(&m, &back);
        g_assert_cmpstr(back.path, ==, paths[i]);
        g_assert_cmpstr(back.operation, ==, "read");
        g_assert_cmpint(back.errsv, ==, EIO);
        g_assert_cmpstr(back.errno_name, ==, "EIO");
        g_assert_cmpstr(back.message, ==, e->message);
        rebuilt = ioh_protocol_msg_to_error(&back);
        g_assert_error(rebuilt, IOH_ERROR, EIO);
        g_assert_cmpstr(rebuilt->message, ==, e->message);
        g_assert_cmpstr(ioh_error_get_path(rebuilt), ==, paths[i]);
        g_assert_cmpstr(ioh_error_get_operation(rebuilt), ==, "read");
    }
}

static void
test_encode_invalid_utf8(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_auto(IohProtocolMsg) back = { 0 };

    fill_error(&m);
    g_free(m.path);
    m.path = g_strdup("/bad\xff\xfe-utf8\xc3");
    round_trip(&m, &back);
    g_assert_cmpstr(back.path, ==, "/bad\xef\xbf\xbd\xef\xbf\xbd-utf8\xef\xbf\xbd");
}

static void
test_encode_clips_long_strings(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_auto(IohProtocolMsg) back = { 0 };
    GString *acc = g_string_new(NULL);
    GString *ctl = g_string_new(NULL);

    for (int i = 0; i < 3000; i++) {
        g_string_append(acc, "\xc3\xa9");    /* 6000 bytes of 2-byte characters */
        g_string_append(ctl, "\x01\n");      /* each is 6 bytes once escaped in JSON */
    }
    fill_error(&m);
    g_free(m.path);
    g_free(m.message);
    m.path = g_string_free(acc, FALSE);
    m.message = g_string_free(ctl, FALSE);
    round_trip(&m, &back);    /* and the worst-case line stays under the limit */
    g_assert_cmpuint(strlen(back.path), ==, IOH_PROTOCOL_MAX_STRING);
    g_assert_true(g_utf8_validate(back.path, -1, NULL));
    g_assert_true(g_str_has_prefix(m.path, back.path));
    g_assert_cmpuint(strlen(back.message), ==, IOH_PROTOCOL_MAX_STRING);
    g_assert_true(g_str_has_prefix(m.message, back.message));
}

static void
test_encode_non_finite_seconds(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_auto(IohProtocolMsg) back = { 0 };
    g_autofree char *line = NULL;

    fill_progress(&m);
    m.seconds = NAN;
    line = ioh_protocol_encode(&m, NULL);
    g_assert_true(ioh_protocol_decode(line, strlen(line), &back, NULL));
    g_assert_cmpfloat(back.seconds, ==, 0.0);
    m.seconds = -INFINITY;
    g_free(line);
    line = ioh_protocol_encode(&m, NULL);
    g_assert_true(ioh_protocol_decode(line, strlen(line), &back, NULL));
    g_assert_cmpfloat(back.seconds, ==, 0.0);
}

/* ---- errors as fields ----------------------------------------------------------- */

static void
test_error_other_domain(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_auto(IohProtocolMsg) back = { 0 };
    g_autoptr(GError) e = g_error_new_literal(G_FILE_ERROR, G_FILE_ERROR_FAILED, "odd");
    g_autoptr(GError) rebuilt = NULL;
    g_autofree char *line = NULL;

    ioh_protocol_msg_set_error(&m, e);
    line = ioh_protocol_encode(&m, NULL);
    g_assert_null(strstr(line, "errno"));
    g_assert_null(strstr(line, "operation"));
    round_trip(&m, &back);
    g_assert_cmpint(back.errsv, ==, 0);
    g_assert_null(back.errno_name);
    g_assert_null(back.path);
    rebuilt = ioh_protocol_msg_to_error(&back);
    g_assert_error(rebuilt, IOH_ERROR, EIO);    /* no errno: EIO */
    g_assert_cmpstr(rebuilt->message, ==, "odd");
}

static void
test_error_cancelled(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_auto(IohProtocolMsg) back = { 0 };
    g_autoptr(GError) e = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "stop");
    g_autoptr(GError) rebuilt = NULL;

    ioh_protocol_msg_set_error(&m, e);
    round_trip(&m, &back);
    g_assert_cmpstr(back.errno_name, ==, "ECANCELED");
    rebuilt = ioh_protocol_msg_to_error(&back);
    g_assert_true(ioh_error_is_cancelled(rebuilt));
}

static void
test_msg_helpers(void)
{
    IohProtocolMsg m = { 0 };
    IohDirection d;
    g_autoptr(GError) e = NULL;

    fill_result(&m);
    ioh_protocol_msg_clear(&m);
    g_assert_cmpint(m.kind, ==, IOH_PROTOCOL_NONE);
    g_assert_null(m.checksum);
    g_assert_cmpuint(m.written, ==, 0);
    ioh_protocol_msg_clear(NULL);
    g_assert_false(ioh_protocol_msg_is_final(&m));
    g_assert_false(ioh_protocol_msg_is_final(NULL));
    m.kind = IOH_PROTOCOL_PROGRESS;
    g_assert_false(ioh_protocol_msg_is_final(&m));
    m.kind = IOH_PROTOCOL_ERROR;
    g_assert_true(ioh_protocol_msg_is_final(&m));
    g_assert_cmpstr(ioh_direction_to_string(IOH_DIRECTION_RESTORE), ==, "restore");
    g_assert_null(ioh_direction_to_string((IohDirection)7));
    g_assert_true(ioh_direction_from_string("copy", &d, NULL));
    g_assert_cmpint(d, ==, IOH_DIRECTION_COPY);
    g_assert_false(ioh_direction_from_string("Save", &d, &e));
    g_assert_error(e, IOH_ERROR, EINVAL);
}

/* ---- decoding hostile and malformed lines --------------------------------------- */

#define P_BODY "\"written\":1,\"stored\":1,\"synced\":0,\"seconds\":0.5"
#define P "{\"v\":1,\"type\":\"progress\"," P_BODY
#define R "{\"v\":1,\"type\":\"result\",\"written\":1,\"stored\":1,\"synced\":1,\"seconds\":1," \
          "\"sync_seconds\":0,\"reads\":1,\"writes\":1,\"direction\":\"save\""
#define E "{\"v\":1,\"type\":\"error\""

static const struct {
    const char *line;
    gsize len;    /* 0: strlen */
    int code;
} bad_lines[] = {
    { "", 0, EPROTO },
    { "   ", 0, EPROTO },
    { "{", 0, EPROTO },
    { P, 0, EPROTO },                                   /* truncated: no closing brace */
    { "{\"v\":1,\"type\":\"progr", 0, EPROTO },
    { "[1]", 0, EPROTO },
    { "1", 0, EPROTO },
    { "\"string\"", 0, EPROTO },
    { "null", 0, EPROTO },
    { "true", 0, EPROTO },
    { "{\"type\":\"progress\"," P_BODY "}", 0, EPROTO },  /* no version */
    { "{\"v\":\"1\",\"type\":\"progress\"," P_BODY "}", 0, EPROTO },
    { "{\"v\":1.0,\"type\":\"progress\"," P_BODY "}", 0, EPROTO },
    { "{\"v\":null,\"type\":\"progress\"," P_BODY "}", 0, EPROTO },
    { "{\"v\":1," P_BODY "}", 0, EPROTO },                /* no type */
    { "{\"v\":1,\"type\":5," P_BODY "}", 0, EPROTO },
    { "{\"v\":1,\"type\":\"nonsense\"," P_BODY "}", 0, EPROTO },
    { "{\"v\":1,\"minor\":0,\"type\":\"nonsense\"}", 0, EPROTO },
    { "{\"v\":1,\"type\":\"progress\",\"stored\":1,\"synced\":0,\"seconds\":0.5}", 0, EPROTO },
    { "{\"v\":1,\"type\":\"progress\",\"written\":1,\"synced\":0,\"seconds\":0.5}", 0, EPROTO },
    { "{\"v\":1,\"type\":\"progress\",\"written\":1,\"stored\":1,\"seconds\":0.5}", 0, EPROTO },
    { "{\"v\":1,\"type\":\"progress\",\"written\":1,\"stored\":1,\"synced\":0}", 0, EPROTO },
    { P ",\"written\":\"1\"}", 0, EPROTO },
    { P ",\"written\":-1}", 0, EPROTO },
    { P ",\"written\":1.5}", 0, EPROTO },
    { P ",\"written\":1e3}", 0, EPROTO },
    { P ",\"written\":99999999999999999999}", 0, EPROTO },
    { P ",\"written\":18446744073709551615}", 0, EPROTO },
    { P ",\"written\":9223372036854775808}", 0, EPROTO },
    { P ",\"written\":-9223372036854775808}", 0, EPROTO },
    { P ",\"written\":[1]}", 0, EPROTO },
    { P ",\"written\":{}}", 0, EPROTO },
    { P ",\"written\":null}", 0, EPROTO },
    { P ",\"seconds\":\"1\"}", 0, EPROTO },
    { P ",\"seconds\":-0.5}", 0, EPROTO },
    { P ",\"seconds\":1e400}", 0, EPROTO },
    { P ",\"seconds\":-1e400}", 0, EPROTO },
    { P ",\"seconds\":true}", 0, EPROTO },
    { P ",\"seconds\":NaN}", 0, EPROTO },
    { P ",\"done\":\"yes\"}", 0, EPROTO },
    { P ",\"done\":1}", 0, EPROTO },
    { R "}", 0, EPROTO },                                /* no mode */
    { R ",\"mode\":\"turbo\"}", 0, EPROTO },
    { R ",\"mode\":1}", 0, EPROTO },
    { R ",\"mode\":\"direct\",\"direction\":\"sideways\"}", 0, EPROTO },
    { R ",\"mode\":\"direct\",\"reads\":-1}", 0, EPROTO },
    { R ",\"mode\":\"direct\",\"checksum\":\"abcd\"}", 0, EPROTO },
    { R ",\"mode\":\"direct\",\"checksum_algorithm\":\"xxh3\"}", 0, EPROTO },
    { R ",\"mode\":\"direct\",\"checksum_algorithm\":\"xxh3\",\"checksum\":\"XYZ\"}", 0, EPROTO },
    { R ",\"mode\":\"direct\",\"checksum_algorithm\":\"xxh3\",\"checksum\":\"ABCD\"}", 0, EPROTO },
    { R ",\"mode\":\"direct\",\"checksum_algorithm\":\"xxh3\",\"checksum\":\"\"}", 0, EPROTO },
    { R ",\"mode\":\"direct\",\"checksum_algorithm\":\"\",\"checksum\":\"ab\"}", 0, EPROTO },
    { R ",\"mode\":\"direct\",\"checksum_algorithm\":\"xxh3\",\"checksum\":\""
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0\"}", 0, EPROTO },
    { "{\"v\":1,\"type\":\"result\",\"written\":1,\"stored\":1,\"synced\":1,\"seconds\":1,"
      "\"reads\":1,\"writes\":1,\"direction\":\"save\",\"mode\":\"direct\"}", 0, EPROTO },
    { E "}", 0, EPROTO },                                /* no message */
    { E ",\"message\":5}", 0, EPROTO },
    { E ",\"message\":\"m\",\"errno\":4096}", 0, EPROTO },
    { E ",\"message\":\"m\",\"errno\":-5}", 0, EPROTO },
    { E ",\"message\":\"m\",\"errno\":\"ENOSPC\"}", 0, EPROTO },
    { E ",\"message\":\"m\",\"path\":7}", 0, EPROTO },
    { E ",\"message\":\"m\",\"operation\":null}", 0, EPROTO },
    { E ",\"message\":\"m\",\"errno_name\":5}", 0, EPROTO },
    { E ",\"message\":\"m\",\"written\":-2}", 0, EPROTO },
    { "{\"v\":1,\"minor\":\"x\",\"type\":\"progress\"," P_BODY "}", 0, EPROTO },
    { "{\"v\":1,\"minor\":-1,\"type\":\"progress\"," P_BODY "}", 0, EPROTO },
    { "{\"v\":1,\"minor\":1.5,\"type\":\"progress\"," P_BODY "}", 0, EPROTO },
    { "{\"v\":1,\"minor\":4294967296,\"type\":\"progress\"," P_BODY "}", 0, EPROTO },
    { P "}\0{\"v\":1}", sizeof(P "}\0{\"v\":1}") - 1, EPROTO },   /* an embedded NUL */
    { E ",\"message\":\"cut\\u0000here\"}", 0, EPROTO },
    { E ",\"message\":\"bad \xff byte\"}", 0, EPROTO },
    { E ",\"message\":\"raw\ncontrol\"}", 0, EPROTO },
    { E ",\"message\":\"raw\ttab\"}", 0, EPROTO },
    { P "}\n" P "}", 0, EPROTO },                       /* two lines */
    { P "}" P "}", 0, EPROTO },                          /* two objects on one line */
    { P "} x", 0, EPROTO },
    { P ",\"x\":[[[[[[[[1]]]]]]]]}", 0, EPROTO },        /* nested 9 deep */
    { "{\"v\":2,\"type\":\"progress\"," P_BODY "}", 0, EPROTONOSUPPORT },
    { "{\"v\":0,\"type\":\"progress\"," P_BODY "}", 0, EPROTONOSUPPORT },
    { "{\"v\":-1,\"type\":\"progress\"," P_BODY "}", 0, EPROTONOSUPPORT },
};

static void
test_decode_malformed(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(bad_lines); i++) {
        g_autoptr(GError) e = NULL;
        IohProtocolMsg m = { 0 };
        gsize len = bad_lines[i].len ? bad_lines[i].len : strlen(bad_lines[i].line);
        g_autofree char *shown = g_strescape(bad_lines[i].line, NULL);

        fill_result(&m);    /* holds strings: decoding must clear them, not leak them */
        g_test_message("line %u: %s", i, shown);
        g_assert_false(ioh_protocol_decode(bad_lines[i].line, len, &m, &e));
        g_assert_error(e, IOH_ERROR, bad_lines[i].code);
        g_assert_true(g_str_has_prefix(e->message, "status line: "));
        g_assert_null(strchr(e->message, '\n'));
        g_assert_cmpint(m.kind, ==, IOH_PROTOCOL_NONE);
        g_assert_null(m.checksum);
        g_assert_null(m.message);
    }
}

/* A line of '[' as long as a line may be: refused before json-glib recurses into it. */
static void
test_decode_deep(void)
{
    g_autoptr(GError) e = NULL;
    g_auto(IohProtocolMsg) m = { 0 };
    gsize len = IOH_PROTOCOL_MAX_LINE - 1;
    g_autofree char *line = g_malloc(len);

    memset(line, '[', len);
    g_assert_false(ioh_protocol_decode(line, len, &m, &e));
    g_assert_error(e, IOH_ERROR, EPROTO);
    g_assert_nonnull(strstr(e->message, "nested deeper"));
}

static void
decode_ok(const char *line, IohProtocolMsg *m)
{
    g_autoptr(GError) e = NULL;
    g_autofree char *shown = g_strescape(line, NULL);

    g_test_message("%s", shown);
    g_assert_true(ioh_protocol_decode(line, strlen(line), m, &e));
    g_assert_no_error(e);
}

static void
test_decode_lenient(void)
{
    g_auto(IohProtocolMsg) m = { 0 };

    decode_ok(P ",\"future\":{\"x\":[1,2,{\"z\":null}]},\"n\":-1.5e300,\"s\":\"\\u00e9\"}", &m);
    g_assert_cmpint(m.kind, ==, IOH_PROTOCOL_PROGRESS);
    g_assert_cmpuint(m.written, ==, 1);
    g_assert_cmpfloat(m.seconds, ==, 0.5);
    decode_ok(P "}\n", &m);
    decode_ok(P "}\r\n", &m);
    decode_ok("  " P "}  ", &m);
    decode_ok("{\"v\":1,\"type\":\"progress\",\"written\":0,\"stored\":0,\"synced\":0,"
              "\"seconds\":2}", &m);
    g_assert_cmpfloat(m.seconds, ==, 2.0);
    decode_ok(P ",\"written\":9223372036854775807}", &m);
    g_assert_cmpuint(m.written, ==, G_MAXINT64);
    decode_ok(P ",\"minor\":7,\"done\":true}", &m);
    g_assert_cmpint(m.kind, ==, IOH_PROTOCOL_PROGRESS);
    g_assert_cmpuint(m.minor, ==, 7);
    decode_ok(E ",\"message\":\"esc \\\\u0000 is text\",\"path\":\"/\\u00e9\\n\"}", &m);
    g_assert_cmpint(m.kind, ==, IOH_PROTOCOL_ERROR);
    g_assert_cmpstr(m.message, ==, "esc \\u0000 is text");
    g_assert_cmpstr(m.path, ==, "/\xc3\xa9\n");
    g_assert_cmpint(m.errsv, ==, 0);
    g_assert_cmpuint(m.written, ==, 0);
    decode_ok(E ",\"message\":\"m\",\"errno\":0}", &m);
    g_assert_cmpint(m.errsv, ==, 0);
    decode_ok(P ",\"written\":1,\"written\":2}", &m);    /* a duplicate: one of them */
    g_assert_cmpuint(m.written, >=, 1);
}

/* A newer minor version may add line types: they decode as UNKNOWN, to be skipped. */
static void
test_decode_future_minor(void)
{
    g_auto(IohProtocolMsg) m = { 0 };

    /* a minor newer than ours (IOH_PROTOCOL_MINOR is 3) */
    decode_ok("{\"v\":1,\"minor\":4,\"type\":\"budget\",\"bytes\":[1,2]}", &m);
    g_assert_cmpint(m.kind, ==, IOH_PROTOCOL_UNKNOWN);
    g_assert_cmpuint(m.minor, ==, 4);
    /* minor 2's ready line: a kind of its own, not final */
    decode_ok("{\"v\":1,\"minor\":2,\"type\":\"ready\"}", &m);
    g_assert_cmpint(m.kind, ==, IOH_PROTOCOL_READY);
    g_assert_false(ioh_protocol_msg_is_final(&m));
    g_assert_false(ioh_protocol_msg_is_final(&m));
    decode_ok("{\"v\":1,\"minor\":3,\"type\":\"result\",\"written\":1,\"stored\":1,"
              "\"synced\":1,\"seconds\":1,\"sync_seconds\":0,\"reads\":1,\"writes\":1,"
              "\"direction\":\"restore\",\"mode\":\"fadvise\",\"compress_cpu_seconds\":0.7}",
              &m);
    g_assert_cmpint(m.kind, ==, IOH_PROTOCOL_RESULT);
    g_assert_cmpint(m.direction, ==, IOH_DIRECTION_RESTORE);
    g_assert_cmpint(m.mode, ==, IOH_CACHE_FADVISE);
}

/* ---- the line reader ------------------------------------------------------------ */

static GString *
three_lines(void)
{
    g_auto(IohProtocolMsg) a = { 0 };
    g_auto(IohProtocolMsg) b = { 0 };
    GString *s = g_string_new(NULL);
    g_autofree char *l1 = NULL;
    g_autofree char *l3 = NULL;

    fill_progress(&a);
    l1 = ioh_protocol_encode(&a, NULL);
    g_string_append(s, l1);
    a.written += 1;
    g_free(l1);
    l1 = ioh_protocol_encode(&a, NULL);
    g_string_append(s, l1);
    fill_result(&b);
    l3 = ioh_protocol_encode(&b, NULL);
    g_string_append(s, l3);
    return s;
}

static void
expect_next(IohProtocolReader *r, IohProtocolKind kind, guint64 written)
{
    g_autoptr(GError) e = NULL;
    g_auto(IohProtocolMsg) m = { 0 };

    g_assert_cmpint(ioh_protocol_reader_next(r, &m, &e), ==, 1);
    g_assert_no_error(e);
    g_assert_cmpint(m.kind, ==, kind);
    g_assert_cmpuint(m.written, ==, written);
}

static void
test_reader_byte_by_byte(void)
{
    g_autoptr(IohProtocolReader) r = ioh_protocol_reader_new();
    g_autoptr(GString) s = three_lines();
    g_auto(IohProtocolMsg) m = { 0 };
    guint got = 0;

    for (gsize i = 0; i < s->len; i++) {
        int n;

        ioh_protocol_reader_feed(r, s->str + i, 1);
        n = ioh_protocol_reader_next(r, &m, NULL);
        g_assert_cmpint(n, ==, s->str[i] == '\n' ? 1 : 0);
        got += (guint)n;
    }
    g_assert_cmpuint(got, ==, 3);
    g_assert_cmpint(m.kind, ==, IOH_PROTOCOL_RESULT);
    g_assert_true(ioh_protocol_reader_finish(r, NULL));
}

static void
test_reader_one_feed(void)
{
    g_autoptr(IohProtocolReader) r = ioh_protocol_reader_new();
    g_autoptr(GString) s = three_lines();
    g_autoptr(GError) e = NULL;
    g_auto(IohProtocolMsg) m = { 0 };

    g_string_append(s, "{\"v\":1,");    /* and the start of a fourth */
    ioh_protocol_reader_feed(r, s->str, s->len);
    expect_next(r, IOH_PROTOCOL_PROGRESS, 3 * MiB);
    expect_next(r, IOH_PROTOCOL_PROGRESS, 3 * MiB + 1);
    expect_next(r, IOH_PROTOCOL_RESULT, 2147483648u);
    g_assert_cmpint(ioh_protocol_reader_next(r, &m, &e), ==, 0);
    ioh_protocol_reader_feed(r, "\"type\":\"progress\"," P_BODY "}\n", strlen(P_BODY) + 20);
    expect_next(r, IOH_PROTOCOL_PROGRESS, 1);
    ioh_protocol_reader_feed(r, "{\"v\":1", 6);    /* the writer died mid-line */
    g_assert_false(ioh_protocol_reader_finish(r, &e));
    g_assert_error(e, IOH_ERROR, EPROTO);
    g_clear_error(&e);
    g_assert_true(ioh_protocol_reader_finish(r, &e));    /* the leftover was discarded */
    g_assert_no_error(e);
}

static void
test_reader_bad_then_good(void)
{
    g_autoptr(IohProtocolReader) r = ioh_protocol_reader_new();
    g_autoptr(GError) e = NULL;
    g_auto(IohProtocolMsg) m = { 0 };
    const char *text = "garbage\n\n" P "}\n{\"v\":9}\n" P "}\n";

    ioh_protocol_reader_feed(r, text, strlen(text));
    g_assert_cmpint(ioh_protocol_reader_next(r, &m, &e), ==, -1);
    g_assert_error(e, IOH_ERROR, EPROTO);
    g_clear_error(&e);
    g_assert_cmpint(ioh_protocol_reader_next(r, &m, &e), ==, -1);    /* the empty line */
    g_clear_error(&e);
    expect_next(r, IOH_PROTOCOL_PROGRESS, 1);
    g_assert_cmpint(ioh_protocol_reader_next(r, &m, &e), ==, -1);
    g_assert_error(e, IOH_ERROR, EPROTONOSUPPORT);
    expect_next(r, IOH_PROTOCOL_PROGRESS, 1);
    g_assert_cmpint(ioh_protocol_reader_next(r, &m, NULL), ==, 0);
}

/* A line of exactly the limit is read; one byte more is refused. */
static void
test_reader_limit(void)
{
    g_autoptr(IohProtocolReader) r = ioh_protocol_reader_new();
    g_autoptr(GError) e = NULL;
    g_auto(IohProtocolMsg) m = { 0 };
    const char *head = P ",\"pad\":\"";
    gsize fixed = strlen(head) + strlen("\"}\n");
    gsize pad = IOH_PROTOCOL_MAX_LINE - fixed;    /* the line, newline included, is the limit */
    g_autofree char *fill = g_strnfill(pad + 1, 'x');
    g_autofree char *exact = g_strdup_printf("%s%.*s\"}\n", head, (int)pad, fill);
    g_autofree char *over = g_strdup_printf("%s%s\"}\n", head, fill);

    g_assert_cmpuint(strlen(exact), ==, IOH_PROTOCOL_MAX_LINE);
    ioh_protocol_reader_feed(r, exact, strlen(exact));
    expect_next(r, IOH_PROTOCOL_PROGRESS, 1);
    ioh_protocol_reader_feed(r, over, strlen(over));
    g_assert_cmpint(ioh_protocol_reader_next(r, &m, &e), ==, -1);
    g_assert_error(e, IOH_ERROR, EPROTO);
    g_assert_nonnull(strstr(e->message, "longer than"));
}

/* 256 MiB without a newline, fed as a reader would read it: the reader's memory stays
 * bounded, the line is one error, and the lines after it are read. */
static void
test_reader_huge_line_bounded(void)
{
    g_autoptr(IohProtocolReader) r = ioh_protocol_reader_new();
    g_autoptr(GError) e = NULL;
    g_auto(IohProtocolMsg) m = { 0 };
    gsize chunk = 64 * 1024;
    g_autofree char *junk = g_strnfill(chunk, '7');
    guint64 before = coret_rss(), peak = before;

    for (guint i = 0; i < 4096; i++) {
        ioh_protocol_reader_feed(r, junk, chunk);
        g_assert_cmpint(ioh_protocol_reader_next(r, &m, NULL), ==, 0);
        if (i % 256 == 0) {
            peak = MAX(peak, coret_rss());
        }
    }
    g_test_message("RSS before %" G_GUINT64_FORMAT " KiB, peak %" G_GUINT64_FORMAT " KiB",
                   before / 1024, peak / 1024);
    g_assert_cmpuint(peak, <, before + 16 * MiB);
    ioh_protocol_reader_feed(r, "}\n" P "}\n", strlen(P) + 4);
    g_assert_cmpint(ioh_protocol_reader_next(r, &m, &e), ==, -1);
    g_assert_error(e, IOH_ERROR, EPROTO);
    expect_next(r, IOH_PROTOCOL_PROGRESS, 1);
    /* and a huge unfinished line at the end is a torn stream */
    ioh_protocol_reader_feed(r, junk, chunk);
    ioh_protocol_reader_feed(r, junk, chunk);
    g_assert_false(ioh_protocol_reader_finish(r, NULL));
}

static void
test_reader_null(void)
{
    ioh_protocol_reader_free(NULL);
}

/* ---- writing into real pipes ---------------------------------------------------- */

typedef struct {
    int fd;
    guint count;
} Writer;

static gpointer
writer_thread(gpointer data)
{
    Writer *w = data;
    g_auto(IohProtocolMsg) m = { 0 };

    fill_progress(&m);
    for (guint i = 0; i < w->count; i++) {
        m.written = i;
        g_assert_true(ioh_protocol_write(w->fd, &m, -1, NULL));
    }
    ioh_protocol_msg_clear(&m);
    fill_error(&m);
    g_assert_true(ioh_protocol_write(w->fd, &m, IOH_PROTOCOL_FINAL_TIMEOUT_MS, NULL));
    close(w->fd);
    return NULL;
}

/* A helper-like writer and a library-like reader on a real pipe, small reads. */
static void
test_write_read_pipe(void)
{
    g_autoptr(IohProtocolReader) r = ioh_protocol_reader_new();
    Writer w = { .count = 2000 };
    guint progress = 0, finals = 0;
    GThread *t;
    int p[2];

    coret_pipe(p, TRUE, 0);
    w.fd = p[1];
    t = g_thread_new("writer", writer_thread, &w);
    for (;;) {
        char buf[7];
        g_auto(IohProtocolMsg) m = { 0 };
        gssize n = read(p[0], buf, sizeof(buf));
        int got;

        if (n < 0 && errno == EAGAIN) {
            g_usleep(100);
            continue;
        }
        g_assert_cmpint(n, >=, 0);
        if (n == 0) {
            break;
        }
        ioh_protocol_reader_feed(r, buf, (gsize)n);
        while ((got = ioh_protocol_reader_next(r, &m, NULL)) == 1) {
            g_assert_cmpuint(finals, ==, 0);    /* nothing after the final line */
            if (m.kind == IOH_PROTOCOL_PROGRESS) {
                g_assert_cmpuint(m.written, ==, progress++);
            } else {
                g_assert_cmpint(m.kind, ==, IOH_PROTOCOL_ERROR);
                g_assert_cmpint(m.errsv, ==, ENOSPC);
                finals++;
            }
        }
        g_assert_cmpint(got, ==, 0);
    }
    g_thread_join(t);
    g_assert_true(ioh_protocol_reader_finish(r, NULL));
    g_assert_cmpuint(progress, ==, w.count);
    g_assert_cmpuint(finals, ==, 1);
    close(p[0]);
}

/* Every byte in @data after the filler (NUL bytes) must be whole lines. */
static guint
count_whole_lines(const GByteArray *data)
{
    g_autoptr(IohProtocolReader) r = ioh_protocol_reader_new();
    g_auto(IohProtocolMsg) m = { 0 };
    gsize i = 0;
    guint n = 0;

    while (i < data->len && data->data[i] == 0) {
        i++;
    }
    ioh_protocol_reader_feed(r, data->data + i, data->len - i);
    while (ioh_protocol_reader_next(r, &m, NULL) == 1) {
        n++;
    }
    g_assert_true(ioh_protocol_reader_finish(r, NULL));
    return n;
}

static void
test_write_drop_when_full(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_autoptr(GError) e = NULL;
    g_autoptr(GByteArray) got = NULL;
    gsize filled;
    CoretDrain *d;
    int p[2];

    fill_progress(&m);
    coret_pipe(p, TRUE, 0);
    filled = coret_fill(p[1]);
    g_assert_false(ioh_protocol_write(p[1], &m, 0, &e));
    g_assert_error(e, IOH_ERROR, EAGAIN);
    d = coret_drain_start(p[0], 0);
    close(p[1]);
    got = coret_drain_join(d);
    g_assert_cmpuint(got->len, ==, filled);    /* nothing of the dropped line */
}

static void
test_write_final_waits(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_autoptr(GError) e = NULL;
    g_autoptr(GByteArray) got = NULL;
    CoretDrain *d;
    int p[2];

    fill_result(&m);
    coret_pipe(p, TRUE, 0);
    coret_fill(p[1]);
    d = coret_drain_start(p[0], 100);
    g_assert_true(ioh_protocol_write(p[1], &m, 5000, &e));
    g_assert_no_error(e);
    close(p[1]);
    got = coret_drain_join(d);
    g_assert_cmpuint(count_whole_lines(got), ==, 1);
}

static void
test_write_final_timeout(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_autoptr(GError) e = NULL;
    gint64 t0 = g_get_monotonic_time();
    int p[2];

    fill_result(&m);
    coret_pipe(p, TRUE, 0);
    coret_fill(p[1]);
    g_assert_false(ioh_protocol_write(p[1], &m, 100, &e));
    g_assert_error(e, IOH_ERROR, EAGAIN);
    g_assert_cmpint(g_get_monotonic_time() - t0, >=, 100000);
    close(p[0]);
    close(p[1]);
}

static void
test_write_epipe(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_autoptr(GError) e = NULL;
    g_autofree char *want = NULL;
    int p[2];

    fill_progress(&m);
    coret_pipe(p, FALSE, 0);
    close(p[0]);
    g_assert_false(ioh_protocol_write(p[1], &m, 0, &e));
    g_assert_error(e, IOH_ERROR, EPIPE);
    want = g_strdup_printf("write status fd %d: Broken pipe", p[1]);
    g_assert_cmpstr(e->message, ==, want);
    close(p[1]);
}

/* A line longer than the room left (and than PIPE_BUF): once a part is written, the rest
 * follows even with no time to wait, so the reader never gets a torn line. */
static void
test_write_no_torn_line(void)
{
    g_auto(IohProtocolMsg) m = { 0 };
    g_autoptr(GError) e = NULL;
    g_autoptr(GByteArray) got = NULL;
    char buf[8192];
    CoretDrain *d;
    int p[2];

    fill_error(&m);
    g_free(m.path);
    m.path = g_strnfill(IOH_PROTOCOL_MAX_STRING, '\x01');    /* ~24 KiB once escaped */
    coret_pipe(p, TRUE, 65536);
    coret_fill(p[1]);
    g_assert_cmpint(read(p[0], buf, sizeof(buf)), ==, sizeof(buf));
    d = coret_drain_start(p[0], 50);
    g_assert_true(ioh_protocol_write(p[1], &m, 0, &e));
    g_assert_no_error(e);
    close(p[1]);
    got = coret_drain_join(d);
    g_assert_cmpuint(count_whole_lines(got), ==, 1);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    g_test_add_func("/protocol/encode/exact-lines", test_encode_exact);
    g_test_add_func("/protocol/encode/wrong-kind", test_encode_wrong_kind);
    g_test_add_func("/protocol/encode/first-format-reader-compat", test_old_reader_compat);
    g_test_add_func("/protocol/round-trip/progress", test_round_trip_progress);
    g_test_add_func("/protocol/round-trip/result", test_round_trip_result);
    g_test_add_func("/protocol/round-trip/result-no-checksum", test_round_trip_no_checksum);
    g_test_add_func("/protocol/round-trip/error-strings", test_round_trip_error_strings);
    g_test_add_func("/protocol/round-trip/result-compression", test_round_trip_compression);
    g_test_add_func("/protocol/round-trip/result-encryption", test_round_trip_encryption);
    g_test_add_func("/protocol/encode/invalid-utf8", test_encode_invalid_utf8);
    g_test_add_func("/protocol/encode/clips-long-strings", test_encode_clips_long_strings);
    g_test_add_func("/protocol/encode/non-finite-seconds", test_encode_non_finite_seconds);
    g_test_add_func("/protocol/error/other-domain", test_error_other_domain);
    g_test_add_func("/protocol/error/cancelled", test_error_cancelled);
    g_test_add_func("/protocol/msg-helpers", test_msg_helpers);
    g_test_add_func("/protocol/decode/malformed", test_decode_malformed);
    g_test_add_func("/protocol/decode/deep-nesting", test_decode_deep);
    g_test_add_func("/protocol/decode/lenient", test_decode_lenient);
    g_test_add_func("/protocol/decode/future-minor", test_decode_future_minor);
    g_test_add_func("/protocol/reader/byte-by-byte", test_reader_byte_by_byte);
    g_test_add_func("/protocol/reader/one-feed-and-torn-end", test_reader_one_feed);
    g_test_add_func("/protocol/reader/bad-line-then-good", test_reader_bad_then_good);
    g_test_add_func("/protocol/reader/line-limit", test_reader_limit);
    g_test_add_func("/protocol/reader/huge-line-bounded-memory", test_reader_huge_line_bounded);
    g_test_add_func("/protocol/reader/free-null", test_reader_null);
    g_test_add_func("/protocol/write/real-pipe-small-reads", test_write_read_pipe);
    g_test_add_func("/protocol/write/progress-dropped-when-full", test_write_drop_when_full);
    g_test_add_func("/protocol/write/final-waits-for-room", test_write_final_waits);
    g_test_add_func("/protocol/write/final-timeout", test_write_final_timeout);
    g_test_add_func("/protocol/write/epipe", test_write_epipe);
    g_test_add_func("/protocol/write/no-torn-line", test_write_no_torn_line);
    return g_test_run();
}
