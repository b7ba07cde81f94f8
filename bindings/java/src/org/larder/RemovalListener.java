package org.larder;

/**
 * Told of every entry that leaves the cache, with the cause.
 *
 * <p>Called on the cache's maintainer thread (attached to the JVM as a
 * daemon named {@code larder-maintainer}), some time after the removal is
 * visible to readers, with a key and value deserialized from copies. The
 * order of notifications across keys and threads is not the order of the
 * operations. Entries still present at {@code close()} are not reported.
 * A cache of several shards ({@link LarderCacheBuilder#shards(int)}) has a
 * maintainer per shard, and their calls may run at the same time: such a
 * listener must be thread-safe.
 *
 * <p>Keep it short: the maintainer does nothing else meanwhile (no eviction,
 * no expiry, no memory reuse). It may read any cache; a write to its own
 * cache never waits for memory (it fails with {@link LarderBusyException}
 * where it would), and closing its own cache from it throws
 * {@link IllegalStateException}. An exception it throws is caught, counted
 * ({@link LarderStats#listenerFailures()}) and logged once per cache through
 * {@code System.Logger} "org.larder"; it never stops the maintainer.
 *
 * @param <K> key type
 * @param <V> value type
 */
@FunctionalInterface
public interface RemovalListener<K, V> {
    void onRemoval(K key, V value, RemovalCause cause);
}
