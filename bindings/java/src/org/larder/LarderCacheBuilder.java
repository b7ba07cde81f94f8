package org.larder;

/**
 * Configures and builds a {@link LarderCache}, in the manner of Cassandra
 * OHC's {@code OHCacheBuilder} (the names shared with it mean the same).
 *
 * <pre>{@code
 * LarderCache<String, byte[]> cache = LarderCacheBuilder.<String, byte[]>newBuilder()
 *         .keySerializer(CacheSerializers.STRING)
 *         .valueSerializer(CacheSerializers.BYTE_ARRAY)
 *         .capacity(1L << 30)
 *         .build();
 * }</pre>
 *
 * <p>Each setter checks its argument at once ({@link IllegalArgumentException}
 * naming the limit). Defaults: capacity 64 MiB, 4,096 expected entries, keys
 * up to 250 bytes, values up to 1 MiB, no default TTL, expire after write,
 * {@link Eviction#DEFAULT}, a random hash seed, writes wait up to 1,000 ms
 * for room, the system's monotonic clock, no listener, no JMX, no pool, no
 * compression.
 *
 * @param <K> key type
 * @param <V> value type
 */
public final class LarderCacheBuilder<K, V> {
    /** The smallest capacity the engine accepts. */
    public static final long MIN_CAPACITY = 64 * 1024;
    /** The largest capacity the engine accepts (2^62 - 1). */
    public static final long MAX_CAPACITY = (1L << 62) - 1;
    /** The engine's ceiling on key length ({@code LARDER_KEY_LIMIT}). */
    public static final int KEY_LIMIT = 65535;
    /** The longest write wait the engine accepts, an hour ({@code larder_config_set_write_wait_ms}). */
    public static final long MAX_WRITE_WAIT_MILLIS = 3_600_000;
    /** The largest index sizing hint the engine accepts (2^40, {@code larder_config_set_expected_entries}). */
    public static final long MAX_EXPECTED_ENTRIES = 1L << 40;
    /** The most shards a cache may have ({@code LARDER_SHARDS_MAX}). */
    public static final int MAX_SHARDS = 64;

    /** The engine's ceiling on value length ({@code LARDER_VALUE_LIMIT}). */
    public static final int VALUE_LIMIT = 1 << 30;

    /** The capacity's range, named in the message (the builder's and setCapacity's). */
    static void checkCapacity(long capacity) {
        if (capacity < MIN_CAPACITY || capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("capacity must be " + MIN_CAPACITY + ".."
                    + MAX_CAPACITY + " bytes: " + capacity);
        }
    }

    CacheSerializer<K> keySerializer;
    CacheSerializer<V> valueSerializer;
    long capacity = 64L << 20;
    boolean capacitySet;
    LarderPool pool;
    double weight = 1;
    double minShare;
    double maxShare = 1;
    int compressMinBytes;
    int compressMinSavingPercent = 10;
    long expectedEntries = 4096;
    int maxKeyBytes = 250;
    int maxValueBytes = 1 << 20;
    long defaultTTLmillis;
    boolean expireAfterAccess;
    Eviction eviction = Eviction.DEFAULT;
    RemovalListener<K, V> removalListener;
    Long hashSeed;
    long writeWaitMillis = 1000;
    int shards = 1;
    ManualClock clock;
    String jmxName;

    private LarderCacheBuilder() {
    }

    public static <K, V> LarderCacheBuilder<K, V> newBuilder() {
        return new LarderCacheBuilder<>();
    }

    /** Required. */
    public LarderCacheBuilder<K, V> keySerializer(CacheSerializer<K> keySerializer) {
        this.keySerializer = keySerializer;
        return this;
    }

    /** Required. */
    public LarderCacheBuilder<K, V> valueSerializer(CacheSerializer<V> valueSerializer) {
        this.valueSerializer = valueSerializer;
        return this;
    }

    /**
     * Bytes of entries the cache may hold (headers, keys, values and slot
     * rounding), at least {@link #MIN_CAPACITY}. Memory in use may exceed it
     * briefly by at most max(capacity / 100, 4 MiB) while the maintainer
     * evicts. Can be changed later with {@link LarderCache#setCapacity(long)}.
     * Not with {@link #pool(LarderPool)}: a pool sets its caches' capacity.
     */
    public LarderCacheBuilder<K, V> capacity(long capacity) {
        checkCapacity(capacity);
        this.capacity = capacity;
        this.capacitySet = true;
        return this;
    }

