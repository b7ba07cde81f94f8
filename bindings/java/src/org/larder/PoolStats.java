package org.larder;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A snapshot of a {@link LarderPool}'s figures ({@code larder_pool_stats}),
 * every one in {@link #asMap()} under its larder.h name; the usual ones also
 * have a getter.
 */
public final class PoolStats {
    /* Indexes in the engine's order (enum larder_pool_stat). */
    static final int CACHES = 2;

    private final Map<String, Long> figures;

    PoolStats(String[] names, long[] values) {
        Map<String, Long> m = new LinkedHashMap<>();
        for (int i = 0; i < names.length; i++) {
            m.put(names[i], values[i]);
        }
        figures = Collections.unmodifiableMap(m);
    }

    /** Every figure by name, in larder.h's order. */
    public Map<String, Long> asMap() {
        return figures;
    }

    /** A figure by its larder.h name; -1 when this engine has no such figure. */
    public long get(String name) {
        Long v = figures.get(name);
        return v == null ? -1 : v;
    }

    /** The budget in bytes. */
    public long budget() {
        return get("budget_bytes");
    }

    /**
     * The most the caches' used bytes together may exceed the budget by:
     * budget / 100 + 4 MiB per open cache.
     */
    public long overshootBound() {
        return get("overshoot_bound");
    }

    /** Caches open in the pool. */
    public long caches() {
        return get("caches");
    }

    /** The caches' capacities summed. */
    public long assignedBytes() {
        return get("assigned_bytes");
    }

    /** The caches' used bytes summed (each read on its own). */
    public long usedBytes() {
        return get("used_bytes");
    }

    /** Capacity steps the controller has moved between caches. */
    public long moves() {
        return get("moves");
    }

    @Override
    public String toString() {
        return "PoolStats" + figures;
    }
}
