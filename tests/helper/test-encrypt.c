/* test-encrypt.c - --recipient, --recipients-file, --identity and --identity-fd: saves
 * encrypted in the age v1 format, with real pipes, real files, a real nbdkit and Debian's
 * age and age-keygen to cross-check (skipped without them):
 * - round trips of 0, 1, 65535, 65536, 65537 bytes, the next chunk boundary +-1 and a few
 *   MiB, in every cache mode, with and without --compress: `age -d` (then `zstd -dc`)
 *   reads the image, the helper's restore gives the stream back;
 * - --threads 1, 2 and 4 give images of the same plaintext, each restored with 1, 2, 4;
 * - images `age -r` wrote (one and two recipients, an ssh-ed25519 stanza beside ours)
 *   restore; --offset/--length keep a header before the image; an NBD export (nbdkit),
 *   refused without --identity;
 * - every tamper class (header, MAC, a chunk flipped, truncated in a chunk and at a
 *   chunk's end (the last flag missing), chunks swapped, one duplicated, bytes appended):
 *   exit 1, one line naming the image and the failing chunk's byte offset, nothing
 *   delivered past the last chunk that authenticated;
 * - wrong and missing identity, a loose identity file, a link, a FIFO; usage errors;
 * - the secret key in no argv, environment, message, record or status line, and the
 *   helper's key pages locked and out of core dumps (VmFlags "lo", "dd"). */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "ioh-test.h"

#define MiB (1024 * 1024)
#define CHUNK 65536
#define CT_CHUNK (CHUNK + 16)

static char *workdir;
static gboolean have_direct;
static gboolean have_age;
static char *recipient;          /* key.txt's public key */
static char *secret;             /* key.txt's AGE-SECRET-KEY-1... line */

/* A shell command line in the work directory (ioht_sh()). */
#define sh(ret_err, ...) ioht_sh(workdir, ret_err, __VA_ARGS__)
#define file_size(name) ioht_sh_file_size(workdir, name)

static gboolean
skip_without_age(void)
{
    if (!have_age) {
        g_test_skip("age and age-keygen are not installed (Debian package age)");
    }
    return !have_age;
}

/* The key pair NAME (mode 0600) made by age-keygen: its public key. */
static char *
keygen(const char *name)
{
    g_autofree char *err = NULL;
    g_autofree char *path = g_build_filename(workdir, name, NULL);
    g_autofree char *text = NULL;
    char *pub;

    g_assert_cmpint(sh(&err, "rm -f %s; umask 077; age-keygen -o %s", name, name), ==, 0);
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    pub = strstr(text, "age1");
    g_assert_nonnull(pub);
    return g_strndup(pub, strcspn(pub, "\n"));
}



/* @err is one line, from the helper, holding @needle (and no key). */
static void
assert_one_line(const char *err, const char *needle)
{
    g_autofree char *copy = g_strchomp(g_strdup(err));

    g_test_message("stderr: %s", copy);
    g_assert_true(g_str_has_prefix(copy, "iohelper: "));
    g_assert_null(strchr(copy, '\n'));
    g_assert_nonnull(strstr(copy, needle));
    g_assert_true(!secret || !strstr(copy, secret + 16));    /* the key, not its name */
}

/* The stream "s": @size random bytes from @seed. */
static void
make_stream(gsize size, guint32 seed)
{
    g_autofree char *path = g_build_filename(workdir, "s", NULL);

    ioht_write_random_file(path, size, seed);
}

typedef struct {
    const char *mode;
    gsize size;
    gboolean compress;
} Case;