    /**
     * Draws the cache's capacity from {@code pool}'s budget instead of a
     * capacity of its own (null: no pool, the default). The pool sets and
     * moves the capacity (see {@link LarderPool}); {@link #capacity(long)}
     * must not be set too (to give a pooled cache a fixed size, set
     * {@link #minShare(double)} and {@link #maxShare(double)} equal), and
     * {@link LarderCache#setCapacity(long)} throws
     * {@link IllegalStateException}. {@link #build()} may wait up to
     * {@link #writeWaitMillis(long)} for the pool's other caches to give
     * back the new cache's first 64 KiB.
     */
    public LarderCacheBuilder<K, V> pool(LarderPool pool) {
        this.pool = pool;
        return this;
    }

    /**
     * What a miss in this cache costs relative to the pool's other caches
     * (the engine's miss cost; default 1): the pool maximises hits weighted
     * by it, so a cache with weight 10 gets capacity before one with weight
     * 1 that would gain fewer than 10 times its hits. Finite, > 0 and <=
     * 10^9. Used only with {@link #pool(LarderPool)}.
     */
    public LarderCacheBuilder<K, V> weight(double weight) {
        if (!(weight > 0 && weight <= 1e9)) {
            throw new IllegalArgumentException("weight must be > 0 and <= 1e9: " + weight);
        }
        this.weight = weight;
        return this;
    }

    /**
     * The least share of the pool's budget the cache keeps once it has
     * reached it, 0..1 (default 0). The min shares of a pool's open caches
     * may sum to at most 1. Used only with {@link #pool(LarderPool)}.
     */
    public LarderCacheBuilder<K, V> minShare(double minShare) {
        if (!(minShare >= 0 && minShare <= 1)) {
            throw new IllegalArgumentException("minShare must be 0..1: " + minShare);
        }
        this.minShare = minShare;
        return this;
    }

    /**
     * The most share of the pool's budget the cache may hold, > 0 and <= 1
     * (default 1), at least {@link #minShare(double)} (checked by
     * {@link #build()}). Used only with {@link #pool(LarderPool)}.
     */
    public LarderCacheBuilder<K, V> maxShare(double maxShare) {
        if (!(maxShare > 0 && maxShare <= 1)) {
            throw new IllegalArgumentException("maxShare must be > 0 and <= 1: " + maxShare);
        }
        this.maxShare = maxShare;
        return this;
    }

    /**
     * Compresses values of at least {@code minValueBytes} bytes (a zstd
     * dictionary the engine trains from the first values, else LZ4; 0 = off, the default), keeping the compressed form only when it
     * saves at least 10%; see {@link #compression(int, int)}.
     */
    public LarderCacheBuilder<K, V> compression(int minValueBytes) {
        return compression(minValueBytes, 10);
    }

    /**
     * Compresses values of at least {@code minValueBytes} bytes (0 = off)
     * (a trained zstd dictionary, else LZ4), keeping the compressed form only when it is at least
     * {@code minSavingPercent} (0..99) smaller than the value; others are
     * stored raw. Every read, comparison and listener call sees the
     * original bytes; the capacity counts the stored (compressed) bytes.
     * A read of a compressed value decompresses it: a copy-out get then
     * costs about the decompression, and {@link LarderCache#getDirect} hands
     * the consumer a per-thread decompressed copy, not the stored bytes.
     */
    public LarderCacheBuilder<K, V> compression(int minValueBytes, int minSavingPercent) {
        if (minValueBytes < 0 || minValueBytes > VALUE_LIMIT) {
            throw new IllegalArgumentException("compression's minValueBytes must be 0.."
                    + VALUE_LIMIT + ": " + minValueBytes);
        }
        if (minSavingPercent < 0 || minSavingPercent > 99) {
            throw new IllegalArgumentException("compression's minSavingPercent must be 0..99: "
                    + minSavingPercent);
        }
        this.compressMinBytes = minValueBytes;
        this.compressMinSavingPercent = minSavingPercent;
        return this;
    }

    /**
     * A sizing hint for the index, 0 to {@link #MAX_EXPECTED_ENTRIES}; it grows
     * past this as needed. {@link #build()} allocates the index for it: a
     * hint too large for the machine fails there with
     * {@link LarderOutOfMemoryException}.
     */
    public LarderCacheBuilder<K, V> expectedEntries(long expectedEntries) {
        if (expectedEntries < 0 || expectedEntries > MAX_EXPECTED_ENTRIES) {
            throw new IllegalArgumentException("expectedEntries must be 0.." + MAX_EXPECTED_ENTRIES
                    + ": " + expectedEntries);
        }
        this.expectedEntries = expectedEntries;
        return this;
    }

    /** The longest key, in serialized bytes: 1 to {@link #KEY_LIMIT}. */
    public LarderCacheBuilder<K, V> maxKeyBytes(int maxKeyBytes) {
        if (maxKeyBytes < 1 || maxKeyBytes > KEY_LIMIT) {
            throw new IllegalArgumentException("maxKeyBytes must be 1.." + KEY_LIMIT + ": "
                    + maxKeyBytes);
        }
        this.maxKeyBytes = maxKeyBytes;
        return this;
    }

