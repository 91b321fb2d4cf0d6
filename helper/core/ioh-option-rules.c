/* ioh-option-rules.c - the rules between the helper's options, one table for three parts */
#include "ioh-option-rules.h"

typedef gboolean (*Broken)(const IohOptionSet *s);

static gboolean
direct_and_fadvise(const IohOptionSet *s)
{
    return s->direct && s->fadvise;
}

static gboolean
compress_and_decompress(const IohOptionSet *s)
{
    return s->compress && s->decompress;
}

static gboolean
nbd_options_without_nbd(const IohOptionSet *s)
{
    return s->nbd_options && !s->nbd;
}

static gboolean
threads_without_compress(const IohOptionSet *s)
{
    return s->threads && !s->compress && !s->encrypt && !s->decrypt;
}

static gboolean
encrypt_and_decrypt(const IohOptionSet *s)
{
    return s->encrypt && s->decrypt;
}

static gboolean
encrypt_not_save(const IohOptionSet *s)
{
    return s->encrypt && s->direction_known && s->direction != IOH_DIRECTION_SAVE;
}

static gboolean
decrypt_not_restore(const IohOptionSet *s)
{
    return s->decrypt && s->direction_known && s->direction != IOH_DIRECTION_RESTORE;
}

static gboolean
compress_not_save(const IohOptionSet *s)
{
    return s->compress && s->direction_known &&
           s->direction != IOH_DIRECTION_SAVE;
}

static gboolean
decompress_not_restore(const IohOptionSet *s)
{
    return s->decompress && s->direction_known &&
           s->direction != IOH_DIRECTION_RESTORE;
}

static const struct {
    IohOptionRule rule;
    Broken broken;
} rules[] = {
    { IOH_OPTION_RULE_DIRECT_AND_FADVISE, direct_and_fadvise },
    { IOH_OPTION_RULE_COMPRESS_AND_DECOMPRESS, compress_and_decompress },
    { IOH_OPTION_RULE_NBD_OPTIONS_NEED_NBD, nbd_options_without_nbd },
    { IOH_OPTION_RULE_COMPRESS_NEEDS_SAVE, compress_not_save },
    { IOH_OPTION_RULE_DECOMPRESS_NEEDS_RESTORE, decompress_not_restore },
    { IOH_OPTION_RULE_THREADS_NEED_COMPRESS, threads_without_compress },
    { IOH_OPTION_RULE_ENCRYPT_AND_DECRYPT, encrypt_and_decrypt },
    { IOH_OPTION_RULE_ENCRYPT_NEEDS_SAVE, encrypt_not_save },
    { IOH_OPTION_RULE_DECRYPT_NEEDS_RESTORE, decrypt_not_restore },
};

IohOptionRule
ioh_option_rules_check(const IohOptionSet *set)
{
    for (gsize i = 0; i < G_N_ELEMENTS(rules); i++) {
        if (rules[i].broken(set)) {
            return rules[i].rule;
        }
    }
    return IOH_OPTION_RULE_OK;
}