/* Saved encrypted (and compressed), read by `age -d` (and `zstd -dc`), restored by us. */
static void
test_round_trip(gconstpointer data)
{
    const Case *c = data;
    g_autofree char *err = NULL;
    g_autoptr(JsonParser) p1 = json_parser_new();
    g_autoptr(JsonParser) p2 = json_parser_new();
    JsonObject *o;

    if (skip_without_age() || (g_str_equal(c->mode, "--direct") && !have_direct)) {
        if (have_age) {
            g_test_skip("no O_DIRECT here");
        }
        return;
    }
    make_stream(c->size, (guint32)c->size);
    g_assert_cmpint(sh(&err, "cat s | $H %s %s --recipient=%s --stats=json - img", c->mode,
                       c->compress ? "--compress=zstd" : "", recipient), ==, 0);
    o = ioht_sh_last_json(err, p1);
    g_assert_cmpstr(json_object_get_string_member(o, "encryption"), ==, "age");
    g_assert_cmpint(json_object_get_int_member(o, "encryption_recipients"), ==, 1);
    g_assert_cmpint(json_object_get_int_member(o, "bytes"), ==, (gint64)c->size);
    g_assert_cmpint(json_object_get_int_member(o, "stored"), ==, (gint64)file_size("img"));
    g_assert_null(strstr(err, recipient));
    g_assert_cmpint(sh(NULL, "age -d -i key.txt img %s | cmp - s",
                       c->compress ? "| zstd -q -dc" : ""), ==, 0);
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(sh(&err, "$H %s %s --identity=key.txt --stats=json img - | cmp - s",
                       c->mode, c->compress ? "--decompress" : ""), ==, 0);
    o = ioht_sh_last_json(err, p2);
    g_assert_cmpstr(json_object_get_string_member(o, "encryption"), ==, "age");
    g_assert_cmpint(json_object_get_int_member(o, "encryption_recipients"), ==, 1);
    g_assert_cmpint(json_object_get_int_member(o, "bytes"), ==, (gint64)c->size);
    if (!c->compress) {
        /* the header (168 bytes for one recipient), the nonce, 16 bytes a chunk (one
         * empty chunk for an empty stream) */
        g_assert_cmpuint(file_size("img"), ==,
                         168 + 16 + c->size + 16 * MAX(1, (c->size + CHUNK - 1) / CHUNK));
    }
}

/* --threads 1, 2, 4: random keys make each image different, the plaintext the same; each
 * restores with any thread count; an O_DIRECT image read by the parallel readers too. */
static void
test_threads(void)
{
    if (skip_without_age()) {
        return;
    }
    make_stream(9 * MiB + 4097, 9);
    for (int t = 1; t <= 4; t *= 2) {
        g_assert_cmpint(sh(NULL, "cat s | $H --threads=%d --recipient=%s - img%d && "
                           "age -d -i key.txt img%d | cmp - s", t, recipient, t, t), ==, 0);
    }
    g_assert_cmpint(sh(NULL, "! cmp -s img1 img2"), ==, 0);
    for (int t = 1; t <= 4; t *= 2) {
        for (int r = 1; r <= 4; r *= 2) {
            g_assert_cmpint(sh(NULL, "$H --threads=%d --identity=key.txt img%d - | cmp - s",
                               r, t), ==, 0);
        }
    }
    if (have_direct) {
        g_assert_cmpint(sh(NULL, "$H --direct s - | $H --direct --threads=2 --recipient=%s - img && "
                           "$H --direct --threads=4 --identity=key.txt img - | cmp - s",
                           recipient), ==, 0);
    }
}

/* What `age -r` wrote restores: sizes around the chunks, two recipients (each identity
 * opens it), a recipients file, and an ssh-ed25519 stanza that our identity skips. */
