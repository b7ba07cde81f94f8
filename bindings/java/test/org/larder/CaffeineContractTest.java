package org.larder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Where docs/java.md and the Javadoc promise Caffeine's behaviour, the same
 * sequence runs against Caffeine (Debian's 2.6.2, the benchmark's) and
 * larder in the same test, under each option both offer (sameSequenceSameResults'
 * table: expiry after write and after access, compression, shards, the
 * policies, the removal listener in all): the ConcurrentMap-shaped operations' results
 * (put, putIfAbsent, replace, the compare-and-set replace and remove, get,
 * getAll, containsKey), expiry after write on the same clock (absent at the deadline
 * in both), the weakly consistent iteration's contents, cleanUp() then the
 * size, the hit and miss counts, and the removal listener's records by key
 * and cause, the causes mapped (larder's CLEARED is Caffeine's EXPLICIT from invalidateAll; an
 * entry past its deadline that clear() reaches before the maintainer is
 * EXPIRED in both: docs/java.md). Not by value:
 * Caffeine 2.6.2 hands its listener the new value for replace(k, v) and
 * replace(k, old, v) (larder the old one, as for put; ContractTest checks
 * larder's values against its model). And the size against the entries
 * Caffeine's iterator gives: its estimatedSize() after cleanUp() may still
 * count entries past their deadline (seen: 18 where 12 were live), where
 * larder's is exact.
 */
class CaffeineContractTest {
    private static final long TTL_MS = 1000;

    /*
     * The sequence under each option beside Caffeine's: no expiry, expiry
     * after write or after access (Caffeine's expireAfterAccess), the
     * compression (values long enough to be compressed), shards and each
     * eviction policy, every one with the removal listener; room for every
     * key, so no policy evicts and every removal is the sequence's own
     * (which entries a full cache evicts is the policy's choice, not a
     * contract: docs/java.md). Under expiry after access the clock moves in
     * steps of 100 ms: a read there extends a deadline only when it is more
     * than the slack (TTL / 64) short of a full TTL (larder.h), so an access
     * within that slack of the last one leaves the entry up to 15 ms less
     * than Caffeine's; 100 ms steps keep every access out of it.
     */
    @ParameterizedTest
    @ValueSource(strings = {"none", "write", "access", "write+compress", "access+compress",
        "access+shards4", "write+shards2+compress", "lru", "fifo", "arc", "w_tiny_lfu",
        "s3fifo+access", "w_tiny_lfu_tuned+write"})
    void sameSequenceSameResults(String config) {
        List<String> options = Arrays.asList(config.split("\\+"));
        boolean afterWrite = options.contains("write");
        boolean afterAccess = options.contains("access");
        boolean compress = options.contains("compress");
        long seed = System.nanoTime();
        String where = config + ", seed " + seed;
        SplittableRandom rnd = new SplittableRandom(seed);
        ManualClock clock = new ManualClock(1_000_000);
        Queue<String> caffeineEvents = new ConcurrentLinkedQueue<>();
        Queue<String> larderEvents = new ConcurrentLinkedQueue<>();
        Caffeine<Object, Object> cb = Caffeine.newBuilder()
                .ticker(() -> TimeUnit.MILLISECONDS.toNanos(clock.millis()))
                .executor(Runnable::run)
                .recordStats()
                .removalListener((k, v, cause) -> caffeineEvents.add(k + "|" + cause));
        LarderCacheBuilder<String, String> lb = TestSupport.strings().clock(clock)
                .removalListener((k, v, cause) -> larderEvents.add(k + "|"
                        + (cause == RemovalCause.CLEARED ? "EXPLICIT" : cause.name())));
        for (String option : options) {
            if (option.equals("write")) {
                cb.expireAfterWrite(TTL_MS, TimeUnit.MILLISECONDS);
                lb.defaultTTLmillis(TTL_MS);
            } else if (option.equals("access")) {
                cb.expireAfterAccess(TTL_MS, TimeUnit.MILLISECONDS);
                lb.defaultTTLmillis(TTL_MS).expireAfterAccess(true);
            } else if (option.equals("compress")) {
                lb.compression(64);
            } else if (option.startsWith("shards")) {
                lb.shards(Integer.parseInt(option.substring(6)));
            } else if (!option.equals("none")) {
                lb.eviction(Eviction.valueOf(option.toUpperCase(java.util.Locale.ROOT)));
            }
        }
        Cache<String, String> caffeine = cb.build();
        ConcurrentMap<String, String> map = caffeine.asMap();
        String tail = compress ? " compressible".repeat(12) : "";
        try (LarderCache<String, String> larder = lb.build()) {
            int version = 0;
            /* The value each key was last given by a write both stored (the expected
             * value of a compare-and-set): read from neither cache, as Caffeine's
             * asMap().get() is an access under expireAfterAccess and larder has no
             * quiet read of a value. */
            Map<String, String> written = new HashMap<>();
            for (int step = 0; step < 3000; step++) {
                String k = "k" + rnd.nextInt(32);
                String v = "v" + ++version + tail;
                String at = where + " step " + step + " key " + k;
                /* Caffeine expires lazily, on the access: keep its clock-driven work in step. */
                caffeine.cleanUp();
                boolean stored = false;
                switch (rnd.nextInt(14)) {
                case 0:
                case 1:
                    map.put(k, v);
                    larder.put(k, v);
                    stored = true;
                    break;
                case 2:
                    stored = larder.putIfAbsent(k, v);
                    assertEquals(map.putIfAbsent(k, v) == null, stored, at);
                    break;
                case 3:
                    stored = larder.replace(k, v);
                    assertEquals(map.replace(k, v) != null, stored, at);
                    break;
                case 4: {
                    String old = written.containsKey(k) && rnd.nextBoolean() ? written.get(k) : "other";
                    stored = larder.replace(k, old, v);
                    assertEquals(map.replace(k, old, v), stored, at);
                    break;
                }
                case 5: {
                    String old = written.containsKey(k) && rnd.nextBoolean() ? written.get(k) : "other";
                    assertEquals(map.remove(k, old), larder.remove(k, old), at);
                    break;
                }
                case 6:
                    assertEquals(map.remove(k) != null, larder.remove(k), at);
                    break;
                case 7:
                    assertEquals(caffeine.getIfPresent(k), larder.get(k), at);
                    break;
                case 8:
                    assertEquals(map.containsKey(k), larder.containsKey(k), at);
                    break;
                case 9:
                    larder.cleanUp();
                    assertEquals(new HashMap<>(map).size(), larder.size(), at);
                    break;
                case 10:
                    if (rnd.nextInt(10) == 0) {
                        caffeine.invalidateAll();
                        larder.clear();
                    }
                    break;
                case 11: {
                    Map<String, String> seen = new HashMap<>();
                    try (CloseableIterator<Map.Entry<String, String>> it = larder.entryIterator()) {
                        it.forEachRemaining(e -> seen.put(e.getKey(), e.getValue()));
                    }
                    assertEquals(new HashMap<>(map), seen, at);
                    break;
                }
                case 12: {
                    List<String> keys = Arrays.asList(k, "k" + rnd.nextInt(32), "k" + rnd.nextInt(32));
                    assertEquals(caffeine.getAllPresent(keys), larder.getAll(keys), at);
                    break;
                }
                default:
                    if (afterAccess) {
                        clock.advance(100 * (rnd.nextInt(4) == 0 ? rnd.nextInt(15) : rnd.nextInt(2)));
                    } else if (afterWrite) {
                        clock.advance(rnd.nextInt(4) == 0 ? rnd.nextInt(1500) : rnd.nextInt(3));
                    }
                    break;
                }
                if (stored) {
                    written.put(k, v);
                }
                /* The counts along the way, not only at the end (every 8th step: stats() reads
                   every engine counter). */
                if (step % 8 == 0) {
                    LarderStats now = larder.stats();
                    assertEquals(caffeine.stats().hitCount(), now.hitCount(), at + ": hits");
                    assertEquals(caffeine.stats().missCount(), now.missCount(), at + ": misses");
                }
            }
            /* Hits and misses: reads count (get), presence and conditional writes do not. */
            LarderStats st = larder.stats();
            assertEquals(caffeine.stats().hitCount(), st.hitCount(), where + ": hits");
            assertEquals(caffeine.stats().missCount(), st.missCount(), where + ": misses");
            /* Everything expires: both report every entry left. */
            clock.advance(10 * TTL_MS);
            caffeine.cleanUp();
            larder.cleanUp();
            assertEquals(new HashMap<>(map).size(), larder.size(), where);
            int want = caffeineEvents.size();
            TestSupport.waitUntil(where + ": " + want + " removals reported",
                    () -> larderEvents.size() >= want);
            compare(new ArrayList<>(caffeineEvents), new ArrayList<>(larderEvents), where);
        }
    }

    /*
     * Listener code ported from Caffeine asks cause.wasEvicted() (the cache
     * removed the entry itself) rather than naming causes; larder's enum had
     * no such method, so that code did not compile. Each cause answers as
     * the Caffeine cause it stands for (EVICTED is SIZE, CLEARED is
     * invalidateAll's EXPLICIT).
     */
    @Test
    void wasEvictedAnswersAsCaffeines() {
        Map<RemovalCause, com.github.benmanes.caffeine.cache.RemovalCause> as = new HashMap<>();
        as.put(RemovalCause.EXPLICIT, com.github.benmanes.caffeine.cache.RemovalCause.EXPLICIT);
        as.put(RemovalCause.REPLACED, com.github.benmanes.caffeine.cache.RemovalCause.REPLACED);
        as.put(RemovalCause.EXPIRED, com.github.benmanes.caffeine.cache.RemovalCause.EXPIRED);
        as.put(RemovalCause.EVICTED, com.github.benmanes.caffeine.cache.RemovalCause.SIZE);
        as.put(RemovalCause.CLEARED, com.github.benmanes.caffeine.cache.RemovalCause.EXPLICIT);
        for (RemovalCause cause : RemovalCause.values()) {
            assertEquals(as.get(cause).wasEvicted(), cause.wasEvicted(), cause.name());
        }
    }

    /*
     * Expire after access, each operation once on the same clock: which of
     * them is an access that moves the deadline (read 600 ms after the put,
     * then asked 900 ms later: alive only if it was), what each returns, and
     * the hit and miss counts. Caffeine's putIfAbsent that finds the key reads
     * it (asMap() returns the present value), so it is an access there; larder's
     * was not, and the entry expired 400 ms early. Conditional writes that
     * fail on a different value (replace(k, old, v), remove(k, v)) and
     * containsKey are no access in either.
     */
    @ParameterizedTest
    @ValueSource(strings = {"get", "getAll", "miss", "containsKey", "putIfAbsent", "putIfAbsentTtl",
        "replace", "replaceIfEquals", "replaceIfEqualsFails", "removeIfEqualsFails", "put", "none",
        "getInto", "getDirect", "getAllInto", "entryIterator", "keyIterator", "remainingTTL"})
    void expireAfterAccessAsCaffeines(String op) {
        ManualClock clock = new ManualClock(1_000_000);
        Cache<String, String> caffeine = Caffeine.newBuilder()
                .ticker(() -> TimeUnit.MILLISECONDS.toNanos(clock.millis()))
                .executor(Runnable::run).recordStats()
                .expireAfterAccess(TTL_MS, TimeUnit.MILLISECONDS).build();
        ConcurrentMap<String, String> map = caffeine.asMap();
        try (LarderCache<String, String> larder = TestSupport.strings().clock(clock)
                .defaultTTLmillis(TTL_MS).expireAfterAccess(true).build()) {
            map.put("k", "v");
            larder.put("k", "v");
            clock.advance(600);
            Object c = null;
            Object l = null;
            switch (op) {
            case "get":
                c = caffeine.getIfPresent("k");
                l = larder.get("k");
                break;
            case "getAll":
                c = caffeine.getAllPresent(List.of("k"));
                l = larder.getAll(List.of("k"));
                break;
            case "miss":
                c = caffeine.getIfPresent("other");
                l = larder.get("other");
                break;
            case "containsKey":
                c = map.containsKey("k");
                l = larder.containsKey("k");
                break;
            case "putIfAbsent":
                c = map.putIfAbsent("k", "w") == null;
                l = larder.putIfAbsent("k", "w");
                break;
            case "putIfAbsentTtl": // larder's per-entry TTL is the first lifetime; the access extends by the default
                c = map.putIfAbsent("k", "w") == null;
                l = larder.putIfAbsent("k", "w", 50, TimeUnit.MILLISECONDS);
                break;
            case "replace":
                c = map.replace("k", "w") != null;
                l = larder.replace("k", "w");
                break;
            case "replaceIfEquals":
                c = map.replace("k", "v", "w");
                l = larder.replace("k", "v", "w");
                break;
            case "replaceIfEqualsFails":
                c = map.replace("k", "x", "w");
                l = larder.replace("k", "x", "w");
                break;
            case "removeIfEqualsFails":
                c = map.remove("k", "x");
                l = larder.remove("k", "x");
                break;
            case "put":
                map.put("k", "w");
                larder.put("k", "w");
                break;
            /* larder's byte reads are gets: each an access, as Caffeine's getIfPresent */
            case "getInto":
                c = caffeine.getIfPresent("k") != null;
                l = larder.getInto("k", new byte[8]) >= 0;
                break;
            case "getDirect":
                c = caffeine.getIfPresent("k") != null;
                l = larder.getDirect("k", view -> { });
                break;
            case "getAllInto":
                c = caffeine.getAllPresent(List.of("k")).size();
                l = larder.getAllInto(new String[] {"k"}, 1, new byte[1][8], new int[1]);
                break;
            /* a walk is no access in either (Caffeine's asMap() iterators read quietly) */
            case "entryIterator": {
                c = new HashMap<>(map);
                Map<String, String> seen = new HashMap<>();
                try (CloseableIterator<Map.Entry<String, String>> it = larder.entryIterator()) {
                    it.forEachRemaining(e -> seen.put(e.getKey(), e.getValue()));
                }
                l = seen;
                break;
            }
            case "keyIterator": {
                c = new ArrayList<>(map.keySet());
                List<String> seen = new ArrayList<>();
                try (CloseableIterator<String> it = larder.keyIterator()) {
                    it.forEachRemaining(seen::add);
                }
                l = seen;
                break;
            }
            /* no access: Caffeine's policy reads (ageOf) are quiet too */
            case "remainingTTL":
                c = caffeine.policy().expireAfterAccess().get().ageOf("k", TimeUnit.MILLISECONDS).getAsLong() == 600;
                l = larder.remainingTTLmillis("k") == TTL_MS - 600;
                break;
            default:
                break;
            }
            assertEquals(c, l, op + " returns");
            clock.advance(900);
            caffeine.cleanUp();
            larder.cleanUp();
            assertEquals(caffeine.getIfPresent("k"), larder.get("k"), op + ": alive 1,500 ms after the put");
            assertEquals(caffeine.stats().hitCount(), larder.stats().hitCount(), op + ": hits");
            assertEquals(caffeine.stats().missCount(), larder.stats().missCount(), op + ": misses");
        }
    }

    /*
     * Caffeine's evictionCount counts its expirations too (each removal that
     * wasEvicted()); larder keeps them apart: code moved from Caffeine that
     * reads evictionCount gets Caffeine's figure as evictionCount() +
     * expireCount() (docs/java.md).
     */
    @Test
    void evictionCountIsCaffeinesWithExpirationsAdded() {
        ManualClock clock = new ManualClock(1_000_000);
        Cache<String, String> caffeine = Caffeine.newBuilder()
                .ticker(() -> TimeUnit.MILLISECONDS.toNanos(clock.millis()))
                .executor(Runnable::run).recordStats()
                .expireAfterWrite(TTL_MS, TimeUnit.MILLISECONDS).build();
        try (LarderCache<String, String> larder = TestSupport.strings().clock(clock)
                .defaultTTLmillis(TTL_MS).build()) {
            for (int i = 0; i < 5; i++) {
                caffeine.put("k" + i, "v");
                larder.put("k" + i, "v");
            }
            clock.advance(2 * TTL_MS);
            caffeine.cleanUp();
            TestSupport.waitUntil("larder's 5 expirations", () -> larder.stats().expireCount() == 5);
            LarderStats st = larder.stats();
            assertEquals(5, caffeine.stats().evictionCount());
            assertEquals(0, st.evictionCount());
            assertEquals(caffeine.stats().evictionCount(), st.evictionCount() + st.expireCount());
        }
    }

    /*
     * getAll with a key given more than once (and a batch's worth of keys,
     * so the repeats cross a batch boundary): the same map, and each distinct
     * key counted once, a hit or a miss, as Caffeine's getAllPresent; larder
     * counted every occurrence.
     */
    @Test
    void getAllCountsEachKeyOnceAsCaffeines() {
        Cache<String, String> caffeine = Caffeine.newBuilder().recordStats().build();
        try (LarderCache<String, String> larder = TestSupport.strings().build()) {
            List<String> keys = new ArrayList<>();
            for (int i = 0; i < 300; i++) {
                if (i % 3 == 0) {
                    caffeine.put("k" + i, "v" + i);
                    larder.put("k" + i, "v" + i);
                }
                keys.add("k" + i);
                keys.add("k" + (i / 2));
            }
            keys.addAll(Arrays.asList("a", "a", "k0", "a"));
            assertEquals(caffeine.getAllPresent(keys), larder.getAll(keys));
            larder.cleanUp();
            assertEquals(caffeine.stats().hitCount(), larder.stats().hitCount(), "hits");
            assertEquals(caffeine.stats().missCount(), larder.stats().missCount(), "misses");
        }
    }

    /*
     * getAll and getAllInto of values too long for the batch's buffer
     * together (the scratch's first 4 KiB), which the binding reads again
     * one by one: the same map as Caffeine's getAllPresent and each key
     * counted once; the second read was a get, which counted those keys'
     * hits twice (6 for 4 keys of 3,000 bytes).
     */
    @Test
    void getAllOfLargeValuesCountsEachKeyOnceAsCaffeines() {
        Cache<String, String> caffeine = Caffeine.newBuilder().recordStats().build();
        try (LarderCache<String, String> larder = TestSupport.strings().build()) {
            List<String> keys = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                String v = i + "v".repeat(1000 * (i % 4));
                if (i % 5 != 4) {
                    caffeine.put("k" + i, v);
                    larder.put("k" + i, v);
                }
                keys.add("k" + i);
            }
            assertEquals(caffeine.getAllPresent(keys), larder.getAll(keys));
            larder.cleanUp();
            assertEquals(caffeine.stats().hitCount(), larder.stats().hitCount(), "getAll's hits");
            assertEquals(caffeine.stats().missCount(), larder.stats().missCount(), "getAll's misses");

            Map<String, String> present = caffeine.getAllPresent(keys);
            byte[][] values = new byte[keys.size()][4000];
            int[] lengths = new int[keys.size()];
            assertEquals(present.size(), larder.getAllInto(keys.toArray(new String[0]), keys.size(),
                    values, lengths));
            for (int i = 0; i < keys.size(); i++) {
                String want = present.get(keys.get(i));
                assertEquals(want, want == null ? null
                        : new String(values[i], 0, lengths[i], java.nio.charset.StandardCharsets.UTF_8),
                        keys.get(i));
            }
            larder.cleanUp();
            assertEquals(caffeine.stats().hitCount(), larder.stats().hitCount(), "getAllInto's hits");
            assertEquals(caffeine.stats().missCount(), larder.stats().missCount(), "getAllInto's misses");
        }
    }

    /*
     * getAll's map as getAllPresent's: unmodifiable, and in the order the
     * keys were first given (keys given twice, absent ones, and values past
     * the batch's buffer, which are read last, among them). getAll returned
     * a HashMap: a caller could write into it, and it iterated in hash order.
     */
    @Test
    void getAllsMapIsUnmodifiableAndInTheKeysOrderAsCaffeines() {
        Cache<String, String> caffeine = Caffeine.newBuilder().build();
        try (LarderCache<String, String> larder = TestSupport.strings().build()) {
            List<String> keys = new ArrayList<>();
            for (int i = 40; i > 0; i--) {
                String v = i + "v".repeat(i % 7 == 0 ? 3000 : 10);
                if (i % 5 != 4) {
                    caffeine.put("k" + i, v);
                    larder.put("k" + i, v);
                }
                keys.add("k" + i);
                if (i % 9 == 0) {
                    keys.add("k" + (i + 3));
                }
            }
            Map<String, String> want = caffeine.getAllPresent(keys);
            Map<String, String> got = larder.getAll(keys);
            assertEquals(new ArrayList<>(want.entrySet()), new ArrayList<>(got.entrySet()));
            assertThrows(UnsupportedOperationException.class, () -> want.put("k1", "x"));
            assertThrows(UnsupportedOperationException.class, () -> got.put("k1", "x"));
            assertThrows(UnsupportedOperationException.class, () -> got.remove("k1"));
            assertThrows(UnsupportedOperationException.class, () -> got.clear());
        }
    }

    /*
     * Caffeine's derived figures (requestCount, hitRate, missRate), which code
     * moved from Caffeine reads: larder's stats() had only the counts. Equal
     * on an unused cache (hit rate 1.0, miss rate 0.0, as Caffeine defines
     * them) and after the same reads.
     */
    @Test
    void requestCountAndRatesAsCaffeines() {
        Cache<String, String> caffeine = Caffeine.newBuilder().recordStats().build();
        try (LarderCache<String, String> larder = TestSupport.strings().build()) {
            for (int round = 0; round < 2; round++) {
                larder.cleanUp();
                com.github.benmanes.caffeine.cache.stats.CacheStats c = caffeine.stats();
                LarderStats l = larder.stats();
                assertEquals(c.requestCount(), l.requestCount(), "round " + round);
                assertEquals(c.hitRate(), l.hitRate(), 0.0, "round " + round);
                assertEquals(c.missRate(), l.missRate(), 0.0, "round " + round);
                for (int i = 0; i < 7; i++) {
                    caffeine.put("k" + i, "v");
                    larder.put("k" + i, "v");
                }
                for (int i = 0; i < 10; i++) {
                    assertEquals(caffeine.getIfPresent("k" + i), larder.get("k" + i));
                }
            }
        }
    }

    /*
     * The hit and miss counts after every kind of call, each beside the
     * Caffeine call it stands for (docs/java.md, "Coming from Caffeine":
     * getIfPresent and getAllPresent count, asMap()'s calls do not), and
     * larder's own calls beside none: the counts equal after each call. The
     * loads larder does not offer run as the docs' recipe (get, then
     * putIfAbsent) beside Cache.get(k, fn), with a function that returns a
     * value, returns null and throws: a hit or a miss in both (Caffeine's
     * load counts aside).
     */
    @Test
    void hitsAndMissesAfterEveryKindOfCallAsCaffeines() {
        Cache<String, String> caffeine = Caffeine.newBuilder().recordStats().executor(Runnable::run)
                .build();
        ConcurrentMap<String, String> map = caffeine.asMap();
        try (LarderCache<String, String> larder = TestSupport.strings().build()) {
            Map<String, Runnable[]> calls = new LinkedHashMap<>();
            calls.put("put", new Runnable[] {() -> map.put("k", "v"), () -> larder.put("k", "v")});
            calls.put("get hit", new Runnable[] {() -> caffeine.getIfPresent("k"),
                () -> larder.get("k")});
            calls.put("get miss", new Runnable[] {() -> caffeine.getIfPresent("z"),
                () -> larder.get("z")});
            calls.put("getInto", new Runnable[] {() -> caffeine.getIfPresent("k"),
                () -> larder.getInto("k", new byte[8])});
            calls.put("getInto, buffer too short", new Runnable[] {() -> { },
                () -> larder.getInto("k", new byte[0])});
            calls.put("getDirect", new Runnable[] {() -> caffeine.getIfPresent("k"),
                () -> larder.getDirect("k", v -> { })});
            calls.put("getDirect, consumer throws", new Runnable[] {() -> caffeine.getIfPresent("k"),
                () -> outcome(() -> larder.getDirect("k", v -> {
                    throw new IllegalStateException("consumer");
                }))});
            calls.put("getAll", new Runnable[] {() -> caffeine.getAllPresent(Arrays.asList("k", "z")),
                () -> larder.getAll(Arrays.asList("k", "z"))});
            calls.put("getAllInto", new Runnable[] {
                () -> caffeine.getAllPresent(Arrays.asList("k", "z")),
                () -> larder.getAllInto(new String[] {"k", "z"}, 2, new byte[2][8], new int[2])});
            calls.put("containsKey", new Runnable[] {() -> map.containsKey("k"),
                () -> larder.containsKey("k")});
            calls.put("remainingTTLmillis", new Runnable[] {() -> { },
                () -> larder.remainingTTLmillis("k")});
            calls.put("putIfAbsent", new Runnable[] {() -> map.putIfAbsent("k", "w"),
                () -> larder.putIfAbsent("k", "w")});
            calls.put("replace", new Runnable[] {() -> map.replace("k", "v2"),
                () -> larder.replace("k", "v2")});
            calls.put("replace(k, old, v)", new Runnable[] {() -> map.replace("k", "v2", "v3"),
                () -> larder.replace("k", "v2", "v3")});
            calls.put("addOrReplace", new Runnable[] {() -> { },
                () -> larder.addOrReplace("k", "v3", "v3")});
            calls.put("touch", new Runnable[] {() -> { }, () -> larder.touch("k")});
            calls.put("remove(k, v)", new Runnable[] {() -> map.remove("k", "no"),
                () -> larder.remove("k", "no")});
            calls.put("walk", new Runnable[] {() -> map.entrySet().forEach(e -> { }), () -> {
                try (CloseableIterator<Map.Entry<String, String>> it = larder.entryIterator()) {
                    it.forEachRemaining(e -> { });
                }
            }});
            calls.put("remove", new Runnable[] {() -> caffeine.invalidate("k"),
                () -> larder.remove("k")});
            for (String v : new String[] {"loaded", null, "throw"}) {
                Function<String, String> fn = k -> {
                    if ("throw".equals(v)) {
                        throw new IllegalStateException("load");
                    }
                    return v;
                };
                String key = "absent, then " + v;
                calls.put("get(k, fn) of " + v, new Runnable[] {
                    () -> outcome(() -> caffeine.get(key, fn)),
                    () -> outcome(() -> computeIfAbsent(larder, key, fn))});
            }
            calls.put("clear", new Runnable[] {caffeine::invalidateAll, larder::clear});
            for (Map.Entry<String, Runnable[]> call : calls.entrySet()) {
                call.getValue()[0].run();
                call.getValue()[1].run();
                larder.cleanUp();
                assertEquals(caffeine.stats().hitCount(), larder.stats().hitCount(),
                        "hits after " + call.getKey());
                assertEquals(caffeine.stats().missCount(), larder.stats().missCount(),
                        "misses after " + call.getKey());
            }
            assertTrue(larder.stats().hitCount() > 0 && larder.stats().missCount() > 0);
        }
    }

    /*
     * Null arguments as Caffeine's asMap() answers them: NullPointerException
     * for a null key or a null new value, but remove(key, null) is false (a
     * null value is never present: the ConcurrentMap contract), where larder
     * threw. The entry stays, the key is still checked, and the read counts
     * neither a hit nor a miss in either.
     */
    @Test
    void nullArgumentsAsCaffeines() {
        Cache<String, String> caffeine = Caffeine.newBuilder().recordStats().build();
        ConcurrentMap<String, String> map = caffeine.asMap();
        try (LarderCache<String, String> larder = TestSupport.strings().build()) {
            map.put("k", "v");
            larder.put("k", "v");
            List<String> calls = Arrays.asList("remove(k, null)", "remove(null, v)", "remove(null, null)",
                    "replace(k, null, v)", "replace(k, v, null)", "replace(k, null)", "putIfAbsent(k, null)",
                    "put(k, null)", "get(null)", "containsKey(null)", "remove(null)");
            for (String call : calls) {
                assertEquals(outcome(() -> caffeineCall(map, call)), outcome(() -> larderCall(larder, call)),
                        call);
            }
            larder.cleanUp();
            assertEquals(0, caffeine.stats().requestCount());
            assertEquals(0, larder.stats().hitCount() + larder.stats().missCount());
            assertEquals("v", map.get("k"));
            assertEquals("v", larder.get("k"));
            assertThrows(IllegalArgumentException.class, () -> larder.remove("", null), "the key is checked");
        }
    }

    /*
     * Code ported from Caffeine removes while it walks (asMap()'s iterators'
     * remove(), which removeIf on its views is built on) and writes through
     * an entry (setValue). larder's iterators threw
     * UnsupportedOperationException from remove() and its entries from
     * setValue(). Now both act as Caffeine's: remove() removes the key last
     * returned (the listener hears EXPLICIT), twice or before next() is an
     * IllegalStateException; setValue(v) puts v (REPLACED) and returns the
     * entry's old value; the walk goes on over the rest.
     */
    @Test
    void iteratorRemoveAndEntrySetValueAsCaffeines() {
        Queue<String> caffeineEvents = new ConcurrentLinkedQueue<>();
        Queue<String> larderEvents = new ConcurrentLinkedQueue<>();
        Cache<String, String> caffeine = Caffeine.newBuilder().executor(Runnable::run)
                .removalListener((k, v, cause) -> caffeineEvents.add(k + "|" + v + "|" + cause)).build();
        ConcurrentMap<String, String> map = caffeine.asMap();
        try (LarderCache<String, String> larder = TestSupport.strings()
                .removalListener((k, v, cause) -> larderEvents.add(k + "|" + v + "|" + cause)).build()) {
            for (int i = 0; i < 60; i++) {
                map.put("k" + i, "v" + i);
                larder.put("k" + i, "v" + i);
            }
            List<String> caffeineOld = new ArrayList<>();
            List<String> larderOld = new ArrayList<>();
            java.util.Iterator<Map.Entry<String, String>> ci = map.entrySet().iterator();
            assertEquals(IllegalStateException.class, outcome(() -> { ci.remove(); return null; }));
            walk(ci, caffeineOld);
            try (CloseableIterator<Map.Entry<String, String>> li = larder.entryIterator()) {
                assertEquals(IllegalStateException.class, outcome(() -> { li.remove(); return null; }));
                walk(li, larderOld);
            }
            Collections.sort(caffeineOld);
            Collections.sort(larderOld);
            assertEquals(caffeineOld, larderOld, "setValue's returns");
            /* The key iterator's remove, as asMap().keySet()'s. */
            for (java.util.Iterator<String> it : Arrays.<java.util.Iterator<String>>asList(
                    map.keySet().iterator(), larder.keyIterator())) {
                while (it.hasNext()) {
                    if (it.next().endsWith("1")) {
                        it.remove();
                    }
                }
            }
            larder.cleanUp();
            Map<String, String> larderLeft = new HashMap<>();
            try (CloseableIterator<Map.Entry<String, String>> li = larder.entryIterator()) {
                li.forEachRemaining(e -> larderLeft.put(e.getKey(), e.getValue()));
            }
            assertEquals(new HashMap<>(map), larderLeft);
            assertEquals(map.size(), larder.size());
            awaitRecords(caffeineEvents, larderEvents);
            List<String> c = sorted(caffeineEvents);
            List<String> l = sorted(larderEvents);
            assertEquals(c, l, "listener records");
            /* invalidateAll() (larder: clear()) in the middle of a walk: larder returns nothing
             * more; Caffeine 2.6.2 may return the one key it had read ahead (seen: 1). */
            List<Integer> rest = new ArrayList<>();
            java.util.Iterator<String> cw = map.keySet().iterator();
            try (CloseableIterator<String> lw = larder.keyIterator()) {
                for (java.util.Iterator<String> it : Arrays.<java.util.Iterator<String>>asList(cw, lw)) {
                    it.next();
                    if (it == cw) {
                        caffeine.invalidateAll();
                    } else {
                        larder.clear();
                    }
                    int n = 0;
                    while (it.hasNext()) {
                        it.next();
                        n++;
                    }
                    rest.add(n);
                }
            }
            assertTrue(rest.get(0) <= 1, "Caffeine: " + rest.get(0) + " keys after invalidateAll()");
            assertEquals(0, rest.get(1), "keys returned after the clear");
        }
    }

    /*
     * A removal listener that throws on every call. Caffeine (2.6.2) leaves
     * the exception to its executor (the common ForkJoinPool by default,
     * whose worker prints it; a direct executor such as Runnable::run lets
     * it reach the caller of the write): here a direct executor that counts
     * and drops it, as larder's maintainer does (listenerFailures(), logged
     * once per cache). Side by side, with the
     * stats after each step: every write's result and every read the same,
     * no exception reaching the caller, the contents the same, and every
     * removal still heard (the records each listener made before throwing,
     * larder's CLEARED as Caffeine's EXPLICIT).
     */
    @Test
    void throwingRemovalListenerAsCaffeines() {
        java.util.concurrent.atomic.AtomicLong caffeineFailures = new java.util.concurrent.atomic.AtomicLong();
        Queue<String> caffeineEvents = new ConcurrentLinkedQueue<>();
        Queue<String> larderEvents = new ConcurrentLinkedQueue<>();
        Cache<String, String> caffeine = Caffeine.newBuilder().recordStats()
                .executor(task -> {
                    try {
                        task.run();
                    } catch (IllegalStateException e) {
                        caffeineFailures.incrementAndGet();
                    }
                })
                .removalListener((k, v, cause) -> {
                    caffeineEvents.add(k + "|" + cause);
                    throw new IllegalStateException("listener failure for " + k);
                }).build();
        ConcurrentMap<String, String> map = caffeine.asMap();
        try (LarderCache<String, String> larder = TestSupport.strings()
                .removalListener((k, v, cause) -> {
                    larderEvents.add(k + "|" + (cause == RemovalCause.CLEARED ? "EXPLICIT" : cause.name()));
                    throw new IllegalStateException("listener failure for " + k);
                }).build()) {
            for (int i = 0; i < 40; i++) {
                String k = "k" + (i % 10);
                String at = "step " + i;
                assertEquals(map.put(k, "v" + i) == null, !larder.containsKey(k), at);
                larder.put(k, "v" + i);
                assertEquals(map.replace(k, "v" + i, "w" + i), larder.replace(k, "v" + i, "w" + i), at);
                assertEquals(map.putIfAbsent(k, "x") == null, larder.putIfAbsent(k, "x"), at);
                if (i % 3 == 0) {
                    assertEquals(map.remove(k) != null, larder.remove(k), at);
                }
                if (i % 4 == 0) {
                    assertEquals(map.remove(k, "w" + i), larder.remove(k, "w" + i), at);
                }
                assertEquals(caffeine.getIfPresent(k), larder.get(k), at);
                assertEquals(caffeine.getIfPresent("absent"), larder.get("absent"), at);
                larder.cleanUp();
                assertEquals(caffeine.stats().hitCount(), larder.stats().hitCount(), at + " hits");
                assertEquals(caffeine.stats().missCount(), larder.stats().missCount(), at + " misses");
            }
            larder.cleanUp();
            assertEquals(new HashMap<>(map), larder.getAll(map.keySet()));
            assertEquals(map.size(), larder.size());
            caffeine.invalidateAll();
            larder.clear();
            larder.cleanUp();
            assertEquals(0, larder.size());
            int want = caffeineEvents.size();
            TestSupport.waitUntil(want + " removals reported", () -> larderEvents.size() >= want
                    && larder.stats().listenerFailures() >= want);
            compare(new ArrayList<>(caffeineEvents), new ArrayList<>(larderEvents), "a throwing listener");
            assertEquals(want, caffeineFailures.get());
            assertEquals(want, larder.stats().listenerFailures());
            larder.put("after", "v");
            assertEquals("v", larder.get("after"), "the cache still serves");
        }
    }

    /*
     * compute, computeIfPresent, computeIfAbsent and merge, which larder does
     * not offer, written as docs/java.md's "Coming from Caffeine" says (a
     * get, then putIfAbsent, replace(k, old, v) or remove(k, old) in a
     * loop), beside Caffeine's asMap() calls, with functions that return
     * null every third step, expiry after write on one clock moved 300 ms
     * every fifth step: the same results, the same contents after each step,
     * and the same removal records (a null from the function removes the
     * entry, EXPLICIT; a new value replaces it, REPLACED with the old value;
     * an entry past its deadline is EXPIRED, also when the recipe's write
     * finds it), the clock moved past every deadline before the last
     * cleanUp(), so that both report every entry left as EXPIRED. Not the hit and miss counts: the recipe's get counts one,
     * Caffeine's asMap() calls none (docs/java.md). Not SIZE: which entry a
     * full cache evicts is each policy's choice. computeIfAbsent's function
     * never returns null here: Caffeine 2.6.2 then drops an expired entry
     * without telling its listener (seen in 2 runs of 6; the next test).
     */
    @Test
    void computeAndMergeRecipesAsCaffeines() {
        Queue<String> caffeineEvents = new ConcurrentLinkedQueue<>();
        Queue<String> larderEvents = new ConcurrentLinkedQueue<>();
        ManualClock clock = new ManualClock(1_000_000);
        Cache<String, String> caffeine = Caffeine.newBuilder().executor(Runnable::run)
                .ticker(() -> TimeUnit.MILLISECONDS.toNanos(clock.millis()))
                .expireAfterWrite(TTL_MS, TimeUnit.MILLISECONDS)
                .removalListener((k, v, cause) -> caffeineEvents.add(k + "|" + v + "|" + cause))
                .<String, String>build();
        ConcurrentMap<String, String> map = caffeine.asMap();
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        try (LarderCache<String, String> larder = TestSupport.strings().clock(clock)
                .defaultTTLmillis(TTL_MS)
                .removalListener((k, v, cause) -> larderEvents.add(k + "|" + v + "|" + cause)).build()) {
            for (int step = 0; step < 400; step++) {
                if (step % 5 == 4) {
                    clock.advance(300);
                }
                String k = "k" + rnd.nextInt(6);
                int i = step;
                BiFunction<String, String, String> f =
                        (a, b) -> i % 3 == 0 ? null : a + "+" + b + i;
                Function<String, String> load = a -> a + i;
                String op = new String[] {"compute", "computeIfPresent", "computeIfAbsent",
                    "merge"}[rnd.nextInt(4)];
                String where = op + "(" + k + ") at step " + step + ", seed " + seed;
                switch (op) {
                case "compute":
                    assertEquals(map.compute(k, f), compute(larder, k, f), where);
                    break;
                case "computeIfPresent":
                    assertEquals(map.computeIfPresent(k, f), computeIfPresent(larder, k, f), where);
                    break;
                case "computeIfAbsent":
                    assertEquals(map.computeIfAbsent(k, load), computeIfAbsent(larder, k, load), where);
                    break;
                default:
                    assertEquals(map.merge(k, "m" + i, f), merge(larder, k, "m" + i, f), where);
                }
                Map<String, String> contents = new HashMap<>();
                try (CloseableIterator<Map.Entry<String, String>> it = larder.entryIterator()) {
                    it.forEachRemaining(e -> contents.put(e.getKey(), e.getValue()));
                }
                assertEquals(new HashMap<>(map), contents, where);
            }
            clock.advance(2 * TTL_MS);
            caffeine.cleanUp();
            larder.cleanUp();
            awaitRecords(caffeineEvents, larderEvents);
            List<String> c = sorted(caffeineEvents);
            List<String> l = sorted(larderEvents);
            for (String cause : new String[] {"|EXPLICIT", "|REPLACED", "|EXPIRED"}) {
                assertTrue(c.toString().contains(cause), cause + " in " + c);
            }
            assertEquals(c, l, "listener records, seed " + seed);
        }
    }

    /*
     * computeIfAbsent's recipe with a function that returns null, on a key
     * whose entry is past its deadline: null, nothing stored, and the entry
     * reported EXPIRED, as larder reports every expiry. Caffeine 2.6.2's
     * asMap().computeIfAbsent removes that entry without telling its
     * listener (docs/java.md); its compute and computeIfPresent report it.
     */
    @Test
    void aNullLoadOverAnExpiredEntryReportsItExpired() {
        ManualClock clock = new ManualClock(1_000_000);
        Queue<String> events = new ConcurrentLinkedQueue<>();
        try (LarderCache<String, String> larder = TestSupport.strings().clock(clock)
                .defaultTTLmillis(TTL_MS)
                .removalListener((k, v, cause) -> events.add(k + "|" + v + "|" + cause)).build()) {
            larder.put("k", "v");
            clock.advance(TTL_MS);
            assertEquals(null, computeIfAbsent(larder, "k", k -> null));
            larder.cleanUp();
            assertEquals(Arrays.asList("k|v|EXPIRED"), new ArrayList<>(events));
            assertEquals(0, larder.size());
        }
    }

    /* The recipes of docs/java.md ("Coming from Caffeine": compute, merge, get(k, fn)). */
    private static String compute(LarderCache<String, String> c, String k,
            BiFunction<String, String, String> f) {
        for (;;) {
            String old = c.get(k);
            String v = f.apply(k, old);
            if (old == null ? v == null || c.putIfAbsent(k, v)
                    : v == null ? c.remove(k, old) : c.replace(k, old, v)) {
                return v;
            }
        }
    }

    private static String computeIfPresent(LarderCache<String, String> c, String k,
            BiFunction<String, String, String> f) {
        for (;;) {
            String old = c.get(k);
            if (old == null) {
                return null;
            }
            String v = f.apply(k, old);
            if (v == null ? c.remove(k, old) : c.replace(k, old, v)) {
                return v;
            }
        }
    }

    private static String computeIfAbsent(LarderCache<String, String> c, String k,
            Function<String, String> load) {
        for (;;) {
            String old = c.get(k);
            if (old != null) {
                return old;
            }
            String v = load.apply(k);
            if (v == null || c.putIfAbsent(k, v)) {
                return v;
            }
        }
    }

    private static String merge(LarderCache<String, String> c, String k, String value,
            BiFunction<String, String, String> f) {
        for (;;) {
            String old = c.get(k);
            String v = old == null ? value : f.apply(old, value);
            if (old == null ? c.putIfAbsent(k, v)
                    : v == null ? c.remove(k, old) : c.replace(k, old, v)) {
                return v;
            }
        }
    }

    /* Removes every entry whose number is even, sets the value of every third
     * other one, recording setValue's returns; remove twice is refused. */
    private static void walk(java.util.Iterator<Map.Entry<String, String>> it, List<String> old) {
        while (it.hasNext()) {
            Map.Entry<String, String> e = it.next();
            int n = Integer.parseInt(e.getKey().substring(1));
            if (n % 2 == 0) {
                it.remove();
                assertEquals(IllegalStateException.class, outcome(() -> { it.remove(); return null; }));
            } else if (n % 3 == 0) {
                old.add(e.getKey() + "=" + e.setValue("w" + n) + "->" + e.getValue());
            }
        }
    }

    private static Object caffeineCall(ConcurrentMap<String, String> m, String call) {
        switch (call) {
        case "remove(k, null)": return m.remove("k", null);
        case "remove(null, v)": return m.remove(null, "v");
        case "remove(null, null)": return m.remove(null, null);
        case "replace(k, null, v)": return m.replace("k", null, "v");
        case "replace(k, v, null)": return m.replace("k", "v", null);
        case "replace(k, null)": return m.replace("k", null) != null;
        case "putIfAbsent(k, null)": return m.putIfAbsent("k", null) == null;
        case "put(k, null)": return m.put("k", null);
        case "get(null)": return m.get(null);
        case "containsKey(null)": return m.containsKey(null);
        default: return m.remove(null) != null;
        }
    }

    private static Object larderCall(LarderCache<String, String> c, String call) {
        switch (call) {
        case "remove(k, null)": return c.remove("k", null);
        case "remove(null, v)": return c.remove(null, "v");
        case "remove(null, null)": return c.remove(null, null);
        case "replace(k, null, v)": return c.replace("k", null, "v");
        case "replace(k, v, null)": return c.replace("k", "v", null);
        case "replace(k, null)": return c.replace("k", null);
        case "putIfAbsent(k, null)": return c.putIfAbsent("k", null);
        case "put(k, null)": c.put("k", null); return null;
        case "get(null)": return c.get(null);
        case "containsKey(null)": return c.containsKey(null);
        default: return c.remove(null);
        }
    }

    /* The result, or the exception's class. */
    private static Object outcome(java.util.function.Supplier<Object> call) {
        try {
            return call.get();
        } catch (RuntimeException e) {
            return e.getClass();
        }
    }

    /* Until larder's listener has heard as many removals as Caffeine's (it
     * runs on the maintainer, after the call). */
    private static void awaitRecords(Queue<String> caffeine, Queue<String> larder) {
        int want = caffeine.size();
        TestSupport.waitUntil(want + " removals reported", () -> larder.size() >= want);
    }

    private static List<String> sorted(Queue<String> records) {
        List<String> l = new ArrayList<>(records);
        Collections.sort(l);
        return l;
    }

    /* Equal multisets of records, but for an expired entry clear() reached first. */
    private static void compare(List<String> caffeine, List<String> larder, String where) {
        List<String> missing = new ArrayList<>(caffeine);
        List<String> extra = new ArrayList<>(larder);
        for (String r : larder) {
            missing.remove(r);
        }
        for (String r : caffeine) {
            extra.remove(r);
        }
        for (String r : new ArrayList<>(missing)) {
            if (r.endsWith("|EXPIRED") && extra.remove(r.substring(0, r.length() - 8) + "|EXPLICIT")) {
                missing.remove(r);
            }
        }
        if (!missing.isEmpty() || !extra.isEmpty()) {
            Collections.sort(missing);
            Collections.sort(extra);
            fail(where + ": Caffeine's records larder did not report " + missing
                    + ", larder's that Caffeine did not " + extra + " (of " + caffeine.size() + ")");
        }
        assertTrue(caffeine.size() > 0, where);
    }
}