    /**
     * The longest value, in serialized bytes: 0 to {@link #VALUE_LIMIT}. An
     * entry (header, key and value) may also take at most 1/8 of the
     * capacity.
     */
    public LarderCacheBuilder<K, V> maxValueBytes(int maxValueBytes) {
        if (maxValueBytes < 0 || maxValueBytes > VALUE_LIMIT) {
            throw new IllegalArgumentException("maxValueBytes must be 0.." + VALUE_LIMIT + ": "
                    + maxValueBytes);
        }
        this.maxValueBytes = maxValueBytes;
        return this;
    }

    /**
     * The time to live of entries written without one (>= 0; 0 = none, the
     * default): {@code put(key, value)} and the other writes without a TTL
     * argument use it. {@link LarderCache#NEVER_EXPIRE} ({@code Long.MAX_VALUE})
     * is none too, as in {@code put(key, value, ttl, unit)}: the entries get no
     * deadline, and {@code remainingTTLmillis} says {@code NEVER_EXPIRE}
     * (with {@link #expireAfterAccess(boolean)} reads then extend nothing:
     * nothing expires, as asked).
     */
    public LarderCacheBuilder<K, V> defaultTTLmillis(long defaultTTLmillis) {
        if (defaultTTLmillis < 0) {
            throw new IllegalArgumentException("defaultTTLmillis must be >= 0: "
                    + defaultTTLmillis);
        }
        this.defaultTTLmillis = defaultTTLmillis;
        return this;
    }

    /**
     * Expire after access instead of after write: a read that finds an
     * entry extends its deadline to (now + the default TTL), never
     * shortening it; needs {@link #defaultTTLmillis(long)} > 0 ({@link #build()}
     * refuses it without one). How precisely
     * reads extend is the engine's contract ({@code larder_config_set_expiry}
     * in larder.h).
     */
    public LarderCacheBuilder<K, V> expireAfterAccess(boolean expireAfterAccess) {
        this.expireAfterAccess = expireAfterAccess;
        return this;
    }

    public LarderCacheBuilder<K, V> eviction(Eviction eviction) {
        if (eviction == null) {
            throw new NullPointerException("eviction");
        }
        this.eviction = eviction;
        return this;
    }

    /** Told of every removal, with its cause; see {@link RemovalListener}. */
    public LarderCacheBuilder<K, V> removalListener(RemovalListener<K, V> removalListener) {
        this.removalListener = removalListener;
        return this;
    }

    /** Fixes the hash seed (reproducible runs); by default it is random per cache. */
    public LarderCacheBuilder<K, V> hashSeed(long hashSeed) {
        this.hashSeed = hashSeed;
        return this;
    }

    /**
     * How long a write may wait (0 to {@link #MAX_WRITE_WAIT_MILLIS} ms;
     * 0 = never) for the maintainer to make room when the cache is at its
     * memory bound, before it throws {@link LarderBusyException}.
     */
    public LarderCacheBuilder<K, V> writeWaitMillis(long writeWaitMillis) {
        if (writeWaitMillis < 0 || writeWaitMillis > MAX_WRITE_WAIT_MILLIS) {
            throw new IllegalArgumentException("writeWaitMillis must be 0.." + MAX_WRITE_WAIT_MILLIS
                    + ": " + writeWaitMillis);
        }
        this.writeWaitMillis = writeWaitMillis;
        return this;
    }

    /**
     * Splits the cache into {@code shards} parts by key hash (a power of two,
     * 1 to {@link #MAX_SHARDS}; default 1), each with its own maintainer
     * thread, index and policy, under one capacity: a cache written from many
     * cores is no longer limited by what one maintainer can apply. Each shard's
     * policy sees a 1/shards sample of the keys (the hit-ratio cost, measured
     * on public traces, is within 0.2 points for the default policy up to 4;
     * docs/shards.md). With more than one shard the removal listener may be
     * called from several maintainer threads at once. A pooled cache may have
     * several shards too (docs/pool.md).
     */
    public LarderCacheBuilder<K, V> shards(int shards) {
        if (shards < 1 || shards > MAX_SHARDS || (shards & (shards - 1)) != 0) {
            throw new IllegalArgumentException("shards must be a power of two from 1 to "
                    + MAX_SHARDS + ": " + shards);
        }
        this.shards = shards;
        return this;
    }

    /** Drives expiry from a {@link ManualClock} (tests); null = the system's clock. */
    public LarderCacheBuilder<K, V> clock(ManualClock clock) {
        this.clock = clock;
        return this;
    }