static void
test_age_cli_images(void)
{
    static const gsize sizes[] = { 0, 1, CHUNK, CHUNK + 1, 3 * MiB + 7 };
    g_autofree char *r2 = NULL;

    if (skip_without_age()) {
        return;
    }
    r2 = keygen("key2.txt");
    for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
        make_stream(sizes[i], 5);
        g_assert_cmpint(sh(NULL, "age -r %s -o img s && $H --identity=key.txt img - | cmp - s",
                           recipient), ==, 0);
    }
    g_assert_cmpint(sh(NULL, "age -r %s -r %s -o img s && "
                       "$H --identity=key.txt img - | cmp - s && "
                       "$H --identity=key2.txt img - | cmp - s", r2, recipient), ==, 0);
    /* ours, to two recipients from a file with comments and blank lines */
    g_assert_cmpint(sh(NULL, "printf '# the hosts\\n\\n%s\\n  %s  \\n' > rcpt && "
                       "cat s | $H --recipients-file=rcpt --stats - img 2> err && "
                       "grep -q 'age: 2 recipients' err && "
                       "age -d -i key2.txt img | cmp - s && age -d -i key.txt img | cmp - s",
                       recipient, r2), ==, 0);
    if (sh(NULL, "command -v ssh-keygen > /dev/null") == 0) {
        g_assert_cmpint(sh(NULL, "rm -f ssh ssh.pub; ssh-keygen -q -t ed25519 -N '' -f ssh && "
                           "age -R ssh.pub -r %s -o img s && grep -aq -- '-> ssh-ed25519' img "
                           "&& $H --identity=key.txt img - | cmp - s", recipient), ==, 0);
    }
}

/* Under a budget of nothing the age layer gets its floor (batches of one chunk) and says
 * it was scaled down; the images are the same format, restored the same way. */
static void
test_budget(void)
{
    g_autofree char *err = NULL;
    g_autoptr(JsonParser) p1 = json_parser_new();
    g_autoptr(JsonParser) p2 = json_parser_new();
    JsonObject *age;

    if (skip_without_age()) {
        return;
    }
    make_stream(5 * MiB + 3, 6);
    g_assert_cmpint(sh(&err, "mkdir -p run && cat s | IOHELPER_RUNDIR=$W/run $H --direct "
                       "--memory-budget=0 --stats=json --recipient=%s - img && "
                       "age -d -i key.txt img | cmp - s", recipient), ==, 0);
    age = json_object_get_object_member(json_object_get_object_member(
        json_object_get_object_member(ioht_sh_last_json(err, p1), "memory"), "layers"), "age");
    g_assert_true(json_object_get_boolean_member(age, "scaled"));
    g_assert_cmpint(json_object_get_int_member(age, "got"), <, 512 * 1024);
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(sh(&err, "IOHELPER_RUNDIR=$W/run $H --memory-budget=0 --stats=json "
                       "--identity=key.txt img - | cmp - s"), ==, 0);
    age = json_object_get_object_member(json_object_get_object_member(
        json_object_get_object_member(ioht_sh_last_json(err, p2), "memory"), "layers"), "age");
    g_assert_true(json_object_get_boolean_member(age, "scaled"));
}

/* The image after --offset bytes that stay; --length on a restore is the stored length. */
static void
test_offset(void)
{
    if (skip_without_age()) {
        return;
    }
    make_stream(2 * MiB + 3, 3);
    g_assert_cmpint(sh(NULL, "head -c 8192 /dev/zero | tr '\\0' H > img && "
                       "cat s | $H --offset=8192 --recipient=%s - img && "
                       "head -c 8192 img | cmp - <(head -c 8192 /dev/zero | tr '\\0' H) && "
                       "tail -c +8193 img | age -d -i key.txt | cmp - s", recipient), ==, 0);
    g_assert_cmpint(sh(NULL, "n=$(( $(stat -c %%s img) - 8192 )); echo trailing >> img && "
                       "$H --identity=key.txt --offset=8192 --length=$n img - | cmp - s && "
                       "$H --direct --identity=key.txt --offset=8192 --length=$n img - | "
                       "cmp - s"), ==, 0);
}

