package org.larder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.stream.Stream;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The documented contract (docs/java.md, the Javadoc), tested from outside
 * across the builder's options: for each of a set of configurations that
 * together take every value of every option (policy, shards, compression,
 * TTL mode, listener, serializer kind, pool member, tiny or normal
 * capacity), a random sequence of every public operation is checked
 * against a model (a HashMap with deadlines on a ManualClock), with the
 * removal listener's causes; every error for null, empty and oversized
 * keys and values and bad TTLs; every call after close; iterators after
 * close and after clear; and close() racing with every operation. The
 * comparisons against Caffeine are in CaffeineContractTest.
 */
class ContractTest {
    /** The serializer kinds: keys and values as String, byte[] or ByteBuffer. */
    enum Kind {
        STRING, BYTES, BUFFER;

        @SuppressWarnings("unchecked")
        <T> CacheSerializer<T> serializer() {
            switch (this) {
            case STRING:
                return (CacheSerializer<T>) CacheSerializers.STRING;
            case BYTES:
                return (CacheSerializer<T>) CacheSerializers.BYTE_ARRAY;
            default:
                return (CacheSerializer<T>) CacheSerializers.BYTE_BUFFER;
            }
        }

        Object of(String s) {
            switch (this) {
            case STRING:
                return s;
            case BYTES:
                return s.getBytes(StandardCharsets.UTF_8);
            default:
                return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
            }
        }

        String text(Object o) {
            if (o == null) {
                return null;
            }
            switch (this) {
            case STRING:
                return (String) o;
            case BYTES:
                return new String((byte[]) o, StandardCharsets.UTF_8);
            default:
                ByteBuffer b = ((ByteBuffer) o).duplicate();
                byte[] a = new byte[b.remaining()];
                b.get(a);
                return new String(a, StandardCharsets.UTF_8);
            }
        }
    }

    enum Ttl { NONE, DEFAULT, ACCESS }

    /** One configuration of the builder. */
    static final class Config {
        final Eviction policy;
        final int shards;
        final boolean compression;
        final Ttl ttl;
        final boolean listener;
        final Kind kind;
        final boolean pooled;
        final boolean tiny;

        Config(Eviction policy, int shards, boolean compression, Ttl ttl, boolean listener, Kind kind,
                boolean pooled, boolean tiny) {
            this.policy = policy;
            this.shards = shards;
            this.compression = compression;
            this.ttl = ttl;
            this.listener = listener;
            this.kind = kind;
            this.pooled = pooled;
            this.tiny = tiny;
        }

        @Override
        public String toString() {
            return policy + " shards=" + shards + (compression ? " compressed" : "") + " ttl=" + ttl
                    + (listener ? " listener" : "") + " " + kind + (pooled ? " pooled" : "")
                    + (tiny ? " tiny" : "");
        }
    }

    /*
     * Every value of every dimension, each paired with several values of the
     * others: configuration i takes value i mod n of a dimension of n values,
     * the dimensions' sizes being pairwise coprime or offset, over 42 configurations.
     */
    static Stream<Config> configs() {
        Eviction[] policies = Eviction.values();
        List<Config> list = new ArrayList<>();
        for (int i = 0; i < 42; i++) {
            boolean pooled = i % 5 == 3;
            boolean tiny = !pooled && i % 4 == 1;
            int shards = pooled ? 1 : new int[] {1, 4, 2}[i % 3];
            list.add(new Config(policies[i % policies.length], shards, i % 2 == 0,
                    Ttl.values()[(i / 2) % 3], i % 7 != 6, Kind.values()[(i / 3) % 3], pooled, tiny));
        }
        return list.stream();
    }

    static final long TTL_MS = 1000;

    /** A cache under test with its model, clock, pool and listener log. */
    static final class Subject implements AutoCloseable {
        final Config cfg;
        final ManualClock clock = new ManualClock(1_000_000);
        final LarderPool pool;
        final LarderCache<Object, Object> cache;
        final Queue<String[]> events = new ConcurrentLinkedQueue<>();

        /** The MXBean's name, when the cache registers one. */
        final ObjectName jmx;

        Subject(Config cfg, int maxValueBytes) {
            this(cfg, maxValueBytes, null);
        }

        Subject(Config cfg, int maxValueBytes, String jmxName) {
            this.cfg = cfg;
            pool = cfg.pooled ? LarderPool.builder().budget(4L << 20).build() : null;
            LarderCacheBuilder<Object, Object> b = LarderCacheBuilder.newBuilder()
                    .keySerializer(cfg.kind.serializer()).valueSerializer(cfg.kind.serializer())
                    .eviction(cfg.policy).clock(clock).maxKeyBytes(32).maxValueBytes(maxValueBytes)
                    .writeWaitMillis(TestSupport.WAIT_MS);
            if (cfg.pooled) {
                b.pool(pool);
            } else {
                b.capacity(cfg.tiny ? LarderCacheBuilder.MIN_CAPACITY : 16L << 20).shards(cfg.shards);
            }
            if (cfg.compression) {
                b.compression(64);
            }
            if (cfg.ttl != Ttl.NONE) {
                b.defaultTTLmillis(TTL_MS).expireAfterAccess(cfg.ttl == Ttl.ACCESS);
            }
            ObjectName on = null;
            if (jmxName != null) {
                b.jmxName(jmxName);
                try {
                    on = new ObjectName("org.larder:type=LarderCache,name=" + ObjectName.quote(jmxName));
                } catch (javax.management.MalformedObjectNameException e) {
                    throw new AssertionError(e);
                }
            }
            jmx = on;
            if (cfg.listener) {
                b.removalListener((k, v, cause) -> events.add(
                        new String[] {cfg.kind.text(k), cfg.kind.text(v), cause.name()}));
            }
            cache = b.build();
        }

