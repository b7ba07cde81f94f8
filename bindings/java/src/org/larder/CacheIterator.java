package org.larder;

import java.lang.ref.Reference;
import java.util.NoSuchElementException;
import java.util.function.BiFunction;
import java.util.function.Function;

/*
 * The cursor behind LarderCache.keyIterator() and entryIterator(): one
 * native cursor (larder_iter_*), read one entry ahead. Its methods are
 * synchronized: the engine's cursor is used by one thread at a time (I2 in
 * native/jni_iter.c). Each entry's key and value arrive as fresh arrays and
 * are deserialized here. remove() removes the key next() returned last
 * through the cache, as the iterators of Caffeine's asMap() views do.
 */
final class CacheIterator<K, V, T> implements CloseableIterator<T> {
    private final LarderCache<K, V> cache;
    private final long guard;
    private final long gen;
    private final boolean values;
    private final BiFunction<byte[], byte[], T> element;
    private final Function<T, K> keyOf;
    /* The key of the element next() returned last, until remove() takes it. */
    private K removable;
    private final Object[] pair = new Object[2];
    private long iter;
    private T next;
    /* The cache's close freed the cursor: every later hasNext/next throws, as
     * any call on a closed cache does, until this iterator is closed. */
    private boolean cacheClosed;

    CacheIterator(LarderCache<K, V> cache, long guard, long gen, boolean values,
            BiFunction<byte[], byte[], T> element, Function<T, K> keyOf) {
        this.cache = cache;
        this.guard = guard;
        this.gen = gen;
        this.values = values;
        this.element = element;
        this.keyOf = keyOf;
        long r = Native.iterOpen(guard, gen);
        Reference.reachabilityFence(cache);
        if (r <= 0) {
            throw LarderCache.error((int) r);
        }
        iter = r;
    }

    @Override
    public synchronized boolean hasNext() {
        if (next != null) {
            return true;
        }
        if (iter == 0) {
            if (cacheClosed) {
                throw LarderCache.error(Native.CLOSED);
            }
            return false;
        }
        pair[0] = null;
        pair[1] = null;
        int rc;
        try {
            rc = Native.iterNext(guard, gen, iter, values, pair);
        } finally {
            Reference.reachabilityFence(cache);
        }
        if (rc == Native.MISS) {
            close();
            return false;
        }
        if (rc != Native.OK) {
            if (rc == Native.CLOSED) {
                iter = 0; /* freed by the cache's close */
                cacheClosed = true;
            }
            throw LarderCache.error(rc);
        }
        next = element.apply((byte[]) pair[0], (byte[]) pair[1]);
        return true;
    }

    @Override
    public synchronized T next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        T t = next;
        next = null;
        removable = keyOf.apply(t);
        return t;
    }

    /**
     * Removes the key of the element {@code next()} returned last from the
     * cache (whatever its value is now), as Caffeine's asMap() iterators do;
     * the walk goes on over the rest.
     *
     * @throws IllegalStateException before {@code next()}, or twice for one
     *         element; or the cache is closed
     */
    @Override
    public synchronized void remove() {
        if (removable == null) {
            throw new IllegalStateException("remove() before next(), or twice for one element");
        }
        K key = removable;
        removable = null;
        cache.remove(key);
    }

    @Override
    public synchronized void close() {
        cacheClosed = false;
        if (iter != 0) {
            Native.iterClose(guard, gen, iter);
            Reference.reachabilityFence(cache);
            iter = 0;
        }
    }
}
