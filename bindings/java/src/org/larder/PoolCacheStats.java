package org.larder;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A snapshot of one cache's figures in its {@link LarderPool}
 * ({@code larder_pool_cache_stats}), every one in {@link #asMap()} under its
 * larder.h name. Rates are over the pool's recent window (a half-life of
 * about 1 s); the estimates read 0 until the cache has seen enough requests.
 */
public final class PoolCacheStats {
    private final Map<String, Double> figures;

    PoolCacheStats(String[] names, double[] values) {
        Map<String, Double> m = new LinkedHashMap<>();
        for (int i = 0; i < names.length; i++) {
            m.put(names[i], values[i]);
        }
        figures = Collections.unmodifiableMap(m);
    }

    /** Every figure by name, in larder.h's order. */
    public Map<String, Double> asMap() {
        return figures;
    }

    /** A figure by its larder.h name; NaN when this engine has no such figure. */
    public double get(String name) {
        Double v = figures.get(name);
        return v == null ? Double.NaN : v;
    }

    /** The cache's capacity now, in bytes. */
    public long capacity() {
        return (long) get("capacity_bytes");
    }

    /** The capacity the pool is moving the cache to, in bytes. */
    public long target() {
        return (long) get("target_bytes");
    }

    /** Estimated extra hits per second one more MiB would bring (not weighted). */
    public double marginalHitsPerMiB() {
        return get("marginal_hits_per_mib");
    }

    /** The cache's weight ({@link LarderCacheBuilder#weight(double)}). */
    public double weight() {
        return get("miss_cost");
    }

    /** The least share of the budget the cache may hold. */
    public double minShare() {
        return get("min_share");
    }

    /** The most share of the budget the cache may hold. */
    public double maxShare() {
        return get("max_share");
    }

    @Override
    public String toString() {
        return "PoolCacheStats" + figures;
    }
}
