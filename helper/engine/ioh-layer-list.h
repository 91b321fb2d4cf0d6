/* ioh-layer-list.h - the registered layers, one line each (see docs/engine.md):
 *   IOH_SOURCE(NAME)  the IohSourceClass ioh_source_NAME  (ioh-source-NAME.c)
 *   IOH_SINK(NAME)    the IohSinkClass ioh_sink_NAME      (ioh-sink-NAME.c)
 *   IOH_FILTER(NAME)  the IohFilterClass ioh_filter_NAME  (ioh-filter-NAME.c)
 * A copy takes the first source and the first sink, in this order, that accepts its end.
 * Included by ioh-layer.c only, with the three macros defined. */
IOH_SOURCE(nbd)
IOH_SOURCE(rbd)
IOH_SOURCE(file)
IOH_SOURCE(stream)
IOH_SINK(nbd)
IOH_SINK(rbd)
IOH_SINK(file)
IOH_SINK(stream)
IOH_FILTER(xxh3)
IOH_FILTER(count)
IOH_FILTER(zstd)
IOH_FILTER(unzstd)