        Object k(String s) {
            return cfg.kind.of(s);
        }

        Object v(String s) {
            return cfg.kind.of(s);
        }

        String text(Object o) {
            return cfg.kind.text(o);
        }

        @Override
        public void close() {
            cache.close();
            if (pool != null) {
                pool.close();
            }
        }
    }

    /* A value of 0 to ~3 KiB, compressible above 64 bytes, unique per write (version). */
    private static String value(SplittableRandom rnd, String key, int version) {
        String head = key + "#" + version;
        switch (rnd.nextInt(4)) {
        case 0:
            return rnd.nextInt(8) == 0 ? "" : head;
        case 1:
            return head + ":" + "abcdefgh".repeat(10 + rnd.nextInt(40));
        case 2:
            return head + ":" + "x".repeat(500 + rnd.nextInt(2500));
        default:
            return head + ":" + rnd.nextLong();
        }
    }

    /**
     * A random sequence of every operation against a model. With normal
     * capacity nothing is evicted and the model is exact: every result, the
     * size after cleanUp(), the iterators' contents and the listener's
     * (key, value, cause) records equal the model's. With the tiny capacity
     * an entry may be evicted at any time, so a read may miss where the model
     * has a value, but never returns a value the model does not have, and
     * every listener record names a value that was written to that key.
     */
    @ParameterizedTest
    @MethodSource("configs")
    void randomSequenceMatchesTheModel(Config cfg) {
        long seed = cfg.toString().hashCode() ^ System.nanoTime();
        String where = cfg + " seed " + seed;
        SplittableRandom rnd = new SplittableRandom(seed);
        Map<String, String> model = new HashMap<>();
        Map<String, Long> deadline = new HashMap<>(); /* absent: never expires */
        List<String[]> expected = new ArrayList<>();
        Map<String, List<String>> written = new HashMap<>();
        boolean exact = !cfg.tiny;
        try (Subject s = new Subject(cfg, 4096)) {
            LarderCache<Object, Object> c = s.cache;
            int version = 0;
            for (int step = 0; step < 600; step++) {
                String key = "key" + rnd.nextInt(24);
                String at = where + " step " + step + " key " + key;
                long now = s.clock.millis();
                expireDue(model, deadline, expected, now);
                String cur = model.get(key);
                String nv = value(rnd, key, ++version);
                int op = rnd.nextInt(20);
                switch (op) {
                case 0:
                case 1: {
                    c.put(s.k(key), s.v(nv));
                    record(expected, written, key, cur, nv, "REPLACED");
                    set(model, deadline, key, nv, cfg.ttl == Ttl.NONE ? -1 : now + TTL_MS);
                    break;
                }
                case 2: {
                    long ttl = 1 + rnd.nextInt(3000);
                    c.put(s.k(key), s.v(nv), ttl, TimeUnit.MILLISECONDS);
                    record(expected, written, key, cur, nv, "REPLACED");
                    set(model, deadline, key, nv, now + ttl);
                    break;
                }
                case 3: {
                    boolean r = c.putIfAbsent(s.k(key), s.v(nv));
                    if (exact || cur == null) {
                        assertEquals(cur == null, r, at);
                    }
                    if (r) {
                        record(expected, written, key, null, nv, null);
                        set(model, deadline, key, nv, cfg.ttl == Ttl.NONE ? -1 : now + TTL_MS);
                    }
                    break;
                }
                case 4: {
                    boolean r = c.replace(s.k(key), s.v(nv));
                    if (exact || cur == null) {
                        assertEquals(cur != null, r, at);
                    }
                    if (r) {
                        record(expected, written, key, cur, nv, "REPLACED");
                        set(model, deadline, key, nv, cfg.ttl == Ttl.NONE ? -1 : now + TTL_MS);
                    } else {
                        evicted(model, deadline, key);
                    }
                    break;
                }
                case 5: {
                    String old = cur != null && rnd.nextBoolean() ? cur : "other";
                    boolean r = c.replace(s.k(key), s.v(old), s.v(nv));
                    if (exact || cur == null) {
                        assertEquals(old.equals(cur), r, at);
                    }
                    if (r) {
                        record(expected, written, key, cur, nv, "REPLACED");
                        set(model, deadline, key, nv, cfg.ttl == Ttl.NONE ? -1 : now + TTL_MS);
                    }
                    break;
                }
                case 6: {
                    String old = cur != null && rnd.nextBoolean() ? cur : "other";
                    boolean r = c.addOrReplace(s.k(key), s.v(old), s.v(nv));
                    if (exact) {
                        assertEquals(cur == null || old.equals(cur), r, at);
                    }
                    if (r) {
                        record(expected, written, key, cur, nv, "REPLACED");
                        set(model, deadline, key, nv, cfg.ttl == Ttl.NONE ? -1 : now + TTL_MS);
                    }
                    break;
                }
                case 7: {
                    boolean r = c.remove(s.k(key));
                    if (exact || cur == null) {
                        assertEquals(cur != null, r, at);
                    }
                    if (r) {
                        expected.add(new String[] {key, cur, "EXPLICIT"});
                    }
                    model.remove(key);
                    deadline.remove(key);
                    break;
                }
                case 8: {
                    String old = cur != null && rnd.nextBoolean() ? cur : "other";
                    boolean r = c.remove(s.k(key), s.v(old));
                    if (exact || cur == null) {
                        assertEquals(old.equals(cur), r, at);
                    }
                    if (r) {
                        expected.add(new String[] {key, cur, "EXPLICIT"});
                        model.remove(key);
                        deadline.remove(key);
                    }
                    break;
                }
                case 9: {
                    boolean withTtl = rnd.nextBoolean();
                    long ttl = 1 + rnd.nextInt(3000);
                    boolean r = withTtl ? c.touch(s.k(key), ttl, TimeUnit.MILLISECONDS)
                            : c.touch(s.k(key));
                    if (exact || cur == null) {
                        assertEquals(cur != null, r, at);
                    }
                    if (r) {
                        set(model, deadline, key, cur,
                                withTtl ? now + ttl : cfg.ttl == Ttl.NONE ? -1 : now + TTL_MS);
                    } else {
                        evicted(model, deadline, key);
                    }
                    break;
                }
                case 10:
                    checkRead(s, key, cur, at, exact);
                    break;
                case 11: {
                    boolean r = c.containsKey(s.k(key));
                    checkPresence(r, cur, at, exact);
                    long left = c.remainingTTLmillis(s.k(key));
                    if (!r && exact) {
                        assertEquals(LarderCache.NOT_FOUND, left, at);
                    } else if (left != LarderCache.NOT_FOUND && cur != null) {
                        Long d = deadline.get(key);
                        if (d == null) {
                            assertEquals(LarderCache.NEVER_EXPIRE, left, at);
                        } else if (cfg.ttl != Ttl.ACCESS) {
                            assertEquals(d - now, left, at);
                        }
                    }
                    break;
                }
                case 12: {
                    int n = 1 + rnd.nextInt(6);
                    List<String> keys = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        keys.add("key" + rnd.nextInt(24));
                    }
                    checkBatch(s, keys, model, at, exact);
                    break;
                }
                case 13:
                    if (rnd.nextInt(8) == 0) {
                        c.clear();
                        for (Map.Entry<String, String> e : model.entrySet()) {
                            expected.add(new String[] {e.getKey(), e.getValue(), "CLEARED"});
                        }
                        model.clear();
                        deadline.clear();
                    }
                    break;
                case 14:
                    c.cleanUp();
                    if (exact) {
                        assertEquals(model.size(), c.size(), at);
                    } else {
                        assertTrue(c.size() <= model.size(), at);
                    }
                    break;
                case 15:
                    checkIterators(s, model, at, exact);
                    break;
                case 16:
                    /* Expire-after-access moves deadlines on reads (TtlTest checks how):
                     * its clock stays, so the model's deadlines stay exact. */
                    if (cfg.ttl != Ttl.ACCESS) {
                        s.clock.advance(rnd.nextInt(4) == 0 ? 1 + rnd.nextInt(2000) : rnd.nextInt(3));
                    }
                    break;
                case 17: {
                    LarderStats st = c.stats();
                    assertTrue(st.usedBytes() <= st.capacity(), at);
                    assertTrue(c.freeCapacity() >= 0 && c.freeCapacity() <= c.capacity(), at);
                    assertFalse(c.sizeClassStats().isEmpty(), at);
                    if (cfg.pooled) {
                        assertNotNull(c.poolStats(), at);
                        assertEquals(s.pool, c.pool(), at);
                    } else {
                        assertNull(c.pool(), at);
                        assertThrows(IllegalStateException.class, c::poolStats, at);
                    }
                    break;
                }
                default:
                    checkRead(s, key, cur, at, exact);
                    break;
                }
            }
            /* The last step may have moved the clock past deadlines. */
            expireDue(model, deadline, expected, s.clock.millis());
            /* The listener: every removal reported, with its cause (no TTL and no eviction: exact). */
            if (cfg.listener) {
                c.cleanUp();
                if (exact) {
                    int want = expected.size();
                    TestSupport.waitUntil(where + ": " + want + " removals reported",
                            () -> s.events.size() >= want);
                    /* An expired entry overwritten or removed before the maintainer
                     * reaped it may be reported with either cause: with TTLs, compare
                     * keys and values. */
                    boolean causes = cfg.ttl == Ttl.NONE;
                    assertSameRecords(records(expected, causes),
                            records(new ArrayList<>(s.events), causes), where);
                } else {
                    for (String[] e : s.events) {
                        List<String> w = written.get(e[0]);
                        assertTrue(w != null && w.contains(e[1]), where + ": removal of a value never"
                                + " written: " + Arrays.toString(e));
                    }
                }
            }
        }
    }

    /* Expiry as the engine promises it: absent at and after the deadline. */
    private static void expireDue(Map<String, String> model, Map<String, Long> deadline,
            List<String[]> expected, long now) {
        for (Map.Entry<String, Long> d : new ArrayList<>(deadline.entrySet())) {
            if (now >= d.getValue()) {
                String old = model.remove(d.getKey());
                deadline.remove(d.getKey());
                expected.add(new String[] {d.getKey(), old, "EXPIRED"});
            }
        }
    }

    private static void set(Map<String, String> model, Map<String, Long> deadline, String key,
            String value, long until) {
        model.put(key, value);
        if (until < 0) {
            deadline.remove(key);
        } else {
            deadline.put(key, until);
        }
    }

    /* Tiny capacity: a write that found the key absent where the model has it saw an eviction. */
    private static void evicted(Map<String, String> model, Map<String, Long> deadline, String key) {
        model.remove(key);
        deadline.remove(key);
    }

    private static void record(List<String[]> expected, Map<String, List<String>> written, String key,
            String old, String value, String cause) {
        written.computeIfAbsent(key, x -> new ArrayList<>()).add(value);
        if (old != null && cause != null) {
            expected.add(new String[] {key, old, cause});
        }
    }

    /* Each record as "key|value|cause" (cause left out when !causes), a value
     * by its head (key#version, unique per write) and length; sorted. */
    private static List<String> records(List<String[]> records, boolean causes) {
        List<String> out = new ArrayList<>();
        for (String[] r : records) {
            int colon = r[1].indexOf(':');
            String v = (colon < 0 ? r[1] : r[1].substring(0, colon)) + "/" + r[1].length();
            out.add(r[0] + "|" + v + (causes ? "|" + r[2] : ""));
        }
        Collections.sort(out);
        return out;
    }

    /* Fails naming only the records that differ. */
    private static void assertSameRecords(List<String> want, List<String> got, String where) {
        List<String> missing = new ArrayList<>(want);
        List<String> extra = new ArrayList<>(got);
        for (String r : got) {
            missing.remove(r);
        }
        for (String r : want) {
            extra.remove(r);
        }
        if (!missing.isEmpty() || !extra.isEmpty()) {
            fail(where + ": removal records not reported " + missing + ", reported but not expected "
                    + extra + " (of " + want.size() + ")");
        }
    }

    private static void checkPresence(boolean present, String cur, String at, boolean exact) {
        if (exact) {
            assertEquals(cur != null, present, at);
        } else if (cur == null) {
            assertFalse(present, at);
        }
    }

    /* Every read path gives the model's value (or, tiny, possibly nothing). */
    private static void checkRead(Subject s, String key, String cur, String at, boolean exact) {
        LarderCache<Object, Object> c = s.cache;
        String got = s.text(c.get(s.k(key)));
        check(cur, got, at + " get", exact);
        byte[] dst = new byte[4096];
        int n = c.getInto(s.k(key), dst);
        check(cur, n < 0 ? null : new String(dst, 0, n, StandardCharsets.UTF_8), at + " getInto", exact);
        if (n > 0) {
            /* A short array: nothing copied, the length told. */
            byte[] small = new byte[n - 1];
            int m = c.getInto(s.k(key), small);
            assertTrue(m == n || m == LarderCache.NOT_FOUND, at);
            assertArrayEquals(new byte[n - 1], small, at + " short array untouched");
        }
        ByteBuffer bb = ByteBuffer.allocateDirect(4096);
        bb.position(3);
        int r = c.getInto(s.k(key), bb);
        if (r >= 0) {
            assertEquals(3 + r, bb.position(), at);
            byte[] a = new byte[r];
            bb.position(3);
            bb.get(a);
            check(cur, new String(a, StandardCharsets.UTF_8), at + " getInto(ByteBuffer)", exact);
        } else {
            assertEquals(3, bb.position(), at);
            check(cur, null, at + " getInto(ByteBuffer)", exact);
        }
        String[] viewed = new String[1];
        boolean found = c.getDirect(s.k(key), v -> viewed[0] = new String(v.toByteArray(),
                StandardCharsets.UTF_8));
        check(cur, found ? viewed[0] : null, at + " getDirect", exact);
    }

    private static void check(String want, String got, String at, boolean exact) {
        if (exact || got != null) {
            assertEquals(want, got, at);
        }
    }

    private static void checkBatch(Subject s, List<String> keys, Map<String, String> model, String at,
            boolean exact) {
        LarderCache<Object, Object> c = s.cache;
        List<Object> ks = new ArrayList<>();
        for (String k : keys) {
            ks.add(s.k(k));
        }
        Map<Object, Object> all = c.getAll(ks);
        Map<String, String> got = new HashMap<>();
        for (Map.Entry<Object, Object> e : all.entrySet()) {
            got.put(s.text(e.getKey()), s.text(e.getValue()));
        }
        Map<String, String> want = new HashMap<>();
        for (String k : keys) {
            if (model.containsKey(k)) {
                want.put(k, model.get(k));
            }
        }
        if (exact) {
            assertEquals(want, got, at + " getAll");
        } else {
            for (Map.Entry<String, String> e : got.entrySet()) {
                assertEquals(want.get(e.getKey()), e.getValue(), at + " getAll");
            }
        }
        Object[] karr = ks.toArray();
        byte[][] dsts = new byte[karr.length][];
        for (int i = 0; i < dsts.length; i++) {
            dsts[i] = new byte[4096];
        }
        int[] lens = new int[karr.length];
        int found = c.getAllInto(karr, karr.length, dsts, lens);
        int count = 0;
        for (int i = 0; i < karr.length; i++) {
            String w = model.get(keys.get(i));
            String g = lens[i] < 0 ? null : new String(dsts[i], 0, lens[i], StandardCharsets.UTF_8);
            check(w, g, at + " getAllInto[" + i + "]", exact);
            if (lens[i] >= 0) {
                count++;
            }
        }
        assertEquals(count, found, at + " getAllInto's count");
    }

    private static void checkIterators(Subject s, Map<String, String> model, String at, boolean exact) {
        LarderCache<Object, Object> c = s.cache;
        Map<String, String> seen = new HashMap<>();
        try (CloseableIterator<Map.Entry<Object, Object>> it = c.entryIterator()) {
            while (it.hasNext()) {
                Map.Entry<Object, Object> e = it.next();
                assertNull(seen.put(s.text(e.getKey()), s.text(e.getValue())), at + " twice");
            }
        }
        List<String> keys = new ArrayList<>();
        try (CloseableIterator<Object> it = c.keyIterator()) {
            it.forEachRemaining(k -> keys.add(s.text(k)));
        }
        if (exact) {
            assertEquals(model, seen, at + " entryIterator");
            List<String> want = new ArrayList<>(model.keySet());
            Collections.sort(want);
            Collections.sort(keys);
            assertEquals(want, keys, at + " keyIterator");
        } else {
            for (Map.Entry<String, String> e : seen.entrySet()) {
                assertEquals(model.get(e.getKey()), e.getValue(), at + " entryIterator");
            }
        }
    }

    /** Every error of the contract, with its type and a message naming the limit. */
    @ParameterizedTest
    @MethodSource("configs")
    void errorsAsDocumented(Config cfg) {
        try (Subject s = new Subject(cfg, 100)) {
            LarderCache<Object, Object> c = s.cache;
            Object k = s.k("k");
            Object v = s.v("v");
            c.put(k, v);
            List<Runnable> nullKey = Arrays.asList(() -> c.get(null), () -> c.getInto(null, new byte[1]),
                    () -> c.getInto(null, ByteBuffer.allocate(1)), () -> c.getDirect(null, x -> { }),
                    () -> c.containsKey(null), () -> c.remainingTTLmillis(null), () -> c.put(null, v),
                    () -> c.put(null, v, 1, TimeUnit.SECONDS), () -> c.putIfAbsent(null, v),
                    () -> c.replace(null, v), () -> c.replace(null, v, v),
                    () -> c.addOrReplace(null, v, v),
                    () -> c.remove(null), () -> c.remove(null, v), () -> c.touch(null),
                    () -> c.touch(null, 1, TimeUnit.SECONDS), () -> c.getAll(Arrays.asList(k, null)),
                    () -> c.getAllInto(new Object[] {k, null}, 2, new byte[][] {new byte[9], new byte[9]},
                            new int[2]));
            for (int i = 0; i < nullKey.size(); i++) {
                assertThrows(NullPointerException.class, nullKey.get(i)::run, cfg + " null key #" + i);
            }
            List<Runnable> nullArg = Arrays.asList(() -> c.put(k, null), () -> c.putIfAbsent(k, null),
                    () -> c.replace(k, null), () -> c.replace(k, null, v), () -> c.replace(k, v, null),
                    () -> c.addOrReplace(k, null, v), () -> c.addOrReplace(k, v, null),
                    () -> c.getInto(k, (byte[]) null),
                    () -> c.getInto(k, (ByteBuffer) null), () -> c.getDirect(k, null),
                    () -> c.put(k, v, 1, null), () -> c.getAll(null));
            for (int i = 0; i < nullArg.size(); i++) {
                assertThrows(NullPointerException.class, nullArg.get(i)::run, cfg + " null arg #" + i);
            }
            for (Object bad : new Object[] {s.k(""), s.k("x".repeat(33)), s.k("é".repeat(17))}) {
                List<Runnable> badKey = Arrays.asList(() -> c.get(bad), () -> c.getInto(bad, new byte[1]),
                        () -> c.getDirect(bad, x -> { }), () -> c.containsKey(bad),
                        () -> c.remainingTTLmillis(bad), () -> c.put(bad, v), () -> c.putIfAbsent(bad, v),
                        () -> c.replace(bad, v), () -> c.replace(bad, v, v),
                        () -> c.addOrReplace(bad, v, v),
                        () -> c.remove(bad), () -> c.remove(bad, v), () -> c.touch(bad),
                        () -> c.getAll(Arrays.asList(k, bad)));
                for (int i = 0; i < badKey.size(); i++) {
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            badKey.get(i)::run, cfg + " bad key #" + i);
                    assertTrue(e.getMessage().contains(s.text(bad).isEmpty() ? "at least 1 byte" : "32"),
                            e.getMessage());
                }
            }
            Object big = s.v("x".repeat(101));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> c.put(k, big));
            assertTrue(e.getMessage().contains("100"), e.getMessage());
            assertFalse(c.containsKey(k), cfg + ": a put refused for its value removes the old one");
            c.put(k, v);
            assertThrows(IllegalArgumentException.class, () -> c.putIfAbsent(k, big));
            assertThrows(IllegalArgumentException.class, () -> c.replace(k, big));
            assertThrows(IllegalArgumentException.class, () -> c.replace(k, v, big));
            assertThrows(IllegalArgumentException.class, () -> c.addOrReplace(k, v, big));
            assertEquals("v", s.text(c.get(k)), cfg + ": a refused conditional write keeps the value");
            /* An expected value over the limit cannot equal the stored one. */
            assertFalse(c.replace(k, big, v));
            assertFalse(c.remove(k, big));
            for (long ttl : new long[] {0, -1, Long.MIN_VALUE}) {
                assertThrows(IllegalArgumentException.class, () -> c.put(k, v, ttl, TimeUnit.SECONDS));
                assertThrows(IllegalArgumentException.class,
                        () -> c.putIfAbsent(k, v, ttl, TimeUnit.SECONDS));
                assertThrows(IllegalArgumentException.class,
                        () -> c.addOrReplace(k, v, v, ttl, TimeUnit.SECONDS));
                assertThrows(IllegalArgumentException.class, () -> c.touch(k, ttl, TimeUnit.SECONDS));
            }
            assertEquals("v", s.text(c.get(k)), cfg + ": a bad TTL keeps the value");
            /* Huge TTLs are lifetimes, never an overflow into the past. */
            for (long ttl : new long[] {Long.MAX_VALUE - 1, 1L << 62, Long.MAX_VALUE / 1000}) {
                for (TimeUnit unit : TimeUnit.values()) {
                    c.put(k, v, ttl, unit);
                    assertEquals("v", s.text(c.get(k)), cfg + " ttl " + ttl + " " + unit);
                    assertTrue(c.remainingTTLmillis(k) > 0, cfg + " ttl " + ttl + " " + unit);
                    assertTrue(c.touch(k, ttl, unit));
                    s.clock.advance(1000);
                    assertTrue(c.containsKey(k), cfg + " ttl " + ttl + " " + unit);
                }
            }
            c.put(k, v, LarderCache.NEVER_EXPIRE, TimeUnit.NANOSECONDS);
            assertEquals(LarderCache.NEVER_EXPIRE, c.remainingTTLmillis(k));
            c.put(k, v, 1, TimeUnit.NANOSECONDS);
            assertEquals(1, c.remainingTTLmillis(k), "a TTL under 1 ms rounds up to 1 ms");
            s.clock.advance(1);
            assertFalse(c.containsKey(k));
            assertThrows(IndexOutOfBoundsException.class,
                    () -> c.getAllInto(new Object[] {k}, 2, new byte[2][], new int[2]));
            assertThrows(IndexOutOfBoundsException.class,
                    () -> c.getAllInto(new Object[] {k}, -1, new byte[1][], new int[1]));
            assertThrows(java.nio.ReadOnlyBufferException.class,
                    () -> c.getInto(k, ByteBuffer.allocate(8).asReadOnlyBuffer()));
            assertThrows(IllegalArgumentException.class,
                    () -> c.setCapacity(LarderCacheBuilder.MIN_CAPACITY - 1));
            if (cfg.pooled) {
                assertThrows(IllegalStateException.class, () -> c.setCapacity(1 << 20),
                        "the pool sets it");
            } else {
                c.setCapacity(1 << 20);
                assertEquals(1 << 20, c.capacity());
            }
        }
    }

    /** Every method of a closed cache throws IllegalStateException; close is idempotent. */
    @ParameterizedTest
    @MethodSource("configs")
    void everyCallAfterCloseIsRefused(Config cfg) throws Exception {
        Subject s = new Subject(cfg, 4096);
        LarderCache<Object, Object> c = s.cache;
        Object k = s.k("k");
        Object v = s.v("v");
        c.put(k, v);
        c.close();
        c.close();
        List<Runnable> calls = Arrays.asList(() -> c.get(k), () -> c.getInto(k, new byte[8]),
                () -> c.getInto(k, ByteBuffer.allocate(8)), () -> c.getDirect(k, x -> { }),
                () -> c.getAllInto(new Object[] {k}, 1, new byte[][] {new byte[8]}, new int[1]),
                () -> c.getAll(Arrays.asList(k)), () -> c.containsKey(k), () -> c.remainingTTLmillis(k),
                () -> c.put(k, v), () -> c.put(k, v, 1, TimeUnit.SECONDS), () -> c.putIfAbsent(k, v),
                () -> c.putIfAbsent(k, v, 1, TimeUnit.SECONDS), () -> c.replace(k, v),
                () -> c.replace(k, v, v),
                () -> c.addOrReplace(k, v, v), () -> c.addOrReplace(k, v, v, 1, TimeUnit.SECONDS),
                () -> c.remove(k), () -> c.remove(k, v), () -> c.touch(k),
                () -> c.touch(k, 1, TimeUnit.SECONDS),
                c::clear, () -> c.setCapacity(1 << 20), c::capacity, c::size, c::cleanUp, c::memUsed,
                c::freeCapacity, c::stats, c::sizeClassStats, c::keyIterator, c::entryIterator,
                c::poolStats,
                /* Batches of no keys: they looked nothing up, so they returned an
                 * empty map and 0 where every other call throws. */
                () -> c.getAll(Collections.emptyList()),
                () -> c.getAllInto(new Object[0], 0, new byte[0][], new int[0]));
        for (int i = 0; i < calls.size(); i++) {
            assertThrows(IllegalStateException.class, calls.get(i)::run, cfg + " call #" + i);
        }
        assertEquals(s.pool, c.pool());
        if (s.pool != null) {
            s.pool.close();
        }
    }

    /*
     * An iterator whose cache was closed throws IllegalStateException from
     * hasNext and next every time (its Javadoc: "also from hasNext/next once
     * it is"); it answered false from the second call on, as if the cache
     * had simply run out of entries.
     */
    @Test
    void iteratorOfAClosedCacheKeepsThrowing() {
        LarderCache<String, String> c = TestSupport.strings().build();
        for (int i = 0; i < 100; i++) {
            c.put("k" + i, "v" + i);
        }
        CloseableIterator<String> fresh = c.keyIterator();
        CloseableIterator<Map.Entry<String, String>> started = c.entryIterator();
        assertTrue(started.hasNext());
        started.next();
        CloseableIterator<String> done = c.keyIterator();
        while (done.hasNext()) {
            done.next();
        }
        c.close();
        for (int i = 0; i < 3; i++) {
            assertThrows(IllegalStateException.class, fresh::hasNext, "call " + i);
            assertThrows(IllegalStateException.class, fresh::next, "call " + i);
            assertThrows(IllegalStateException.class, started::hasNext, "call " + i);
            assertThrows(IllegalStateException.class, started::next, "call " + i);
        }
        /* One that had reached its end, or was closed, is simply done. */
        assertFalse(done.hasNext());
        fresh.close();
        fresh.close();
        assertFalse(fresh.hasNext());
        started.close();
        assertFalse(started.hasNext());
    }

    /*
     * Each setter checks its argument at once, naming the limit (the
     * builder's Javadoc). writeWaitMillis took any value >= 0, and build()
     * then failed with the engine's bare "invalid argument" for one over an
     * hour (larder_config_set_write_wait_ms).
     */
    @Test
    void writeWaitIsCheckedByItsSetter() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TestSupport.strings().writeWaitMillis(3_600_001));
        assertTrue(e.getMessage().contains("3600000"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> TestSupport.strings().writeWaitMillis(Long.MAX_VALUE));
        assertThrows(IllegalArgumentException.class, () -> TestSupport.strings().writeWaitMillis(-1));
        for (long ms : new long[] {0, 1, 3_600_000}) {
            try (LarderCache<String, String> c = TestSupport.strings().writeWaitMillis(ms).build()) {
                c.put("a", "b");
                assertEquals("b", c.get("a"));
            }
        }
    }

    /*
     * expireAfterAccess extends deadlines by the default TTL, and its Javadoc
     * says it needs one; without it build() gave a cache whose reads extended
     * nothing, so an entry put with its own TTL expired however often it was
     * read (Caffeine's expireAfterAccess always has a duration). build()
     * refuses the combination, naming both settings.
     */
    @Test
    void expireAfterAccessNeedsADefaultTtl() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TestSupport.strings().expireAfterAccess(true).build().close());
        assertTrue(e.getMessage().contains("expireAfterAccess")
                && e.getMessage().contains("defaultTTLmillis"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> TestSupport.strings()
                .defaultTTLmillis(0).expireAfterAccess(true).build().close());
        ManualClock clock = new ManualClock(0);
        try (LarderCache<String, String> c = TestSupport.strings().clock(clock)
                .defaultTTLmillis(1000).expireAfterAccess(true).build()) {
            c.put("k", "v", 100, TimeUnit.MILLISECONDS);
            clock.advance(50);
            assertEquals("v", c.get("k"));
            clock.advance(200);
            assertEquals("v", c.get("k"), "the read at 50 ms extended the deadline by 1 s");
        }
        TestSupport.strings().expireAfterAccess(false).build().close();
    }

    /*
     * getAllInto returns how many it found, the keys whose lengths[i] is not
     * NOT_FOUND. A value too long for the batch's buffer is read again on
     * its own; when the key went meanwhile (here removed by the key
     * serializer as that read serializes it, deterministically), its length
     * was NOT_FOUND but it was still counted as found.
     */
    @Test
    void getAllIntoCountsWhatItReturns() {
        /* Serializations of "big" left before the one that removes it (0: never). */
        AtomicInteger removeAt = new AtomicInteger();
        AtomicReference<LarderCache<String, byte[]>> cache = new AtomicReference<>();
        CacheSerializer<String> keys = TestSupport.stringSerializer(value -> {
            if (value.equals("big") && removeAt.get() > 0 && removeAt.decrementAndGet() == 0) {
                cache.get().remove("big");
            }
        }, CacheSerializers.STRING::serializedSize);
        try (LarderCache<String, byte[]> c = LarderCacheBuilder.<String, byte[]>newBuilder()
                .keySerializer(keys).valueSerializer(CacheSerializers.BYTE_ARRAY)
                .maxValueBytes(4 << 20).build()) {
            cache.set(c);
            /* Over the 1 MiB a thread's scratch keeps between calls: never in the batch's buffer. */
            c.put("big", new byte[2 << 20]);
            c.put("small", new byte[8]);
            byte[][] dsts = {new byte[2 << 20], new byte[8], new byte[8]};
            int[] lens = new int[3];
            String[] ks = {"big", "small", "none"};
            assertEquals(2, c.getAllInto(ks, 3, dsts, lens));
            assertArrayEquals(new int[] {2 << 20, 8, LarderCache.NOT_FOUND}, lens);
            /* The batch serializes "big" once; the read of its long value on its own serializes
             * it again, and that second serialization removes it. */
            removeAt.set(2);
            int found = c.getAllInto(ks, 3, dsts, lens);
            assertEquals(0, removeAt.get(), "the key was serialized again, and removed");
            assertFalse(c.containsKey("big"));
            int counted = 0;
            for (int len : lens) {
                counted += len == LarderCache.NOT_FOUND ? 0 : 1;
            }
            assertEquals(counted, found, "lengths " + Arrays.toString(lens));
        }
    }

    /** docs/java.md: iteration is not a read: no hit counted, no expire-after-access deadline moved. */
    @Test
    void iterationIsNotARead() {
        ManualClock clock = new ManualClock(0);
        try (LarderCache<String, String> c = TestSupport.strings().clock(clock).defaultTTLmillis(1000)
                .expireAfterAccess(true).build()) {
            c.put("a", "1");
            c.put("b", "2");
            long hits = c.stats().hitCount();
            long misses = c.stats().missCount();
            clock.set(500);
            for (int i = 0; i < 3; i++) {
                try (CloseableIterator<Map.Entry<String, String>> it = c.entryIterator()) {
                    assertEquals(2, countOf(it));
                }
                try (CloseableIterator<String> it = c.keyIterator()) {
                    assertEquals(2, countOf(it));
                }
            }
            assertEquals(hits, c.stats().hitCount());
            assertEquals(misses, c.stats().missCount());
            assertEquals(500, c.remainingTTLmillis("a"));
            clock.set(1000);
            assertFalse(c.containsKey("a"));
            try (CloseableIterator<String> it = c.keyIterator()) {
                assertFalse(it.hasNext(), "an expired entry is never reached");
            }
        }
    }

    private static int countOf(CloseableIterator<?> it) {
        int n = 0;
        while (it.hasNext()) {
            assertNotNull(it.next());
            n++;
        }
        return n;
    }

    /** After clear(), an iterator opened before it returns no entry it had not reached. */
    @Test
    void iteratorAfterClear() {
        try (LarderCache<String, String> c = TestSupport.strings().build()) {
            for (int i = 0; i < 1000; i++) {
                c.put("k" + i, "v" + i);
            }
            CloseableIterator<String> it = c.keyIterator();
            assertTrue(it.hasNext());
            it.next();
            c.clear();
            int after = 0;
            while (it.hasNext()) {
                it.next();
                after++;
            }
            assertTrue(after <= 1, "entries returned after clear(): " + after);
            CloseableIterator<String> empty = c.keyIterator();
            assertFalse(empty.hasNext());
            c.put("new", "x");
            try (CloseableIterator<String> one = c.keyIterator()) {
                assertEquals("new", one.next());
                assertFalse(one.hasNext());
            }
        }
    }

    /** The MXBean reads the cache, zeros once it is closed, and is unregistered by close. */
    @Test
    void mxBeanLifecycle() throws Exception {
        String name = "contract-" + System.nanoTime();
        ObjectName on = new ObjectName("org.larder:type=LarderCache,name=" + ObjectName.quote(name));
        LarderCache<String, String> c = TestSupport.strings().jmxName(name).build();
        c.put("a", "b");
        c.cleanUp();
        assertEquals(1L, ManagementFactory.getPlatformMBeanServer().getAttribute(on, "Size"));
        assertThrows(IllegalArgumentException.class, () -> TestSupport.strings().jmxName(name).build(),
                "a second cache under the same name");
        assertEquals("b", c.get("a"), "the refused build left the first cache alone");
        c.close();
        assertFalse(ManagementFactory.getPlatformMBeanServer().isRegistered(on));
        LarderCache<String, String> again = TestSupport.strings().jmxName(name).build();
        assertTrue(ManagementFactory.getPlatformMBeanServer().isRegistered(on));
        again.close();
        assertFalse(ManagementFactory.getPlatformMBeanServer().isRegistered(on));
    }

    /*
     * close() racing with every operation, iterators, batches, stats and the
     * MXBean included, with a listener running: the JVM never crashes, the
     * only exception is IllegalStateException, and once a thread saw it
     * every later call on that thread throws it too.
     */
    @Test
    void closeRacesWithEveryOperation() throws Exception {
        for (int round = 0; round < 40; round++) {
            Config cfg = configs().skip(round % 42).findFirst().orElseThrow();
            Subject s = new Subject(cfg, 4096, "contract-race-" + round + "-" + System.nanoTime());
            LarderCache<Object, Object> c = s.cache;
            Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                long seed = round * 31L + t;
                Thread th = new Thread(() -> {
                    try {
                        hammer(s, new SplittableRandom(seed));
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                });
                threads.add(th);
                th.start();
            }
            for (int i = 0; i < 200; i++) {
                c.put(s.k("k" + i % 32), s.v("v" + i));
            }
            c.close();
            for (Thread th : threads) {
                th.join(TestSupport.WAIT_MS);
                assertFalse(th.isAlive(), "a thread did not see the close");
            }
            if (!failures.isEmpty()) {
                Throwable first = failures.peek();
                throw new AssertionError(cfg + ": " + first, first);
            }
            if (s.pool != null) {
                s.pool.close();
            }
        }
    }

    /* The MXBean's figures, read through the platform server as a JMX client would: the
     * cache's, zeros once it is closed, or nothing once its close unregistered it. */
    private static void readBean(ObjectName name) {
        try {
            Object size = ManagementFactory.getPlatformMBeanServer().getAttribute(name, "Size");
            Object used = ManagementFactory.getPlatformMBeanServer().getAttribute(name, "UsedBytes");
            assertTrue((Long) size >= 0 && (Long) used >= 0);
        } catch (javax.management.InstanceNotFoundException unregistered) {
            /* closed */
        } catch (javax.management.JMException e) {
            throw new AssertionError(e);
        }
    }

    private static void hammer(Subject s, SplittableRandom rnd) {
        LarderCache<Object, Object> c = s.cache;
        Function<Integer, Object> key = i -> s.k("k" + i);
        byte[] dst = new byte[4096];
        byte[][] dsts = {new byte[4096], new byte[4096], new byte[4096]};
        int[] lens = new int[3];
        Object[] keys = {key.apply(1), key.apply(2), key.apply(3)};
        for (;;) {
            Object k = key.apply(rnd.nextInt(32));
            Object v = s.v("w" + rnd.nextInt(1000));
            try {
                switch (rnd.nextInt(20)) {
                case 0: c.put(k, v); break;
                case 1: c.get(k); break;
                case 2: c.getInto(k, dst); break;
                case 3: c.getDirect(k, view -> view.toByteArray()); break;
                case 4: c.getAllInto(keys, 3, dsts, lens); break;
                case 5: c.getAll(Arrays.asList(keys)); break;
                case 6: c.putIfAbsent(k, v, 5, TimeUnit.SECONDS); break;
                case 7: c.replace(k, v, v); break;
                case 8: c.addOrReplace(k, v, v); break;
                case 9: c.remove(k); break;
                case 10: c.touch(k); break;
                case 11: c.remainingTTLmillis(k); break;
                case 12:
                    try (CloseableIterator<Map.Entry<Object, Object>> it = c.entryIterator()) {
                        for (int i = 0; i < 5 && it.hasNext(); i++) {
                            it.next();
                        }
                    }
                    break;
                case 13: {
                    CloseableIterator<Object> it = c.keyIterator(); /* left open: the close frees it */
                    if (it.hasNext()) {
                        it.next();
                    }
                    break;
                }
                case 14: c.stats(); c.sizeClassStats(); break;
                case 15: c.size(); c.memUsed(); c.freeCapacity(); break;
                case 16: if (rnd.nextInt(10) == 0) { c.clear(); } break;
                case 17: if (rnd.nextInt(10) == 0) { c.cleanUp(); } else { readBean(s.jmx); } break;
                case 18: if (!s.cfg.pooled) { c.setCapacity(16L << 20); } else { c.poolStats(); } break;
                default: c.containsKey(k); break;
                }
            } catch (IllegalStateException closed) {
                try {
                    c.get(k);
                } catch (IllegalStateException again) {
                    return;
                }
                fail("a call succeeded after one was refused as closed");
            }
        }
    }
}
