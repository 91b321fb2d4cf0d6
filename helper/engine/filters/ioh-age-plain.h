/* ioh-age-plain.h - an age-encrypted image restored without an identity, from an NBD
 * export or an RBD image (ioh-age-plain.c)
 */
#pragma once

#include "ioh-layer.h"

G_BEGIN_DECLS

/* The first @len bytes of @c's stream, before any is delivered: FALSE with @error set
 * ("read SOURCE: an age-encrypted image: restore it with --identity=FILE") when @c
 * restores from an NBD or RBD source without decrypting (no unage filter) and the bytes
 * open an age image. Other copies: TRUE. */
gboolean ioh_age_plain_check(IohCopy *c, const char *buf, gsize len, GError **error);

G_END_DECLS