/* Saved to and restored from an export of a real nbdkit (memory plugin). */
static void
test_nbd(void)
{
    g_autofree char *sock = g_build_filename(workdir, "nbd.sock", NULL);
    const char *const plugin[] = { "memory", "64M", NULL };
    g_autofree char *err = NULL;
    GPid pid;

    if (skip_without_age()) {
        return;
    }
    pid = ioht_nbdkit_start(workdir, sock, plugin);
    if (!pid) {
        return;
    }
    make_stream(5 * MiB + 11, 4);
    /* the stored length: the header and nonce, the stream, 81 chunks' tags */
    g_assert_cmpint(sh(NULL, "cat s | $H --threads=2 --recipient=%s - "
                       "'nbd+unix:///?socket=%s' && "
                       "$H --identity=key.txt --length=%d 'nbd+unix:///?socket=%s' - | cmp - s",
                       recipient, sock, 184 + 5 * MiB + 11 + 16 * 81, sock), ==, 0);
    /* Without --identity: refused on the export's first bytes, nothing delivered (the
     * command line peeks at files only; an export is read by the copy). */
    g_assert_cmpint(sh(&err, "$H --length=4096 'nbd+unix:///?socket=%s' - | cat > out",
                       sock), ==, 1);
    assert_one_line(err, "an age-encrypted image: restore it with --identity=FILE");
    g_assert_cmpuint(file_size("out"), ==, 0);
    kill(pid, SIGTERM);
}

/* The image "img" damaged by the shell command @damage fails the restore: exit 1, one
 * line with @cause naming "bad", and no more than @good bytes delivered, those right. */
static void
assert_tamper(const char *damage, const char *cause, gsize good)
{
    g_autofree char *err = NULL;

    g_test_message("damage: %s", damage);
    g_assert_cmpint(sh(NULL, "cp img bad && %s && ! cmp -s img bad", damage), ==, 0);
    g_assert_cmpint(sh(&err, "$H --identity=key.txt bad - | cat > out"), ==, 1);
    assert_one_line(err, cause);
    g_assert_nonnull(strstr(err, " bad: "));
    g_assert_cmpuint(file_size("out"), <=, good);
    g_assert_cmpint(sh(NULL, "cmp -s out <(head -c $(stat -c %%s out) s)"), ==, 0);
}

/* Every tamper class, the failing chunk named by its offset in the image. */
static void
test_tamper(void)
{
    g_autofree char *at1 = NULL, *at3 = NULL, *at4 = NULL;
    gsize hdr;

    if (skip_without_age()) {
        return;
    }
    make_stream(4 * CHUNK + 1000, 7);
    g_assert_cmpint(sh(NULL, "cat s | $H --recipient=%s - img", recipient), ==, 0);
    hdr = file_size("img") - (4 * CT_CHUNK + 1016);     /* the header and the nonce */
    at1 = g_strdup_printf("chunk 1 at byte %zu of the image", hdr + CT_CHUNK);
    at3 = g_strdup_printf("chunk 3 at byte %zu of the image", hdr + 3 * CT_CHUNK);
    at4 = g_strdup_printf("chunk 4 at byte %zu of the image", hdr + 4 * CT_CHUNK);
#define FLIP(off) "printf \"\\\\x$(printf %02x $(( $(od -An -tu1 -j" off " -N1 bad) ^ 1 )))\" | " \
                  "dd of=bad bs=1 seek=" off " conv=notrunc status=none"
    /* a header character replaced by another base64 one (A or B) */
#define PUT(off) "c=$(dd if=bad bs=1 skip=" off " count=1 status=none); " \
                 "printf $([ \"$c\" = A ] && echo B || echo A) | " \
                 "dd of=bad bs=1 seek=" off " conv=notrunc status=none"
#define MAC "$(grep -abo '^---' bad | cut -d: -f1)"
    assert_tamper(FLIP("3"), "not an age image", 0);
    assert_tamper(PUT("40"), "no identity matches", 0);                   /* the share */
    assert_tamper(PUT("80"), "no identity matches", 0);                   /* the wrapped key */
    assert_tamper(PUT("$(( " MAC " + 10 ))"), "MAC does not match", 0);
    assert_tamper(FLIP("$(( " MAC " + 50 ))"), "chunk 0 at byte", 0);     /* the nonce */
    assert_tamper(FLIP("$(( $(stat -c %s img) - 3 * 65552 - 1016 + 77 ))"), at1, CHUNK);
    assert_tamper("truncate -s -1 bad", at4, 4 * CHUNK);
    assert_tamper("truncate -s -1016 bad", at3, 3 * CHUNK);      /* the last flag missing */
    assert_tamper("truncate -s -500 bad", at4, 4 * CHUNK);
    assert_tamper("echo x >> bad", at4, 4 * CHUNK);
    assert_tamper("head -c 65552 img >> bad", at4, 4 * CHUNK);                 /* appended */
    assert_tamper("n=$(( $(stat -c %s img) - 4 * 65552 - 1016 )) && "           /* swapped */
                  "{ head -c $(( n + 65552 )) img; tail -c +$(( n + 2 * 65552 + 1 )) img | "
                  "head -c 65552; tail -c +$(( n + 65552 + 1 )) img | head -c 65552; "
                  "tail -c +$(( n + 3 * 65552 + 1 )) img; } > bad", at1, CHUNK);
    assert_tamper("n=$(( $(stat -c %s img) - 4 * 65552 - 1016 )) && "        /* duplicated */
                  "{ head -c $(( n + 2 * 65552 )) img; tail -c +$(( n + 65552 + 1 )) img; } "
                  "> bad", "chunk 2 at byte", 2 * CHUNK);
    assert_tamper("truncate -s $(( " MAC " + 30 )) bad", "truncated age image", 0);
#undef MAC
#undef PUT
#undef FLIP
}

