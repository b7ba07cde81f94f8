package org.larder;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A snapshot of a cache's counters ({@code larder_stats}): each counter is
 * exact, the set is not taken at one instant. Every engine counter is in
 * {@link #asMap()} under its larder.h name ("hits", "used_bytes", ...),
 * including the memory audit ("pages_mapped_bytes", "reserve_bytes",
 * "returning_bytes", "large_bytes", "pages_returned_bytes", "index_bytes"); the
 * usual ones also have a getter.
 */
public final class LarderStats {
    private final Map<String, Long> counters;
    private final long listenerFailures;

    LarderStats(String[] names, long[] values, long listenerFailures) {
        Map<String, Long> m = new LinkedHashMap<>();
        for (int i = 0; i < names.length; i++) {
            m.put(names[i], values[i]);
        }
        this.counters = Collections.unmodifiableMap(m);
        this.listenerFailures = listenerFailures;
    }

    /** Every engine counter by name, in larder.h's order. */
    public Map<String, Long> asMap() {
        return counters;
    }

    /** A counter by its larder.h name; -1 when this engine has no such counter. */
    public long get(String name) {
        Long v = counters.get(name);
        return v == null ? -1 : v;
    }

    /** Reads that found a live value. */
    public long hitCount() {
        return get("hits");
    }

    /** Reads that found nothing (or an expired value). */
    public long missCount() {
        return get("misses");
    }

    /** Reads in all, hits plus misses, as Caffeine's {@code requestCount()}. */
    public long requestCount() {
        long sum = hitCount() + missCount();
        return sum < 0 ? Long.MAX_VALUE : sum; // saturated, as Caffeine's
    }

    /** Hits per read, as Caffeine's {@code hitRate()}: 1.0 before any read. */
    public double hitRate() {
        long requests = requestCount();
        return requests == 0 ? 1.0 : (double) hitCount() / requests;
    }

    /** Misses per read, as Caffeine's {@code missRate()}: 0.0 before any read. */
    public double missRate() {
        long requests = requestCount();
        return requests == 0 ? 0.0 : (double) missCount() / requests;
    }

    /** Successful writes of a new value. */
    public long putCount() {
        return get("writes");
    }

    /** Removals with cause EVICTED. */
    public long evictionCount() {
        return get("evictions");
    }

    /** Removals with cause EXPIRED. */
    public long expireCount() {
        return get("expirations");
    }

    /** Removals with cause EXPLICIT. */
    public long removeCount() {
        return get("removals");
    }

    /** Entries in the index, as the maintainer knows them (it lags writers briefly). */
    public long size() {
        return get("entries");
    }

    /** Bytes of slots allocated to entries, live or awaiting their grace period. */
    public long usedBytes() {
        return get("used_bytes");
    }

    /** The capacity in bytes. */
    public long capacity() {
        return get("capacity_bytes");
    }

    /** Bytes of pages held from the operating system (slabs and large entries). */
    public long mappedBytes() {
        return get("pages_mapped_bytes");
    }

    /** Writes that failed with {@link LarderBusyException}. */
    public long busyCount() {
        return get("write_busy");
    }

    /** Removal-listener calls that threw or could not be made. */
    public long listenerFailures() {
        return listenerFailures;
    }

    @Override
    public String toString() {
        return "LarderStats" + counters + ", listener_failures=" + listenerFailures;
    }
}
