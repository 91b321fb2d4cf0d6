/* qg-image.h - the saved-VM image format (prefix qg_image_)
 *
 * An image is a 4096-byte header followed by QEMU's migration stream, so the stream
 * starts aligned for O_DIRECT. The header (all integers little endian):
 *
 *   0   char[8]  magic "IOHQEMU\n" (complete) or "IOHQPART" (save not finished)
 *   8   u32      format version: 1 (the stream as QEMU wrote it) or 2 (compressed)
 *   12  u32      header size (4096): the stream's offset
 *   16  u32      length of the JSON metadata that follows
 *   20  u32      reserved, 0
 *   24  u64      XXH3-64 of the JSON metadata bytes
 *   32  JSON     metadata, then zeros up to the header size
 *
 * Metadata: {"qemu-version", "machine", "ram-size", "time" (ISO 8601 UTC),
 * "running" (guest state before the save), "stream": {"offset", "length",
 * "checksum": "xxh3-64:<16 hex digits>"}}. The checksum is XXH3-64 (seed 0) of the
 * stream bytes, the same as `tail -c +4097 IMAGE | xxhsum -H3`.
 *
 * Compressed images (since issue 12) have format version 2 and two more members in
 * "stream": "stored-length" (the bytes after the header: a sequence of standard zstd
 * frames, so `tail -c +4097 IMAGE | zstd -dc` is the stream) and "compression":
 * {"method": "zstd", "level": L} (since issue 30, saved with --compress=auto:
 * {"method": "zstd", "level": 3, "adaptive": true}, the level the highest any frame
 * may have; readers that know no "adaptive" still read the image). "length" and
 * "checksum" stay the stream's (the uncompressed bytes QEMU wrote and reads). Raw images keep version 1 and the metadata
 * they had, byte for byte, so the tools of the previous release read them; a tool that
 * knows only version 1 refuses a compressed image ("format version 2") instead of
 * feeding QEMU zstd frames. A version above 2 is refused the same way.
 *
 * Encrypted images (since issue 28) have format version 3, "stored-length" and
 * "encryption": {"format": "age"} in "stream" (and "compression" when the stream was
 * compressed before it was encrypted): the bytes after the header are one age v1 file
 * (age's own header, then its ChaCha20-Poly1305 STREAM), so
 * `tail -c +4097 IMAGE | age -d -i KEY` gives the stream (`| zstd -dc` when compressed).
 * The header records that the stream is encrypted, never a key nor a recipient. The
 * tools of the previous release read versions 1 and 2 only, so they refuse an encrypted
 * image ("format version 3") instead of feeding QEMU ciphertext.
 *
 * Multi-channel images (since issue 31, QEMU's multifd) have format version 4: "stream"
 * is the main channel's (with the compression members of version 2 when compressed),
 * and "multifd" indexes the channels' regions (qg-image-channels.c, docs/channels.md).
 * An encrypted multi-channel image (issue 31) has version 4 with version 3's
 * "encryption" in "stream": every region is then an age file of its own. The release
 * that first read version 4 refuses it as corrupt ("recorded encrypted") instead of
 * feeding QEMU ciphertext.
 *
 * A save writes the "IOHQPART" placeholder first and the real header LAST, after the
 * stream is durable; so a file whose save died never reads as a complete image.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define QG_IMAGE_HEADER_SIZE 4096
#define QG_IMAGE_FORMAT_VERSION 1              /* a raw image */
#define QG_IMAGE_FORMAT_VERSION_COMPRESSED 2   /* a compressed image */
#define QG_IMAGE_FORMAT_VERSION_ENCRYPTED 3    /* an encrypted image */
#define QG_IMAGE_FORMAT_VERSION_CHANNELS 4     /* multifd channels: the newest read */
#define QG_IMAGE_CHANNELS_MAX 16

#define QG_IMAGE_ERROR (qg_image_error_quark())
GQuark qg_image_error_quark(void);

typedef enum {
    QG_IMAGE_ERROR_IO,          /* read/write/stat failed */
    QG_IMAGE_ERROR_BAD_MAGIC,   /* not one of our images */
    QG_IMAGE_ERROR_INCOMPLETE,  /* the placeholder: its save never finished */
    QG_IMAGE_ERROR_VERSION,     /* a format version we do not know */
    QG_IMAGE_ERROR_CORRUPT,     /* header damaged (metadata checksum, bad JSON) */
    QG_IMAGE_ERROR_TRUNCATED,   /* the file is shorter than its header says */
    QG_IMAGE_ERROR_CHECKSUM,    /* the stream does not match its checksum */
} QgImageError;