/* Identities: a wrong one, none (the line names --identity), a loose file, a link, a
 * FIFO (refused at once, never opened blocking), --identity-fd, one never closed. */
static void
test_identity(void)
{
    g_autofree char *err = NULL;

    if (skip_without_age()) {
        return;
    }
    g_free(keygen("other.txt"));
    make_stream(100000, 8);
    g_assert_cmpint(sh(NULL, "cat s | $H --recipient=%s - img", recipient), ==, 0);
    g_assert_cmpint(sh(&err, "$H --identity=other.txt img - | cat > out"), ==, 1);
    assert_one_line(err, "decrypt img: no identity matches the image's 1 X25519 recipient");
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(sh(&err, "$H img - | cat > out"), ==, 1);
    assert_one_line(err, "img: an age-encrypted image: restore it with --identity=FILE");
    g_assert_cmpint(file_size("out"), ==, 0);
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(sh(&err, "cp key.txt loose && chmod 644 loose && "
                       "$H --identity=loose img - | cat > out"), ==, 2);
    assert_one_line(err, "identity loose: accessible by group or others (mode 0644)");
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(sh(&err, "ln -sf key.txt link && $H --identity=link img - | cat"), ==, 2);
    assert_one_line(err, "link");
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(sh(&err, "rm -f fifo; mkfifo -m 600 fifo && "
                       "timeout 20 $H --identity=fifo img - | cat"), ==, 2);
    assert_one_line(err, "fifo");
    g_assert_cmpint(sh(NULL, "$H --identity-fd=3 img - 3< key.txt | cmp - s && "
                       "cat key.txt | $H --identity-fd=4 img - 4<&0 < /dev/null | cmp - s"),
                    ==, 0);
    /* an identity fd whose writer never closes it: refused after 10 s without a byte,
     * not a restore hung before it starts (10 s of this test) */
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(sh(&err, "$H --identity-fd=3 img - "
                       "3< <(echo $BASHPID > w.pid; exec sleep 40 2> /dev/null) 2> err | "
                       "cat > out; r=${PIPESTATUS[0]}; kill $(cat w.pid); cat err >&2; "
                       "exit $r"), ==, 2);
    assert_one_line(err, "--identity-fd 3: no end of the identity after 10 s");
    g_assert_cmpint(file_size("out"), ==, 0);
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(sh(&err, "echo 'AGE-SECRET-KEY-1QQQ' > bogus && chmod 600 bogus && "
                       "$H --identity=bogus img - | cat"), ==, 2);
    assert_one_line(err, "bogus line 1: not an age X25519 identity");
}

/* The key in none of argv, the environment, stderr, --record, the status lines; the
 * helper's key pages locked ("lo") and out of core dumps ("dd"), seen while it runs. */
