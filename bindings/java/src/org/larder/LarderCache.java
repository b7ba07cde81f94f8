package org.larder;

import java.lang.management.ManagementFactory;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * An off-heap cache: keys and values live in larder's native memory, outside
 * the garbage-collected heap, and reads of bytes allocate nothing on the
 * Java heap. Built by {@link LarderCacheBuilder}; the operations follow
 * Cassandra OHC's {@code OHCache} where the meaning is the same.
 *
 * <p><b>Threads.</b> Every method may be called from any number of threads
 * at once. A write is visible to every thread when it returns; a reader sees
 * the old value or the new one, never a mix.
 *
 * <p><b>Reads without allocation.</b> {@link #getInto(Object, byte[])},
 * {@link #getInto(Object, ByteBuffer)}, {@link #getDirect(Object,
 * DirectValueConsumer)}, {@link #getAllInto}, {@link #containsKey(Object)}
 * and {@link #remainingTTLmillis(Object)} allocate 0 heap bytes per call
 * once a thread has made its first call, provided the key serializer
 * allocates nothing (the ready ones for {@code byte[]} and {@code String}
 * do not). {@link #get(Object)} and {@link #getAll(Iterable)} allocate what
 * the value serializer's {@code deserialize} allocates, and the map.
 *
 * <p><b>Errors.</b> A {@code null} key, value or buffer throws
 * {@link NullPointerException} (but {@link #remove(Object, Object)} of a
 * {@code null} value is false, as Caffeine's); an empty key, or a key or value over the
 * cache's limits, {@link IllegalArgumentException} with the limit in the
 * message; any call on a closed cache {@link IllegalStateException}; a write
 * that finds no room in time {@link LarderBusyException}; memory refused by
 * the operating system {@link LarderOutOfMemoryException} (reads too, on a
 * thread's first call on the cache, which allocates the thread's native
 * state; the next call tries again), and so is direct memory the JVM refuses
 * the thread's scratch buffer for a call's key and value (a value near the
 * 1 GiB limit under a small {@code -Xmx}). A {@code put} refused for its
 * value (over a limit, or no room for it: the last three exceptions) removes
 * the key's previous value before it throws (see {@link #put(Object,
 * Object)}); after any other error, a refused conditional write's included,
 * the key's previous value is intact.
 *
 * <p><b>Closing.</b> {@link #close()} is safe while other threads are inside
 * calls on the cache: it refuses new calls at once (they throw
 * {@link IllegalStateException}), waits for the calls in flight to return,
 * then frees the native memory. A cache that becomes unreachable without
 * being closed is closed by a {@link Cleaner}, unless its removal listener
 * refers to it (the listener is held by native code until close).
 *
 * @param <K> key type
 * @param <V> value type
 */
public final class LarderCache<K, V> implements AutoCloseable {
    /** {@link #getInto} and {@link #remainingTTLmillis}: the key is absent. */
    public static final int NOT_FOUND = -1;
    /** A TTL meaning "never expires", and what {@link #remainingTTLmillis} says then. */
    public static final long NEVER_EXPIRE = Long.MAX_VALUE;

    static final Cleaner CLEANER = Cleaner.create();

    private static final int BATCH_KEYS = 256;

    private final long guard;
    private final long gen;
    private final CacheSerializer<K> keySerializer;
    private final CacheSerializer<V> valueSerializer;
    private final int maxKeyBytes;
    private final int maxValueBytes;
    /* True when the serializer is the ready byte[] one: its arrays are then
     * copied directly (Scratch.copyIn/copyOut), as it would copy them, minus
     * the ByteBuffer calls' 4 ns a copy. */
    private final boolean rawKeys;
    private final boolean rawValues;
    /* reads extend the deadline by the default TTL (the builder's expireAfterAccess) */
    private final boolean expireAfterAccess;
    private final ListenerDispatcher<K, V> listener;
    private final Cleaner.Cleanable cleanable;
    private final Object closeLock = new Object();
    private final LarderPool pool;

    LarderCache(LarderCacheBuilder<K, V> b) {
        keySerializer = b.keySerializer;
        valueSerializer = b.valueSerializer;
        maxKeyBytes = b.maxKeyBytes;
        maxValueBytes = b.maxValueBytes;
        expireAfterAccess = b.expireAfterAccess;
        rawKeys = keySerializer == CacheSerializers.BYTE_ARRAY;
        rawValues = valueSerializer == CacheSerializers.BYTE_ARRAY;
        ManualClock clock = b.clock;
        listener = b.removalListener == null ? null
                : new ListenerDispatcher<>(b.removalListener, keySerializer, valueSerializer);
        pool = b.pool;
        long[] out = new long[3];
        long[] settings = b.settings();
        long g;
        if (pool == null) {
            g = Native.open(settings, listener, clock == null ? 0 : clock.cell(), out);
        } else {
            /* Under the pool's lock: the pool cannot close during the open. */
            synchronized (pool.lock()) {
                settings[Native.S_POOL] = pool.address();
                g = Native.open(settings, listener, clock == null ? 0 : clock.cell(), out);
            }
        }
        if (g == 0) {
            int rc = (int) out[1];
            if (rc == Native.EINVAL && out[2] < 0 && pool != null) {
                throw new IllegalArgumentException("larder: the pool cannot take this cache: the"
                        + " min shares of its open caches would sum to over 1, or it cannot give"
                        + " the cache 64 KiB");
            }
            if (rc == Native.EINVAL) {
                throw new IllegalArgumentException("larder refused the setting "
                        + LarderCacheBuilder.settingName((int) out[2]) + ": " + Native.strerror(rc));
            }
            throw error(rc);
        }
        guard = g;
        gen = out[0];
        ObjectName name = null;
        if (b.jmxName != null) {
            try {
                name = register(b.jmxName, new StatsBean(g, gen, listener));
            } catch (RuntimeException e) {
                Native.close(g, gen);
                throw e;
            }
        }
        cleanable = CLEANER.register(this, new Closer(g, gen, clock, name, pool));
    }

    /* ---- Reads ----------------------------------------------------------- */

    /**
     * The value for {@code key}, deserialized, or {@code null} when absent
     * or expired. Allocates what the value serializer's {@code deserialize}
     * allocates.
     */
    public V get(K key) {
        Scratch s = Scratch.acquire();
        try {
            int keyLen = readKey(s, key);
            int valueOff = valueOffset(keyLen);
            for (;;) {
                long r = nativeGet(s, keyLen, valueOff, s.capacity - valueOff);
                if (r >= 0) {
                    return readValue(s, valueOff, (int) r);
                }
                if (r == Native.GET_MISS) {
                    return null;
                }
                s.ensure(valueOff + (long) needed(r), Math.min(keyLen, valueOff));
            }
        } finally {
            s.release();
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Copies the value for {@code key} into {@code dst} from index 0 and
     * returns its length; {@link #NOT_FOUND} when absent. When the value is
     * longer than {@code dst}, copies nothing and returns its length: call
     * again with a large enough array. Allocates nothing.
     */
    public int getInto(K key, byte[] dst) {
        Objects.requireNonNull(dst, "dst");
        Scratch s = Scratch.acquire();
        try {
            int keyLen = readKey(s, key);
            int valueOff = valueOffset(keyLen);
            int len = readInto(s, keyLen, valueOff, dst.length);
            if (len >= 0 && len <= dst.length) {
                s.copyOut(valueOff, dst, 0, len);
            }
            return len;
        } finally {
            s.release();
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Copies the value for {@code key} into {@code dst} at its position,
     * advancing it, and returns the value's length; {@link #NOT_FOUND} when
     * absent. When the value is longer than {@code dst.remaining()}, copies
     * nothing, leaves the position, and returns the length. Allocates
     * nothing.
     *
     * @throws ReadOnlyBufferException {@code dst} is read-only
     */
    public int getInto(K key, ByteBuffer dst) {
        Objects.requireNonNull(dst, "dst");
        if (dst.isReadOnly()) {
            throw new ReadOnlyBufferException();
        }
        Scratch s = Scratch.acquire();
        try {
            int keyLen = readKey(s, key);
            int valueOff = valueOffset(keyLen);
            int len = readInto(s, keyLen, valueOff, dst.remaining());
            if (len >= 0 && len <= dst.remaining()) {
                if (dst.hasArray()) {
                    s.copyOut(valueOff, dst.array(), dst.arrayOffset() + dst.position(), len);
                    dst.position(dst.position() + len);
                } else {
                    s.buf.limit(valueOff + len).position(valueOff);
                    dst.put(s.buf);
                }
            }
            return len;
        } finally {
            s.release();
            Reference.reachabilityFence(this);
        }
    }

    /*
     * Reads the value into s at valueOff when it is at most max bytes long,
     * growing s when the value needs it (keeping the key, if it is in s);
     * returns its length (whether or not it was copied) or NOT_FOUND.
     */
    private int readInto(Scratch s, int keyLen, int valueOff, int max) {
        for (;;) {
            long r = nativeGet(s, keyLen, valueOff, Math.min(max, s.capacity - valueOff));
            if (r >= 0) {
                return (int) r;
            }
            if (r == Native.GET_MISS) {
                return NOT_FOUND;
            }
            int needed = needed(r);
            if (needed > max) {
                return needed;
            }
            s.ensure(valueOff + (long) needed, Math.min(keyLen, valueOff));
        }
    }

    /**
     * Hands the stored bytes of {@code key}'s value, in place, to
     * {@code consumer} and returns true; false (consumer not called) when
     * absent. The view is valid only during {@code accept} (see
     * {@link ValueView}); the bytes stay unchanged meanwhile even if another
     * thread overwrites or removes the key. Keep the consumer short: it
     * delays the reuse of the cache's memory. It may read any cache;
     * {@code close()} from inside it throws {@link IllegalStateException}.
     * Allocates nothing (with a reused consumer). An exception the consumer
     * throws reaches the caller.
     */
    public boolean getDirect(K key, DirectValueConsumer consumer) {
        Objects.requireNonNull(consumer, "consumer");
        Scratch s = Scratch.acquire();
        try {
            int keyLen = writeKey(s, key);
            s.view.consumer = consumer;
            int rc = Native.getDirect(guard, gen, s.address, keyLen, s.view);
            if (rc == Native.OK) {
                return true;
            }
            if (rc == Native.MISS) {
                return false;
            }
            throw failure(rc, keyLen, 0);
        } finally {
            s.view.consumer = null;
            s.release();
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Looks up {@code keys[0..count-1]} in one batch (the engine hashes them
     * all and prefetches before it reads any) and copies each value found
     * into {@code values[i]} from index 0. Sets {@code lengths[i]} to the
     * value's length, or {@link #NOT_FOUND}; a value longer than
     * {@code values[i]} is not copied (its length is still set). Returns how
     * many were found. Allocates nothing.
     */
    public int getAllInto(K[] keys, int count, byte[][] values, int[] lengths) {
        Objects.checkFromIndexSize(0, count, keys.length);
        Objects.checkFromIndexSize(0, count, values.length);
        Objects.checkFromIndexSize(0, count, lengths.length);
        /* Before any batch: a null found later threw after the batches before
         * it had counted their hits and misses. */
        for (int i = 0; i < count; i++) {
            Objects.requireNonNull(keys[i], "key");
            Objects.requireNonNull(values[i], "values[i]");
        }
        Scratch s = Scratch.acquire();
        try {
            checkLaterBatches(s, keys, count);
            int found = 0;
            /* At least one batch, of no keys when count is 0: its native call is
             * what refuses a closed cache. */
            int first = 0;
            do {
                int n = Math.min(BATCH_KEYS, count - first);
                found += batch(s, keys, first, n);
                for (int i = 0; i < n; i++) {
                    int off = s.table.getInt(8 * (n + i));
                    int len = s.table.getInt(8 * (n + i) + 4);
                    byte[] dst = values[first + i];
                    if (off >= 0 && len >= 0 && len <= dst.length) {
                        s.copyOut(off, dst, 0, len);
                    }
                    lengths[first + i] = len;
                }
                /* Then the values past the batch's buffer: their reads overwrite it. */
                for (int i = 0; i < n; i++) {
                    byte[] dst = values[first + i];
                    int len = lengths[first + i];
                    if (s.table.getInt(8 * (n + i)) < 0 && len <= dst.length) {
                        int keyLen = s.table.getInt(8 * i + 4);
                        len = peekAfterTables(s, n, keys[first + i], keyLen, dst.length);
                        if (len == NOT_FOUND) {
                            found--; /* gone since the batch */
                        } else if (len <= dst.length) {
                            s.copyOut(Scratch.lineAfter(16 * n + keyLen), dst, 0, len);
                        }
                        lengths[first + i] = len;
                    }
                }
                first += n;
            } while (first < count);
            return found;
        } finally {
            s.release();
            Reference.reachabilityFence(this);
        }
    }

    /**
     * The values of the keys present, deserialized, looked up in batches
     * (see {@link #getAllInto}); allocates the map and the values. A key
     * given more than once (by {@code equals}) is looked up, and counted as
     * a hit or a miss, once. As Caffeine's {@code getAllPresent}'s, the map
     * is unmodifiable ({@code put} and {@code remove} on it throw
     * {@link UnsupportedOperationException}) and iterates in the order the
     * keys were first given.
     */
    public Map<K, V> getAll(Iterable<? extends K> keys) {
        Set<K> distinct = new LinkedHashSet<>();
        for (K k : keys) {
            distinct.add(Objects.requireNonNull(k, "key"));
        }
        Object[] array = distinct.toArray();
        /* Found values by key position, so that the map follows the keys'
         * order although the values past a batch's buffer are read last;
         * found[] because a deserializer may return null. */
        Object[] values = new Object[array.length];
        boolean[] found = new boolean[array.length];
        int hits = 0;
        Scratch s = Scratch.acquire();
        try {
            checkLaterBatches(s, array, array.length);
            int first = 0;
            do { // at least one batch, as in getAllInto
                int n = Math.min(BATCH_KEYS, array.length - first);
                batch(s, array, first, n);
                for (int i = 0; i < n; i++) {
                    int off = s.table.getInt(8 * (n + i));
                    int len = s.table.getInt(8 * (n + i) + 4);
                    if (len >= 0 && off >= 0) {
                        values[first + i] = readValue(s, off, len);
                        found[first + i] = true;
                        hits++;
                    }
                }
                /* Then the values past the batch's buffer: their reads overwrite it. */
                for (int i = 0; i < n; i++) {
                    if (s.table.getInt(8 * (n + i)) < 0) {
                        @SuppressWarnings("unchecked")
                        K key = (K) array[first + i];
                        int keyLen = s.table.getInt(8 * i + 4);
                        int len = peekAfterTables(s, n, key, keyLen, Integer.MAX_VALUE);
                        if (len != NOT_FOUND) {
                            int at = Scratch.lineAfter(16 * n + keyLen);
                            values[first + i] = readValue(s, at, len);
                            found[first + i] = true;
                            hits++;
                        }
                    }
                }
                first += n;
            } while (first < array.length);
        } finally {
            s.release();
            Reference.reachabilityFence(this);
        }
        Map<K, V> result = new LinkedHashMap<>(hits * 4 / 3 + 1);
        for (int i = 0; i < array.length; i++) {
            if (found[i]) {
                @SuppressWarnings("unchecked")
                K key = (K) array[i];
                @SuppressWarnings("unchecked")
                V value = (V) values[i];
                result.put(key, value);
            }
        }
        return Collections.unmodifiableMap(result);
    }

    /*
     * The keys of the batches after the first, checked before the first
     * reads: a key the limits refuse (empty, over maxKeyBytes), or one whose
     * serializer throws, threw from its own batch, after the batches before
     * it had counted their hits and misses, where Caffeine's getAllPresent
     * refuses a bad key before it reads any. Each is serialized (at offset
     * 0 of s, which the first batch then overwrites), so a key of a later
     * batch is serialized twice; the ready byte[] serializer's copy cannot
     * throw, so its keys are only measured. The first batch checks and
     * serializes its own keys before it reads (batch()), so a call of up to
     * BATCH_KEYS keys costs nothing here.
     */
    private void checkLaterBatches(Scratch s, Object[] keys, int count) {
        for (int i = BATCH_KEYS; i < count; i++) {
            @SuppressWarnings("unchecked")
            K key = (K) keys[i];
            if (rawKeys) {
                keySize(key);
            } else {
                writeKey(s, key);
            }
        }
    }

    /*
     * A value of an n-key batch found past the batch's buffer, read again
     * by a peek: the batch has counted its hit and extended its deadline
     * already, and a get would do both twice (Caffeine's getAllPresent counts
     * one per key). The key goes right after the batch's two tables, the
     * value on the line after it (Scratch.lineAfter(16 * n + keyLen)), so
     * the batch's other values must be copied out first. Returns the length
     * (the value copied only when at most max) or NOT_FOUND: the key has
     * gone since the batch.
     */
    private int peekAfterTables(Scratch s, int n, K key, int keyLen, int max) {
        int at = 16 * n;
        int valueOff = Scratch.lineAfter(at + keyLen);
        s.ensure(valueOff, at);
        writeKeyAt(s, key, at, keyLen);
        for (;;) {
            long r = Native.peek(guard, gen, s.address + at, keyLen, s.address + valueOff,
                    Math.min(max, s.capacity - valueOff));
            if (r >= 0) {
                return (int) r;
            }
            if (r == Native.GET_MISS) {
                return NOT_FOUND;
            }
            int needed = needed(r);
            if (needed > max) {
                return needed;
            }
            s.ensure(valueOff + (long) needed, at + keyLen);
        }
    }

    /*
     * One native batch of keys[first .. first+n-1]. Scratch layout: the key
     * table (n pairs of int offset, length), the result table (n pairs), the
     * keys, then the values area to the end. Returns the number found.
     */
    private int batch(Scratch s, Object[] keys, int first, int n) {
        int keyTable = 0, outTable = 8 * n;
        int pos = 16 * n;
        s.ensure(pos, 0);
        // Two passes: the sizes first, so that every key's first load (a
        // cache miss each in a large working set) is independent of the
        // others and they overlap; the copies then find the keys in cache.
        for (int i = 0; i < n; i++) {
            @SuppressWarnings("unchecked")
            K key = (K) keys[first + i];
            s.table.putInt(keyTable + 8 * i + 4, keySize(key));
        }
        for (int i = 0; i < n; i++) {
            @SuppressWarnings("unchecked")
            K key = (K) keys[first + i];
            int len = s.table.getInt(keyTable + 8 * i + 4);
            s.ensure((long) pos + len, pos);
            writeKeyAt(s, key, pos, len);
            s.table.putInt(keyTable + 8 * i, pos);
            pos += len;
        }
        int values = Scratch.lineAfter(pos);
        s.ensure((long) values + Scratch.INITIAL_BYTES, pos);
        int found = Native.getBatch(guard, gen, s.address, n, keyTable, outTable, values,
                s.capacity - values);
        if (found < 0) {
            throw failure(found, 0, 0);
        }
        return found;
    }

    /**
     * An iterator over the keys of the live entries, in the cache's hash
     * order, weakly consistent like a concurrent map's: it never blocks
     * readers or writers; every key live from the call to the end is
     * returned exactly once, none twice, none that was expired or removed
     * when it is reached; a key written or removed meanwhile may or may not
     * be. Iterating is not reading: no hits are counted, nothing is marked
     * accessed and no deadline is extended. Allocates each key. Its
     * {@code remove()} removes the key it returned last, as Caffeine's
     * {@code asMap().keySet()} iterator's. Use it from one thread at a time;
     * close it when stopping early (see {@link CloseableIterator}).
     *
     * @throws IllegalStateException the cache is closed (also from
     *         {@code hasNext}/{@code next} once it is)
     */
    public CloseableIterator<K> keyIterator() {
        return new CacheIterator<>(this, guard, gen, false,
                (k, v) -> deserialize(keySerializer, k), k -> k);
    }

    /**
     * An iterator over the live entries as (key, value) pairs, with the
     * promises of {@link #keyIterator()}; each value is the one the entry
     * had when reached. Allocates each entry. As Caffeine's
     * {@code asMap().entrySet()} iterator's, an entry's {@code setValue(v)}
     * writes through ({@code put(key, v)}) and returns its old value, and
     * {@code remove()} removes the key returned last.
     */
    public CloseableIterator<Map.Entry<K, V>> entryIterator() {
        return new CacheIterator<>(this, guard, gen, true,
                (k, v) -> new WriteThroughEntry<>(this, deserialize(keySerializer, k),
                        deserialize(valueSerializer, v)), Map.Entry::getKey);
    }

    @SuppressWarnings("unchecked")
    private static <T> T deserialize(CacheSerializer<T> serializer, byte[] bytes) {
        if (serializer == CacheSerializers.BYTE_ARRAY) {
            return (T) bytes;
        }
        return serializer.deserialize(ByteBuffer.wrap(bytes));
    }

    /** True when a live value is present for {@code key}. Allocates nothing. */
    public boolean containsKey(K key) {
        Scratch s = Scratch.acquire();
        try {
            int keyLen = writeKey(s, key);
            int rc = Native.contains(guard, gen, s.address, keyLen);
            if (rc == Native.OK || rc == Native.MISS) {
                return rc == Native.OK;
            }
            throw failure(rc, keyLen, 0);
        } finally {
            s.release();
            Reference.reachabilityFence(this);
        }
    }

    /**
     * The remaining lifetime of {@code key}'s entry in milliseconds (a live
     * entry has at least 1 left), {@link #NEVER_EXPIRE} when it has no TTL,
     * or {@link #NOT_FOUND} when absent. Allocates nothing.
     */
    public long remainingTTLmillis(K key) {
        Scratch s = Scratch.acquire();
        try {
            int keyLen = writeKey(s, key);
            long r = Native.ttlRemaining(guard, gen, s.address, keyLen);
            if (r >= 0) {
                return r;
            }
            if (r == Native.GET_MISS) {
                return NOT_FOUND;
            }
            throw failure((int) (r - Native.GET_ERR_BASE), keyLen, 0);
        } finally {
            s.release();
            Reference.reachabilityFence(this);
        }
    }

    /* ---- Writes ---------------------------------------------------------- */

    /**
     * Stores the value with the cache's default TTL, replacing any previous
     * one. A put refused for its value (over {@code maxValueBytes} or the
     * entry limit: {@link IllegalArgumentException}; no room:
     * {@link LarderBusyException}, {@link LarderOutOfMemoryException})
     * removes the previous value before it throws, as OHC does, so that a
     * failed write never leaves the old value to be read.
     */
    public void put(K key, V value) {
        write(Native.OP_PUT, key, value, null, Native.TTL_DEFAULT);
    }

    /**
     * Stores the value with its own time to live, replacing any previous
     * one (a refused put removes it, as in {@link #put(Object, Object)}).
     * {@code ttl} > 0, rounded up to whole milliseconds, or
     * {@link #NEVER_EXPIRE}. (Not OHC's {@code put(k, v, expireAt)}: this is
     * a duration from now, not a point in time.)
     */
    public void put(K key, V value, long ttl, TimeUnit unit) {
        write(Native.OP_PUT, key, value, null, ttlArg(ttl, unit));
    }

    /**
     * Stores only if no live value is present; true if stored. With
     * expireAfterAccess, finding a live value is an access that moves its
     * deadline as a get does (as Caffeine's {@code asMap().putIfAbsent}):
     * to the default TTL from now, never earlier, and an entry without a
     * deadline keeps none. Like a get's, that access is never refused: a
     * present key gives false, never an exception, also at the entry limit.
     */
    public boolean putIfAbsent(K key, V value) {
        return addOrAccess(key, value, Native.TTL_DEFAULT);
    }

    /** {@link #putIfAbsent(Object, Object)} with a TTL as in {@link #put(Object, Object, long, TimeUnit)}. */
    public boolean putIfAbsent(K key, V value, long ttl, TimeUnit unit) {
        return addOrAccess(key, value, ttlArg(ttl, unit));
    }

    /*
     * A putIfAbsent that finds the key has read it (Caffeine's asMap()
     * returns the present value): with expireAfterAccess that is an access,
     * which moves the deadline as a get does (OP_ACCESS: larder_access, a
     * read's effects without its copy or its hit). Counts no hit, as in
     * Caffeine. Not a touch: a touch shortens a longer deadline, gives one
     * to an entry without one, and is refused (EVALSIZE) when those 8 bytes
     * take the entry over the entry limit, which made a putIfAbsent that
     * found such a key throw.
     */
    private boolean addOrAccess(K key, V value, long ttl) {
        int r = write(Native.OP_PUT_IF_ABSENT, key, value, null, ttl);
        if (r == Native.EXISTS && expireAfterAccess) {
            write(Native.OP_ACCESS, key, null, null, 0);
        }
        return r == Native.OK;
    }

    /** Stores only if a live value is present; true if stored. */
    public boolean replace(K key, V value) {
        return write(Native.OP_REPLACE, key, value, null, Native.TTL_DEFAULT) == Native.OK;
    }

    /**
     * Compare-and-set: stores {@code value} only if a live value is present
     * and its bytes equal {@code oldValue}'s; true if stored. An
     * {@code oldValue} over {@code maxValueBytes} equals no stored value:
     * false, found without serializing it.
     */
    public boolean replace(K key, V oldValue, V value) {
        Objects.requireNonNull(oldValue, "oldValue");
        return write(Native.OP_REPLACE_IF_EQUALS, key, value, oldValue, Native.TTL_DEFAULT)
                == Native.OK;
    }

    /**
     * As in OHC: stores {@code value} if the key is absent, or if its
     * current value's bytes equal {@code old}'s; false if a different value
     * is present (an {@code old} over {@code maxValueBytes} equals no stored
     * value, as in {@link #replace(Object, Object, Object)}).
     */
    public boolean addOrReplace(K key, V old, V value) {
        return addOrReplace(key, old, value, Native.TTL_DEFAULT);
    }

    /** {@link #addOrReplace(Object, Object, Object)} with a TTL as in {@link #put(Object, Object, long, TimeUnit)}. */
    public boolean addOrReplace(K key, V old, V value, long ttl, TimeUnit unit) {
        return addOrReplace(key, old, value, ttlArg(ttl, unit));
    }

    private boolean addOrReplace(K key, V old, V value, long ttl) {
        Objects.requireNonNull(old, "old");
        for (;;) {
            int rc = write(Native.OP_REPLACE_IF_EQUALS, key, value, old, ttl);
            if (rc != Native.MISS) {
                return rc == Native.OK;
            }
            /* Absent: add it, unless another thread added a value meanwhile,
             * which must then be compared again. */
            if (write(Native.OP_PUT_IF_ABSENT, key, value, null, ttl) == Native.OK) {
                return true;
            }
        }
    }

    /** Removes the key; true if a live value was removed. */
    public boolean remove(K key) {
        return write(Native.OP_REMOVE, key, null, null, 0) == Native.OK;
    }

    /**
     * Removes the key only if its value's bytes equal {@code value}'s; true if
     * removed. A null {@code value} is never present: false, as Caffeine's
     * {@code asMap().remove(key, null)} and {@code ConcurrentHashMap}'s (the
     * key is still checked, and a closed cache still throws); neither is one
     * over {@code maxValueBytes}, found without serializing it.
     */
    public boolean remove(K key, V value) {
        if (value == null) {
            containsKey(key);
            return false;
        }
        return write(Native.OP_REMOVE_IF_EQUALS, key, null, value, 0) == Native.OK;
    }

    /**
     * Gives a live entry the cache's default TTL from now (with no default
     * TTL, it no longer expires); true if present. Throws
     * IllegalArgumentException when the entry has no deadline and the 8 bytes
     * of one would take it over the entry limit (1/8 of the capacity): the
     * entry is kept as it was.
     */
    public boolean touch(K key) {
        return write(Native.OP_TOUCH, key, null, null, Native.TTL_DEFAULT) == Native.OK;
    }

    /**
     * Gives a live entry a new TTL from now (as in
     * {@link #put(Object, Object, long, TimeUnit)}); true if present. Throws
     * as {@link #touch(Object)} at the entry limit.
     */
    public boolean touch(K key, long ttl, TimeUnit unit) {
        return write(Native.OP_TOUCH, key, null, null, ttlArg(ttl, unit)) == Native.OK;
    }

    /*
     * Serializes key, value and expected (either may be null) into the
     * scratch space and runs one write; returns OK or a status (MISS,
     * EXISTS, MISMATCH), throws on an error.
     */
    private int write(int op, K key, V value, V expected, long ttl) {
        if (op <= Native.OP_REPLACE_IF_EQUALS) {
            Objects.requireNonNull(value, "value");
        }
        Scratch s = Scratch.acquire();
        try {
            int keyLen = writeKey(s, key);
            int valueOff = align(keyLen), valueLen = 0;
            if (value != null) {
                valueLen = valueSerializer.serializedSize(value);
                if (valueLen < 0 || valueLen > maxValueBytes) {
                    throw refused(op, s, keyLen, new IllegalArgumentException("larder: a value of "
                            + valueLen + " bytes is over the cache's limit of " + maxValueBytes
                            + " bytes (maxValueBytes)"));
                }
                try {
                    s.ensure((long) valueOff + valueLen, keyLen);
                } catch (LarderOutOfMemoryException e) {
                    /* No room for the value on the Java side: refused as the engine's ENOMEM. */
                    throw refused(op, s, keyLen, e);
                }
                writeValueAt(s, value, valueOff, valueLen);
            }
            int expectedOff = align(valueOff + valueLen), expectedLen = 0;
            if (expected != null) {
                expectedLen = valueSerializer.serializedSize(expected);
                if (expectedLen > maxValueBytes) {
                    return unequal(s, keyLen);
                }
                s.ensure((long) expectedOff + expectedLen, expectedOff);
                writeValueAt(s, expected, expectedOff, expectedLen);
            }
            int rc = Native.write(guard, gen, op, s.address, keyLen, s.address + valueOff,
                    valueLen, s.address + expectedOff, expectedLen, ttl);
            if (rc < 0) {
                RuntimeException e = op == Native.OP_TOUCH && rc == Native.EVALSIZE
                        ? new IllegalArgumentException("larder: touch: the deadline's 8 bytes"
                                + " would take the entry over the entry limit (1/8 of the"
                                + " capacity); the entry is kept as it was, without a deadline")
                        : failure(rc, keyLen, valueLen);
                throw rc == Native.EVALSIZE || rc == Native.ENOMEM || rc == Native.EBUSY
                        ? refused(op, s, keyLen, e) : e;
            }
            return rc;
        } finally {
            s.release();
            Reference.reachabilityFence(this);
        }
    }

    /*
     * A compare whose expected value is over maxValueBytes: no stored value
     * can equal it, so the answer is the key's presence alone (MISMATCH or
     * MISS), found without copying that value into the scratch space, where
     * one near the 1 GiB limit was refused for direct memory. Like a compare
     * that finds another value, it is no access and counts no hit.
     */
    private int unequal(Scratch s, int keyLen) {
        int rc = Native.contains(guard, gen, s.address, keyLen);
        if (rc == Native.OK) {
            return Native.MISMATCH;
        }
        if (rc == Native.MISS) {
            return rc;
        }
        throw failure(rc, keyLen, 0);
    }

    /*
     * A put refused for its value (too large, or no memory for it) removes
     * the key's previous value before the refusal is thrown, as OHC and
     * memcached do: a caller whose write failed must not go on reading the
     * value it meant to replace. Conditional writes keep it (they promised
     * nothing about the old value). The key is still in the scratch space.
     */
    private RuntimeException refused(int op, Scratch s, int keyLen, RuntimeException e) {
        if (op == Native.OP_PUT) {
            int rc = Native.write(guard, gen, Native.OP_REMOVE, s.address, keyLen, 0, 0, 0, 0, 0);
            if (rc < 0) {
                e.addSuppressed(error(rc));
            }
        }
        return e;
    }

    /* ---- The whole cache ------------------------------------------------- */

    /**
     * Removes every entry (cause {@link RemovalCause#CLEARED}; an entry
     * already past its deadline, not yet reaped, as
     * {@link RemovalCause#EXPIRED}, as Caffeine reports it); the memory is
     * freed in the background.
     */
    public void clear() {
        try {
            int rc = Native.clear(guard, gen);
            if (rc != Native.OK) {
                throw failure(rc, 0, 0);
            }
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Changes the capacity (>= {@link LarderCacheBuilder#MIN_CAPACITY});
     * when shrinking, the maintainer evicts down to it promptly.
     *
     * @throws IllegalStateException the cache is in a pool (the pool sets
     *         its capacity), or closed
     */
    public void setCapacity(long capacity) {
        LarderCacheBuilder.checkCapacity(capacity);
        try {
            int rc = Native.setCapacity(guard, gen, capacity);
            if (rc == Native.ESTATE) {
                throw new IllegalStateException("larder: the cache is in a pool, which sets its"
                        + " capacity (see LarderCacheBuilder.minShare/maxShare)");
            }
            if (rc != Native.OK) {
                throw failure(rc, 0, 0);
            }
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The capacity in bytes. */
    public long capacity() {
        return stats().capacity();
    }

    /**
     * The number of entries, as the maintainer knows them: it lags writers by
     * a batching window (about 200 us per shard, at most 1 ms; up to 8 ms
     * when writes trickle in); after {@link #cleanUp()} it counts
     * every write made before that call.
     */
    public long size() {
        return stats().size();
    }

    /** How long {@link #cleanUp()} waits for the maintainer at most. */
    static final long CLEAN_UP_WAIT_MILLIS = 60_000;

    /**
     * Waits until the maintainer has applied every write, removal and clear
     * made before the call, on any thread, so that {@link #size()} and
     * {@link #stats()} count them; Caffeine's {@code cleanUp()} (the engine's
     * {@code larder_flush}), and the evictions and expiries then due. Costs a
     * wake-up of the maintainer and one pass of it per shard when nothing is
     * due (tens of microseconds on an idle machine); beside writers that keep
     * the cache at its memory bound, the passes that evict the excess at the
     * call (a few milliseconds: README, Limits).
     *
     * @throws LarderBusyException the maintainer did not finish within a
     *         minute (stuck in a removal listener, or given no CPU)
     * @throws IllegalStateException called inside a removal listener or a
     *         {@link DirectValueConsumer}, where waiting for the maintainer
     *         could deadlock; or the cache is closed
     */
    public void cleanUp() {
        try {
            int rc = Native.flush(guard, gen, CLEAN_UP_WAIT_MILLIS);
            if (rc == Native.ESTATE) {
                /* The engine's one reason for ESTATE here; its generic text names pools. */
                throw new IllegalStateException("larder: cleanUp() inside a removal listener"
                        + " (of any cache) or a DirectValueConsumer could wait for itself");
            }
            if (rc != Native.OK) {
                throw error(rc);
            }
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Bytes in use by entries (as OHC's {@code memUsed}). */
    public long memUsed() {
        return stats().usedBytes();
    }

    /** Capacity minus bytes in use, at least 0 (as OHC's {@code freeCapacity}). */
    public long freeCapacity() {
        LarderStats st = stats();
        return Math.max(0, st.capacity() - st.usedBytes());
    }

    /** A snapshot of the counters (allocates it). */
    public LarderStats stats() {
        try {
            LarderStats st = readStats(guard, gen, listener);
            if (st == null) {
                throw failure(Native.CLOSED, 0, 0);
            }
            return st;
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The pool this cache draws its capacity from, or null. */
    public LarderPool pool() {
        return pool;
    }

    /**
     * The cache's figures in its pool: capacity, the target the pool moves
     * it to, estimated marginal hits, weight and shares (allocates them).
     *
     * @throws IllegalStateException the cache is in no pool, or closed
     */
    public PoolCacheStats poolStats() {
        if (pool == null) {
            throw new IllegalStateException("larder: the cache is in no pool");
        }
        String[] names = LarderPool.Names.CACHE;
        double[] v = new double[names.length];
        try {
            int rc = Native.poolCacheStats(guard, gen, v);
            if (rc != Native.OK) {
                throw failure(rc, 0, 0);
            }
        } finally {
            Reference.reachabilityFence(this);
        }
        return new PoolCacheStats(names, v);
    }

    /** The slab's figures per size class, smallest slots first (memory audit). */
    public List<SizeClassStats> sizeClassStats() {
        String[] names = Native.classStatNames();
        int classes = Native.classCount();
        long[] v = new long[classes * names.length];
        try {
            int rc = Native.classStats(guard, gen, v);
            if (rc != Native.OK) {
                throw failure(rc, 0, 0);
            }
        } finally {
            Reference.reachabilityFence(this);
        }
        List<SizeClassStats> list = new ArrayList<>(classes);
        for (int i = 0; i < classes; i++) {
            list.add(new SizeClassStats(names, v, i * names.length));
        }
        return Collections.unmodifiableList(list);
    }

    /* The engine's counter names, read once (the library is loaded by then). */
    private static final class StatNames {
        static final String[] NAMES = Native.statNames();
    }

    /* Null when the cache is closed. */
    static LarderStats readStats(long guard, long gen, ListenerDispatcher<?, ?> listener) {
        String[] names = StatNames.NAMES;
        long[] v = new long[names.length + 1];
        int rc = Native.stats(guard, gen, v);
        if (rc == Native.CLOSED) {
            return null;
        }
        if (rc != Native.OK) {
            throw error(rc);
        }
        long failures = v[names.length] + (listener == null ? 0 : listener.failures());
        return new LarderStats(names, v, failures);
    }

    /**
     * Closes the cache: new calls throw {@link IllegalStateException} at
     * once, calls in flight on any thread finish first, then the native
     * memory is freed and the maintainer stops. Entries still present are
     * not reported to the removal listener. Closing twice is a no-op.
     *
     * @throws IllegalStateException when called from inside a
     *         {@link DirectValueConsumer} (of any cache), which would wait
     *         for itself, or from this cache's own removal listener
     */
    @Override
    public void close() {
        /* Refused before the lock: a consumer or listener waiting for it while
         * another thread's close() holds it and waits for that consumer's
         * call (or joins that listener's maintainer) hung both. */
        refuseClose(Native.closeRefusal(guard, gen));
        synchronized (closeLock) {
            refuseClose(Native.close(guard, gen));
            cleanable.clean();
        }
    }

    /* ---- Helpers ----------------------------------------------------------- */

    private static void refuseClose(int rc) {
        if (rc == Native.IN_CALLBACK) {
            throw new IllegalStateException(
                    "larder: close() inside a DirectValueConsumer would wait for itself");
        }
        if (rc == Native.IN_LISTENER) {
            throw new IllegalStateException(
                    "larder: a cache cannot be closed from its own removal listener");
        }
    }

    private static int align(int offset) {
        return (offset + 7) & ~7;
    }

    /* The length a get() result says a value needs (GET_BUFSIZE), or throws. */
    private int needed(long r) {
        if (r <= Native.GET_BUFSIZE_BASE) {
            return (int) (Native.GET_BUFSIZE_BASE - r);
        }
        throw failure((int) (r - Native.GET_ERR_BASE), 0, 0);
    }

    private int keySize(K key) {
        Objects.requireNonNull(key, "key");
        int len = keySerializer.serializedSize(key);
        if (len < 1) {
            throw new IllegalArgumentException("larder: a key must have at least 1 byte: " + len);
        }
        if (len > maxKeyBytes) {
            throw new IllegalArgumentException("larder: a key of " + len
                    + " bytes is over the cache's limit of " + maxKeyBytes + " bytes (maxKeyBytes)");
        }
        return len;
    }

    /*
     * The key of a get: a raw key of up to 16 bytes goes in two longs
     * (Scratch.keyInLongs, Native.getShort), anything else is serialized at
     * offset 0 of s. Returns its length.
     */
    private int readKey(Scratch s, K key) {
        if (rawKeys && ((byte[]) Objects.requireNonNull(key, "key")).length <= 16) {
            int len = keySize(key);
            s.keyInLongs((byte[]) key);
            return len;
        }
        return writeKey(s, key);
    }

    /* Where a get's value goes: the start of s when the key is in longs, else
     * the first cache line after the key (see Scratch). */
    private int valueOffset(int keyLen) {
        return rawKeys && keyLen <= 16 ? 0 : Scratch.lineAfter(keyLen);
    }

    private long nativeGet(Scratch s, int keyLen, int valueOff, int cap) {
        if (rawKeys && keyLen <= 16) {
            return Native.getShort(guard, gen, s.k0, s.k1, keyLen, s.address + valueOff, cap);
        }
        return Native.get(guard, gen, s.address, keyLen, s.address + valueOff, cap);
    }

    /* Serializes key at offset 0 of s; returns its length. The value area
     * that follows (from lineAfter(len)) may be empty but is never negative. */
    private int writeKey(Scratch s, K key) {
        int len = keySize(key);
        s.ensure(Scratch.lineAfter(len), 0);
        writeKeyAt(s, key, 0, len);
        return len;
    }

    private void writeKeyAt(Scratch s, K key, int at, int len) {
        if (rawKeys) {
            s.copyIn((byte[]) key, 0, len, at);
        } else {
            serialize(keySerializer, key, s, at, len);
        }
    }

    /* Deserializes the value at s[at, at + len); the ready byte[] serializer's
     * copy is made directly (Scratch.copyOut). */
    @SuppressWarnings("unchecked")
    private V readValue(Scratch s, int at, int len) {
        if (rawValues) {
            byte[] v = new byte[len];
            s.copyOut(at, v, 0, len);
            return (V) v;
        }
        return valueSerializer.deserialize(s.forSerializer(at, len));
    }

    private void writeValueAt(Scratch s, V value, int at, int len) {
        if (rawValues) {
            s.copyIn((byte[]) value, 0, len, at);
        } else {
            serialize(valueSerializer, value, s, at, len);
        }
    }

    /*
     * Runs the serializer on the scratch's [offset, offset + len); one that
     * wrote other than the len bytes its serializedSize said, or said a
     * negative size (only an expected value gets here unchecked), is refused
     * by name rather than by the ByteBuffer's own exceptions.
     */
    private static <T> void serialize(CacheSerializer<T> serializer, T value, Scratch s,
            int offset, int len) {
        if (len < 0) {
            throw new IllegalArgumentException("larder: the serializer's serializedSize said "
                    + len + " bytes");
        }
        ByteBuffer buf = s.forSerializer(offset, len);
        try {
            serializer.serialize(value, buf);
        } catch (BufferOverflowException e) {
            throw new IllegalStateException("larder: the serializer wrote more than the " + len
                    + " bytes serializedSize said", e);
        }
        if (buf.position() != offset + len) {
            throw new IllegalStateException("larder: the serializer wrote "
                    + (buf.position() - offset) + " bytes where serializedSize said " + len);
        }
    }

    /* TTL argument for the engine: milliseconds, a remainder rounded up, or never. */
    private static long ttlArg(long ttl, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        if (ttl == NEVER_EXPIRE) {
            return Native.TTL_NEVER;
        }
        if (ttl <= 0) {
            throw new IllegalArgumentException("ttl must be > 0 (or NEVER_EXPIRE): " + ttl);
        }
        long ms = unit.toMillis(ttl);
        if (ms == Long.MAX_VALUE) {
            return Native.TTL_NEVER;
        }
        return unit.convert(ms, TimeUnit.MILLISECONDS) < ttl ? ms + 1 : ms;
    }

    private RuntimeException failure(int rc, int keyLen, int valueLen) {
        switch (rc) {
        case Native.EKEYSIZE:
            return new IllegalArgumentException("larder: a key of " + keyLen
                    + " bytes is over the cache's limit of " + maxKeyBytes + " bytes");
        case Native.EVALSIZE:
            return new IllegalArgumentException("larder: an entry with a " + keyLen
                    + "-byte key and a " + valueLen + "-byte value is over the entry limit:"
                    + " values up to " + maxValueBytes + " bytes (maxValueBytes), and an entry"
                    + " (16-32 bytes of header, key and value) up to 1/8 of the capacity");
        default:
            return error(rc);
        }
    }

    static RuntimeException error(int rc) {
        switch (rc) {
        case Native.CLOSED:
            return new IllegalStateException("larder: the cache is closed");
        case Native.EBUSY:
            return new LarderBusyException("larder: " + Native.strerror(rc));
        case Native.ENOMEM:
            return new LarderOutOfMemoryException("larder: " + Native.strerror(rc));
        case Native.EINVAL:
            return new IllegalArgumentException("larder: " + Native.strerror(rc));
        case Native.ESTATE:
            return new IllegalStateException("larder: " + Native.strerror(rc));
        default:
            return new LarderException(rc, "larder: " + Native.strerror(rc));
        }
    }

    private static ObjectName register(String jmxName, StatsBean bean) {
        try {
            ObjectName name = new ObjectName("org.larder:type=LarderCache,name="
                    + ObjectName.quote(jmxName));
            ManagementFactory.getPlatformMBeanServer().registerMBean(bean, name);
            return name;
        } catch (JMException e) {
            throw new IllegalArgumentException("larder: cannot register the MXBean "
                    + jmxName + ": " + e, e);
        }
    }

    /*
     * What closing does, run once: by close(), or by the Cleaner when the
     * cache became unreachable. Holds no reference to the cache; holds the
     * clock, so that its native cell outlives the cache's maintainer, and
     * the pool, so that the pool's own Cleaner cannot run while the cache
     * is open.
     */
    private static final class Closer implements Runnable {
        private final long guard;
        private final long gen;
        private final ManualClock clock;
        private final ObjectName jmxName;
        private final LarderPool pool;

        Closer(long guard, long gen, ManualClock clock, ObjectName jmxName, LarderPool pool) {
            this.guard = guard;
            this.gen = gen;
            this.clock = clock;
            this.jmxName = jmxName;
            this.pool = pool;
        }

        @Override
        public void run() {
            Native.close(guard, gen);
            Reference.reachabilityFence(clock);
            Reference.reachabilityFence(pool);
            if (jmxName != null) {
                MBeanServer server = ManagementFactory.getPlatformMBeanServer();
                try {
                    server.unregisterMBean(jmxName);
                } catch (JMException e) {
                    /* Unregistered by someone else already: nothing to do. */
                }
            }
        }
    }
}
