/* ioh-protocol.h - the helper protocol: JSON lines on the helper's status fd
 *
 * The helper (--status-fd=N) writes progress lines while it copies and exactly one final
 * line: a result (success, after every byte is durable and the files are closed) or an
 * error with structured fields. libwrap and qemu-glue read them; nobody parses the
 * helper's stderr. The format, its versioning and the rules for both ends are
 * docs/protocol.md; this is its one implementation, with json-glib on both ends.
 *
 *   helper:   IohProtocolMsg --ioh_protocol_encode()/ioh_protocol_write()--> fd
 *   library:  fd --read()--> ioh_protocol_reader_feed() --ioh_protocol_reader_next()-->
 *             IohProtocolMsg
 */
#pragma once

#include <glib.h>

#include "ioh-cache-mode.h"

G_BEGIN_DECLS

#define IOH_PROTOCOL_VERSION 1          /* "v": an incompatible change bumps it */
#define IOH_PROTOCOL_MINOR 3            /* "minor": new members or line types only */
#define IOH_PROTOCOL_MAX_LINE 65536     /* bytes, the newline included */
#define IOH_PROTOCOL_MAX_STRING 4096    /* bytes: longer strings are cut when encoding */
#define IOH_PROTOCOL_MAX_DEPTH 8        /* nesting of objects and arrays in a line */
#define IOH_PROTOCOL_FINAL_TIMEOUT_MS 30000  /* how long the helper waits to write the
                                              * final line into a full pipe */

typedef enum {
    IOH_PROTOCOL_NONE,      /* nothing decoded (a cleared message) */
    IOH_PROTOCOL_PROGRESS,  /* "progress": counters while copying */
    IOH_PROTOCOL_RESULT,    /* "result": the final line of a success */
    IOH_PROTOCOL_ERROR,     /* "error": the final line of a failure */
    IOH_PROTOCOL_UNKNOWN,   /* a line type of a newer minor version: skip it */
    IOH_PROTOCOL_READY,     /* "ready" (minor 2): the command line, the config file and
                             * the ends were accepted; the copy starts */
} IohProtocolKind;

typedef enum {
    IOH_DIRECTION_COPY,     /* neither end is storage, or both are */
    IOH_DIRECTION_SAVE,     /* pipe -> storage */
    IOH_DIRECTION_RESTORE,  /* storage -> pipe */
} IohDirection;

/* "copy", "save" or "restore"; NULL outside the enum. */
const char *ioh_direction_to_string(IohDirection direction);
/* The direction spelled @text; FALSE (IOH_ERROR/EINVAL) for any other text. */
gboolean ioh_direction_from_string(const char *text, IohDirection *ret_direction,
                                   GError **error);

/* One line. Which members are meaningful depends on @kind (docs/protocol.md). Strings are
 * owned by the message: ioh_protocol_msg_clear() frees them; g_auto(IohProtocolMsg) m =
 * { 0 } clears at the end of the scope. */
typedef struct {
    IohProtocolKind kind;
    guint minor;               /* the line's minor version (decoded) */

    /* progress, result, error (error: how far the copy got) */
    guint64 written;           /* stream bytes delivered so far */
    guint64 stored;            /* bytes written to / read from the storage side */
    guint64 synced;            /* stored bytes that left the page cache (save) */
    double seconds;            /* since the copy started */

    /* result */
    IohDirection direction;
    IohCacheMode mode;
    guint64 reads;             /* read-side system calls */
    guint64 writes;            /* write-side system calls */
    double sync_seconds;       /* time spent in fdatasync and sync_file_range waits */
    char *checksum_algorithm;  /* e.g. "xxh3"; NULL when no checksum was computed */
    char *checksum;            /* lower-case hex, set exactly when the algorithm is */
    /* result, minor 1: set when a filter (de)compressed the stream */
    char *compression;         /* "zstd"; NULL when the stream was stored as it is */
    gboolean has_level;        /* compression_level is set: a compressing save */
    int compression_level;     /* its level (may be negative) */
    double ratio;              /* stored / written */
    double compress_cpu_seconds;  /* CPU time spent (de)compressing, every thread */
    double cpu_seconds;        /* the helper's CPU time during the copy, every thread */
    /* result, minor 3: set when a filter encrypted or decrypted the stream */
    char *encryption;          /* "age"; NULL when the image is not encrypted */
    guint encryption_recipients;  /* the image's X25519 recipients (never a key) */

    /* error */
    char *operation;           /* "write", "open", ...; may be NULL */
    char *path;                /* path or URI the error is about; may be NULL */
    int errsv;                 /* errno, 0 when none applies */
    char *errno_name;          /* "ENOSPC"; NULL when errsv is 0 or has no name */
    char *message;             /* the one-line human message (never NULL once decoded) */
} IohProtocolMsg;