static void
test_secrets(void)
{
    g_autofree char *err = NULL;

    if (skip_without_age()) {
        return;
    }
    make_stream(8 * MiB, 11);
    g_assert_cmpint(sh(NULL, "cat s | $H --recipient=%s --record=rec --status-fd=3 - img "
                       "3> status", recipient), ==, 0);
    /* the consumer waits: the helper is alive, blocked on a full pipe, keys loaded */
    g_assert_cmpint(sh(&err, "rm -f rec2; exec 5< key.txt; "
                       "$H --identity-fd=5 --record=rec2 --status-fd=3 --stats img - "
                       "3> status2 | { sleep 1; p=$(pgrep -P $$ -x iohelper); "
                       "tr '\\0' ' ' < /proc/$p/cmdline > cmdline; "
                       "tr '\\0' '\\n' < /proc/$p/environ > environ; "
                       "grep VmFlags /proc/$p/smaps > smaps; cat > out; }; "
                       "cmp out s"), ==, 0);
    g_assert_cmpint(sh(NULL, "grep -q identity-fd cmdline && ! grep -l -e '%s' -e "
                       "AGE-SECRET cmdline environ rec rec2 status status2 2>/dev/null",
                       secret), ==, 0);
    g_assert_null(strstr(err, "AGE-SECRET"));
    /* the result line says the image is encrypted, and for how many (protocol minor 3) */
    g_assert_cmpint(sh(NULL, "tail -n 1 status | grep -q '\"encryption\":\"age\","
                       "\"encryption_recipients\":1' && tail -n 1 status2 | "
                       "grep -q '\"encryption\":\"age\"'"), ==, 0);
    /* a mapping both locked and never dumped: the identities' (ioh-secmem.h) */
    g_assert_cmpint(sh(NULL, "awk '/ lo( |$)/ && / dd( |$)/' smaps | grep -q ."), ==, 0);
}

/* A helper holding keys is not dumpable: no core dump, and another process of its uid
 * (QEMU, often) can neither ptrace it nor read its memory, where the identity is (and
 * the payload key, in libcrypto's heap). As root, the helper runs as nobody for this. */
static void
test_undumpable(void)
{
    g_autofree char *src = g_build_filename(workdir, "s", NULL);
    g_auto(IohtNobody) nb = { 0 };
    g_autofree char *h = NULL;

    if (skip_without_age()) {
        return;
    }
    /* as root: a copy nobody can run, wherever the tree is (a package build's is 0700) */
    if (getuid() == 0 && !ioht_nobody_setup(&nb)) {
        return;
    }
    h = nb.helper ? g_shell_quote(nb.helper) : g_strdup("$H");
    ioht_write_random_file(src, 4 * MiB, 12);
    g_assert_cmpint(sh(NULL, "cat s | $H --recipient=%s - img", recipient), ==, 0);
    /* the consumer waits: the helper is alive, blocked on a full pipe, keys loaded */
    g_assert_cmpint(sh(NULL, "u=; [ $(id -u) = 0 ] && "
                       "u='setpriv --reuid=65534 --regid=65534 --clear-groups'; "
                       "$u %s --identity-fd=3 fd:4 - 3< key.txt 4< img | "
                       "{ sleep 1; p=$(pgrep -P $$ -x iohelper); "
                       "if [ -z \"$p\" ]; then echo no-helper > seen; "
                       "elif $u head -c 1 /proc/$p/environ > /dev/null 2>&1; "
                       "then echo readable > seen; else echo refused > seen; fi; "
                       "cat > out; }; cmp out s && grep -qx refused seen", h), ==, 0);
}

