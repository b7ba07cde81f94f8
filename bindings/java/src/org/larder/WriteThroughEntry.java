package org.larder;

import java.util.AbstractMap;

/*
 * The entries of LarderCache.entryIterator(): a key and the value it had
 * when the walk reached it, whose setValue(v) puts v into the cache (with
 * the cache's default TTL, as put(key, v)) and then holds it, returning the
 * value it held before, as the entries of Caffeine's asMap().entrySet()
 * iterator do. equals and hashCode are Map.Entry's (key and value).
 */
final class WriteThroughEntry<K, V> extends AbstractMap.SimpleEntry<K, V> {
    private static final long serialVersionUID = 1L;
    private final transient LarderCache<K, V> cache;

    WriteThroughEntry(LarderCache<K, V> cache, K key, V value) {
        super(key, value);
        this.cache = cache;
    }

    /**
     * Puts {@code value} under this entry's key and holds it.
     *
     * @return the value this entry held
     * @throws NullPointerException {@code value} is null (as put's)
     * @throws IllegalStateException the cache is closed
     */
    @Override
    public V setValue(V value) {
        cache.put(getKey(), value);
        return super.setValue(value);
    }
}
