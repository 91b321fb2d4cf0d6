/* ioh-filter-list.h - the registered filters: one line each, IOH_FILTER(NAME) for the
 * IohFilterClass ioh_filter_NAME defined in ioh-filter-NAME.c (included by ioh-filter.c
 * only, with IOH_FILTER defined). */
IOH_FILTER(xxh3)
IOH_FILTER(count)