    /**
     * Registers the cache's statistics as a {@link LarderCacheMXBean} named
     * {@code org.larder:type=LarderCache,name=<jmxName>}; null = not at all.
     */
    public LarderCacheBuilder<K, V> jmxName(String jmxName) {
        this.jmxName = jmxName;
        return this;
    }

    /**
     * Opens the cache and starts its maintainer thread.
     *
     * @throws NullPointerException a serializer is missing
     * @throws IllegalArgumentException the engine refused a setting (the
     *         message names it), the JMX name is taken, both a capacity and
     *         a pool are set, a pool and several shards are set, minShare
     *         is over maxShare, or the pool cannot
     *         take the cache (its open caches' min shares would sum to over
     *         1, or it cannot give the cache 64 KiB)
     * @throws IllegalStateException the pool is closed
     * @throws LarderBusyException the pool's other caches did not give back
     *         the cache's first capacity within the write wait
     * @throws LarderException the engine could not open the cache (no
     *         memory, no thread)
     * @throws UnsatisfiedLinkError the JNI library could not be loaded (the
     *         message says where it looked and how to point at it)
     */
    public LarderCache<K, V> build() {
        if (keySerializer == null) {
            throw new NullPointerException("keySerializer not set");
        }
        if (valueSerializer == null) {
            throw new NullPointerException("valueSerializer not set");
        }
        if (pool != null && capacitySet) {
            throw new IllegalArgumentException("capacity and pool exclude each other: the pool"
                    + " sets a pooled cache's capacity (for a fixed size set minShare = maxShare)");
        }
        if (expireAfterAccess && defaultTTLmillis == 0) {
            throw new IllegalArgumentException("expireAfterAccess needs a defaultTTLmillis > 0:"
                    + " reads extend deadlines by it, so without one they would extend nothing");
        }
        if (minShare > maxShare) {
            throw new IllegalArgumentException("minShare " + minShare + " is over maxShare "
                    + maxShare);
        }
        Native.ensureLoaded();
        return new LarderCache<>(this);
    }

    long[] settings() {
        long[] s = new long[Native.S_COUNT];
        s[Native.S_CAPACITY] = capacity;
        s[Native.S_EXPECTED_ENTRIES] = expectedEntries;
        s[Native.S_MAX_KEY_BYTES] = maxKeyBytes;
        s[Native.S_MAX_VALUE_BYTES] = maxValueBytes;
        /* NEVER_EXPIRE is no deadline (0 here), as a put's TTL argument: passed
         * on, it was a lifetime whose deadline the clock could reach, while
         * remainingTTLmillis said NEVER_EXPIRE. */
        s[Native.S_DEFAULT_TTL_MS] = defaultTTLmillis == LarderCache.NEVER_EXPIRE ? 0
                : defaultTTLmillis;
        s[Native.S_POLICY] = eviction.code;
        s[Native.S_EXPIRY] = expireAfterAccess ? 1 : 0;
        s[Native.S_HASH_SEED] = hashSeed == null ? 0 : hashSeed;
        s[Native.S_HAS_HASH_SEED] = hashSeed == null ? 0 : 1;
        s[Native.S_WRITE_WAIT_MS] = writeWaitMillis;
        s[Native.S_MIN_SHARE] = Double.doubleToRawLongBits(minShare);
        s[Native.S_MAX_SHARE] = Double.doubleToRawLongBits(maxShare);
        s[Native.S_MISS_COST] = Double.doubleToRawLongBits(weight);
        s[Native.S_COMPRESS_MIN] = compressMinBytes;
        s[Native.S_COMPRESS_SAVING] = compressMinSavingPercent;
        s[Native.S_SHARDS] = shards;
        return s;
    }

    static String settingName(int index) {
        switch (index) {
        case Native.S_CAPACITY:
            return "capacity";
        case Native.S_EXPECTED_ENTRIES:
            return "expectedEntries";
        case Native.S_MAX_KEY_BYTES:
            return "maxKeyBytes";
        case Native.S_MAX_VALUE_BYTES:
            return "maxValueBytes";
        case Native.S_DEFAULT_TTL_MS:
            return "defaultTTLmillis";
        case Native.S_POLICY:
            return "eviction";
        case Native.S_EXPIRY:
            return "expireAfterAccess";
        case Native.S_HASH_SEED:
            return "hashSeed";
        case Native.S_WRITE_WAIT_MS:
            return "writeWaitMillis";
        case Native.S_POOL:
            return "pool";
        case Native.S_MIN_SHARE:
            return "minShare/maxShare";
        case Native.S_MISS_COST:
            return "weight";
        case Native.S_COMPRESS_MIN:
            return "compression";
        case Native.S_SHARDS:
            return "shards";
        default:
            return "clock or removalListener";
        }
    }
}