/* Frees the strings and zeroes the message (kind NONE). Accepts NULL. */
void ioh_protocol_msg_clear(IohProtocolMsg *msg);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(IohProtocolMsg, ioh_protocol_msg_clear)

/* Turns @msg into an error line describing @error: the message, and from an IOH_ERROR
 * its operation, path and errno (ECANCELED for a GIO cancel). The counters are kept. */
void ioh_protocol_msg_set_error(IohProtocolMsg *msg, const GError *error);

/* The GError an error line stands for: IOH_ERROR, code errno (EIO when the line has
 * none), the line's message, operation and path. */
GError *ioh_protocol_msg_to_error(const IohProtocolMsg *msg);

/* TRUE for the kinds that end the stream (result, error). */
gboolean ioh_protocol_msg_is_final(const IohProtocolMsg *msg);

/* ---- helper side ---------------------------------------------------------------- */

/* One line, "\n"-terminated, of a PROGRESS, RESULT, ERROR or READY message (anything else
 * is a programming error: NULL). READY has no member but v, minor and type. Strings that are not UTF-8 get U+FFFD for bad bytes, and are
 * cut to IOH_PROTOCOL_MAX_STRING bytes, so the line is always valid and below
 * IOH_PROTOCOL_MAX_LINE. *@ret_len (may be NULL) gets its length. */
char *ioh_protocol_encode(const IohProtocolMsg *msg, gsize *ret_len);

/* Writes @msg's line to @fd whole. When the fd is non-blocking and full, waits up to
 * @timeout_ms for room (0: not at all; -1: no limit) and then fails with EAGAIN: a
 * progress line is written with 0 and simply dropped, the final line with
 * IOH_PROTOCOL_FINAL_TIMEOUT_MS. Once part of a line is written the rest always
 * follows, so a reader never sees a torn line. */
gboolean ioh_protocol_write(int fd, const IohProtocolMsg *msg, int timeout_ms,
                            GError **error);

/* ---- library side --------------------------------------------------------------- */

/* Decodes one line of @len bytes (a trailing "\n" is allowed) into @ret_msg, which is
 * cleared first. FALSE with IOH_ERROR/EPROTO for a malformed line (not one JSON object,
 * NUL bytes, not UTF-8, too long or too deep, a member of the wrong type, a missing
 * member), EPROTONOSUPPORT for another major version; @ret_msg is then left cleared.
 * Unknown members are skipped; a line type unknown to this version is kind UNKNOWN when
 * its minor version is newer than ours, and an error otherwise. */
gboolean ioh_protocol_decode(const char *line, gsize len, IohProtocolMsg *ret_msg,
                             GError **error);

/* A line-buffered reader: feed it whatever read() returned, take whole messages out. It
 * holds at most IOH_PROTOCOL_MAX_LINE bytes of an unfinished line, plus the whole lines
 * of the data fed and not yet taken out: a longer line is dropped as it arrives and
 * reported as one error when its newline comes. */
typedef struct _IohProtocolReader IohProtocolReader;

IohProtocolReader *ioh_protocol_reader_new(void);
void ioh_protocol_reader_free(IohProtocolReader *reader);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohProtocolReader, ioh_protocol_reader_free)

void ioh_protocol_reader_feed(IohProtocolReader *reader, const void *data, gsize len);

/* The next whole line: 1 with @ret_msg filled, 0 when no whole line is buffered, -1 with
 * @error set for a line that could not be decoded (it is consumed: call again for the
 * lines after it). */
int ioh_protocol_reader_next(IohProtocolReader *reader, IohProtocolMsg *ret_msg,
                             GError **error);

/* At end of file: FALSE with IOH_ERROR/EPROTO when an unfinished line is left (the writer
 * died mid-line), TRUE otherwise. The leftover is discarded either way. */
gboolean ioh_protocol_reader_finish(IohProtocolReader *reader, GError **error);

G_END_DECLS