/* One multifd channel's region of a version-3 image. */
typedef struct {
    guint64 offset;         /* in the file, a multiple of 4096 */
    guint64 length;         /* the channel's stream */
    guint64 stored_length;  /* its bytes in the file (= length when raw) */
    guint64 checksum;       /* XXH3-64 of the channel's stream */
} QgImageRegion;

typedef struct {
    char *qemu_version;
    char *machine;
    guint64 ram_size;
    gint64 time;            /* seconds since the epoch, UTC */
    gboolean running;
    guint64 stream_offset;  /* QG_IMAGE_HEADER_SIZE */
    guint64 stream_length;
    guint64 checksum;       /* XXH3-64 of the stream */
    /* format version 2: a compressed image */
    char *compression;      /* "zstd", or NULL: the stream is stored as it is */
    int compress_level;     /* the level it was saved with (may be negative); with
                             * compress_auto the highest level any frame may have */
    gboolean compress_auto; /* --compress=auto: raw frames or levels up to compress_level,
                             * chosen per window ("adaptive": true in "compression") */
    guint64 stored_length;  /* bytes after the header (= stream_length when raw) */
    /* format version 3: an encrypted image */
    char *encryption;       /* "age", or NULL: the stored bytes are not encrypted */
    /* format version 4: QEMU's multifd channels, each in its own region */
    guint channels;         /* 0: a single stream */
    QgImageRegion *regions; /* channels entries, region i holding channel i */
    char *multifd_compression;  /* QEMU's own: "none", "zstd", "zlib" */
    char *uuid;             /* the source QEMU's UUID in the channels' init packets (hex) */
} QgImageInfo;

QgImageInfo *qg_image_info_new(void);
void qg_image_info_free(QgImageInfo *info);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QgImageInfo, qg_image_info_free)

/* Formats @info into @buf (QG_IMAGE_HEADER_SIZE bytes). FALSE if it does not fit. */
gboolean qg_image_header_encode(const QgImageInfo *info, guint8 *buf, GError **error);

/* Parses a header from @buf (@len bytes, fewer than the header size means a truncated
 * file). @path is for messages only. */
QgImageInfo *qg_image_header_decode(const guint8 *buf, gsize len, const char *path,
                                    GError **error);

/* The "save in progress" placeholder header into @buf (QG_IMAGE_HEADER_SIZE bytes). */
void qg_image_placeholder_encode(guint8 *buf);

/* Writes the "save in progress" placeholder header at offset 0 of @fd. */
gboolean qg_image_write_placeholder(int fd, const char *path, GError **error);

/* Writes the final header at offset 0 of @fd and makes it durable (fdatasync). */
gboolean qg_image_write_header(int fd, const char *path, const QgImageInfo *info,
                               GError **error);

/* Reads and checks the header of @fd, and that the file holds the whole stream. */
QgImageInfo *qg_image_read_header(int fd, const char *path, GError **error);

/* A target without an fd (an NBD export, an RBD image: @kind "export" or "image") of
 * @size bytes is too small for the header and a stream of up to @bound bytes: FALSE with
 * ENOSPC "KIND NAME is N bytes, the image may need up to M (...)". */
gboolean qg_image_too_small(GError **error, const char *kind, const char *name, guint64 size,
                            guint64 bound);

/* FALSE with QG_IMAGE_ERROR_TRUNCATED when a target of @size bytes does not hold the
 * stream @info announces ("image truncated NAME: the KIND is N bytes, the header says
 * ..."). */
gboolean qg_image_check_holds(const QgImageInfo *info, guint64 size, const char *kind,
                              const char *name, GError **error);

/* "xxh3-64:0123456789abcdef" */
char *qg_image_checksum_to_string(guint64 checksum);
/* Parses "xxh3-64:<16 hex digits>"; FALSE for anything else. */
gboolean qg_image_checksum_parse(const char *s, guint64 *ret);

/* qg-image-channels.c: the "multifd" member of a version-3 header. */
struct _JsonBuilder;
struct _JsonObject;
void qg_image_channels_encode(struct _JsonBuilder *b, const QgImageInfo *info);
gboolean qg_image_channels_decode(struct _JsonObject *root, QgImageInfo *info,
                                  const char *path, GError **error);
/* Every region inside a file of @size bytes. */
gboolean qg_image_channels_check_size(const QgImageInfo *info, guint64 size,
                                      const char *path, GError **error);

/* Parses a --compress spec, "zstd" or "zstd:LEVEL" (LEVEL -7 to 19, default 1, as the
 * helper's): sets @info's compression and level. FALSE (G_OPTION_ERROR_BAD_VALUE, the
 * message naming --compress) for anything else. */
gboolean qg_image_set_compression(QgImageInfo *info, const char *spec, GError **error);

G_END_DECLS
