/* ioh-age-stream.h - age's payload: the STREAM construction over 64 KiB chunks, sealed or
 * opened by several threads at once, the chunks in order
 *
 * Chunk i (from 0) is ChaCha20-Poly1305 with the payload key and the nonce
 * (11-byte big-endian i || last-flag byte): 64 KiB of plaintext become 64 KiB + 16. A
 * call takes whole chunks (the last of a @final call may be short) and counts them, so
 * the next call goes on from there. With @threads over 1 a call's chunks are split in
 * contiguous parts, one per thread (the caller's own included): the output is the same
 * bytes, whatever the threads.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define IOH_AGE_CHUNK (64 * 1024)
#define IOH_AGE_CT_CHUNK (IOH_AGE_CHUNK + 16)

typedef struct _IohAgeStream IohAgeStream;

/* A stream with the 32-byte @payload_key (held only in libcrypto's contexts, one per
 * thread, which clear it when freed), @threads >= 1. NULL when libcrypto refuses. */
IohAgeStream *ioh_age_stream_new(const guint8 payload_key[32], guint threads);
/* The payload's stream: its key HKDF-SHA256(@file_key, salt @nonce, "payload"), derived
 * in locked memory and wiped once in the contexts. */
IohAgeStream *ioh_age_stream_new_payload(const guint8 file_key[16], const guint8 nonce[16],
                                         guint threads);
void ioh_age_stream_free(IohAgeStream *s);   /* keys wiped; accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohAgeStream, ioh_age_stream_free)

/* Seals @len bytes of plaintext at @in (whole chunks; with @final the last one may be
 * shorter, or the only one empty) into @out (IOH_AGE_CT_CHUNK per chunk, the last one
 * shorter): the bytes written in *@ret_len. FALSE when libcrypto failed. */
gboolean ioh_age_stream_seal(IohAgeStream *s, const guint8 *in, gsize len, gboolean final,
                             guint8 *out, gsize *ret_len);

/* The same, started on the stream's threads (@async: all of them; else the calling
 * thread takes a part and this returns when all are done): the bytes it will write in
 * *@ret_len at once. @in and @out must stay until ioh_age_stream_seal_wait(); one call at
 * a time. */
void ioh_age_stream_seal_start(IohAgeStream *s, const guint8 *in, gsize len, gboolean final,
                               guint8 *out, gsize *ret_len, gboolean async);

/* Waits for the seal started (none: TRUE at once): FALSE when libcrypto failed. */
gboolean ioh_age_stream_seal_wait(IohAgeStream *s);

/* Opens @len bytes of ciphertext at @in (whole chunks; with @final the last one may be
 * shorter, 16 bytes at least) into @out: the plaintext bytes in *@ret_len, TRUE when
 * every chunk authenticated. FALSE: *@ret_bad is the first chunk that did not (its index
 * in the stream) and @out holds nothing to deliver. */
gboolean ioh_age_stream_open(IohAgeStream *s, const guint8 *in, gsize len, gboolean final,
                             guint8 *out, gsize *ret_len, guint64 *ret_bad);

/* Chunks sealed or opened so far. */
guint64 ioh_age_stream_chunks(const IohAgeStream *s);

G_END_DECLS
