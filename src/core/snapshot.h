/*
 * core/snapshot.h - the snapshot file format, shared by larder_save/larder_load
 * (core/snapshot.c), its tests and the loader's fuzz target.
 *
 * All integers little-endian.
 *   header   64 bytes: magic "LARDSNAP", u32 version (1), u32 header bytes
 *            (64), u64 wall-clock milliseconds (CLOCK_REALTIME) when the save
 *            began, then zeros.
 *   records  per entry: u32 key_len, u32 value_len, u64 remaining TTL in ms
 *            at the save (UINT64_MAX: none), the key, the value.
 *   trailer  32 bytes: magic "LARDEND\0", u64 record count, u64 XXH3-64
 *            (seed 0) of every byte before it (header, records, magic and
 *            count), u64 zero.
 */
#ifndef LARDER_CORE_SNAPSHOT_H
#define LARDER_CORE_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "larder.h"

#define LARDER__SNAP_MAGIC "LARDSNAP"
#define LARDER__SNAP_END_MAGIC "LARDEND"
#define LARDER__SNAP_VERSION 1u
#define LARDER__SNAP_HEADER_BYTES 64u
#define LARDER__SNAP_RECORD_BYTES 16u /* before the key */
#define LARDER__SNAP_TRAILER_BYTES 32u
#define LARDER__SNAP_CHECKED_BYTES 16u /* of the trailer, covered by the checksum */

/*
 * Checks a whole snapshot in memory and, when it is sound, writes its live
 * entries into cache (core/snapshot.c has the rules). now_unix_ms is the
 * wall clock at the load; the fuzz target and larder_load() call it.
 * Returns what larder_load() documents.
 */
int larder__snapshot_load_mem(larder *cache, const unsigned char *data, size_t len,
			      uint64_t now_unix_ms);

#endif /* LARDER_CORE_SNAPSHOT_H */