static void
test_usage(void)
{
    g_autofree char *bad_r = NULL;
    const char *bad[] = {
        "cat s | $H --recipient=age1qqqq - img",
        "cat s | $H --recipient=AGE-SECRET-KEY-1QQ - img",
        "cat s | $H --recipient= - img",
        NULL, NULL, NULL, NULL, NULL, NULL,
    };

    if (skip_without_age()) {
        return;
    }
    bad[3] = bad_r = g_strdup_printf("$H --recipient=%s img - > /dev/null", recipient);
    bad[4] = "cat s | $H --identity=key.txt - img";
    bad[5] = "$H --identity=key.txt --identity-fd=0 img - < key.txt | cat";
    bad[6] = "printf '# none\\n' > empty && cat s | $H --recipients-file=empty - img";
    bad[7] = "printf 'ssh-ed25519 AAAA\\n' > ssh-r && cat s | $H --recipients-file=ssh-r - img";
    bad[8] = "cat s | $H --recipients-file=missing - img";
    make_stream(1, 1);
    g_assert_cmpint(sh(NULL, "cp s img"), ==, 0);
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *err = NULL;

        g_test_message("%s", bad[i]);
        g_assert_cmpint(sh(&err, "%s", bad[i]), ==, 2);
        assert_one_line(err, "");
    }
    g_assert_cmpint(sh(NULL, "cmp s img"), ==, 0);    /* no refused save touched it */
    /* a secret key pasted where a file name goes: refused, never quoted (no "open KEY: No
     * such file" in the message nor the status line) */
    for (int i = 0; i < 2; i++) {
        g_autofree char *err = NULL;

        g_assert_cmpint(sh(&err, i ? "cat s | $H --recipients-file=%s --status-fd=3 - img2 "
                                     "3> st; r=$?; cat st >&2; exit $r"
                                   : "$H --identity=%s --status-fd=3 img - 3> st > /dev/null;"
                                     " r=$?; cat st >&2; exit $r", secret), ==, 2);
        ioht_assert_contains(err, "takes a file name, not an age secret key");
        g_assert_null(strstr(err, secret));
    }
}

static void
add_round_trips(void)
{
    static const char *const modes[] = { "", "--direct", "--fadvise" };
    static const gsize sizes[] = { 0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK - 1,
                                   2 * CHUNK + 1, 3 * MiB + 7 };

    for (gsize m = 0; m < G_N_ELEMENTS(modes); m++) {
        for (gsize s = 0; s < G_N_ELEMENTS(sizes); s++) {
            for (int z = 0; z < 2; z++) {
                Case *c = g_new0(Case, 1);
                g_autofree char *path = NULL;

                *c = (Case){ modes[m], sizes[s], z };
                path = g_strdup_printf("/encrypt/round-trip/%s/%zu/%s",
                                       *modes[m] ? modes[m] + 2 : "buffered", sizes[s],
                                       z ? "compressed" : "plain");
                g_test_add_data_func_full(path, c, test_round_trip, g_free);
            }
        }
    }
}

int
main(int argc, char **argv)
{
    g_autofree char *age = g_find_program_in_path("age");
    g_autofree char *keygen_path = g_find_program_in_path("age-keygen");
    int rc;

    g_test_init(&argc, &argv, NULL);
    workdir = ioht_workdir();
    have_direct = ioht_dir_supports_direct(workdir);
    have_age = age && keygen_path;
    if (have_age) {
        g_autofree char *text = NULL;
        g_autofree char *path = g_build_filename(workdir, "key.txt", NULL);
        char *line;

        recipient = keygen("key.txt");
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        line = strstr(text, "AGE-SECRET-KEY-1");
        secret = g_strndup(line, strcspn(line, "\n"));
    }
    add_round_trips();
    g_test_add_func("/encrypt/threads-1-2-4", test_threads);
    g_test_add_func("/encrypt/age-cli-images", test_age_cli_images);
    g_test_add_func("/encrypt/offset-length", test_offset);
    g_test_add_func("/encrypt/memory-budget-floor", test_budget);
    g_test_add_func("/encrypt/nbd", test_nbd);
    g_test_add_func("/encrypt/tamper", test_tamper);
    g_test_add_func("/encrypt/identity", test_identity);
    g_test_add_func("/encrypt/secrets", test_secrets);
    g_test_add_func("/encrypt/undumpable", test_undumpable);
    g_test_add_func("/encrypt/usage", test_usage);
    rc = g_test_run();
    ioht_workdir_remove(workdir);
    g_free(recipient);
    g_free(secret);
    return rc;
}
