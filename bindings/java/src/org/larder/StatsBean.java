package org.larder;

import java.util.Collections;
import java.util.Map;

/**
 * A cache's {@link LarderCacheMXBean}. It reads through the cache's (guard,
 * generation) pair, never through the LarderCache object, so a registered
 * bean does not keep an abandoned cache reachable (its Cleaner still closes
 * it and unregisters the bean); a closed cache reads as zeros.
 */
final class StatsBean implements LarderCacheMXBean {
    private final long guard;
    private final long gen;
    private final ListenerDispatcher<?, ?> listener;

    StatsBean(long guard, long gen, ListenerDispatcher<?, ?> listener) {
        this.guard = guard;
        this.gen = gen;
        this.listener = listener;
    }

    private long read(String name) {
        LarderStats st = LarderCache.readStats(guard, gen, listener);
        return st == null ? 0 : st.get(name);
    }

    @Override
    public long getHitCount() {
        return read("hits");
    }

    @Override
    public long getMissCount() {
        return read("misses");
    }

    @Override
    public long getPutCount() {
        return read("writes");
    }

    @Override
    public long getEvictionCount() {
        return read("evictions");
    }

    @Override
    public long getExpireCount() {
        return read("expirations");
    }

    @Override
    public long getSize() {
        return read("entries");
    }

    @Override
    public long getUsedBytes() {
        return read("used_bytes");
    }

    @Override
    public long getCapacity() {
        return read("capacity_bytes");
    }

    @Override
    public long getMappedBytes() {
        return read("pages_mapped_bytes");
    }

    @Override
    public long getListenerFailures() {
        LarderStats st = LarderCache.readStats(guard, gen, listener);
        return st == null ? 0 : st.listenerFailures();
    }

    @Override
    public Map<String, Long> getCounters() {
        LarderStats st = LarderCache.readStats(guard, gen, listener);
        return st == null ? Collections.emptyMap() : st.asMap();
    }
}
