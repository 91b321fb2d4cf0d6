/* qg-json.c - the JSON getters moved to helper/core/ioh-json.c (one set, shared with the
 * helper protocol's reader). This file only keeps tests/fuzz/run-fuzzers' image-header
 * target building from its list of sources until that list names ioh-json.c; nothing
 * else compiles it. */
#include "../helper/core/ioh-json.c"
