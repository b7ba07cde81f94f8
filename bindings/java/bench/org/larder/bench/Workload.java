package org.larder.bench;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The keys and values every engine of a run shares: n keys of 16 bytes
 * (distinct: an index and a mix of it), values of valueBytes. Keys exist as
 * byte arrays (larder), as prebuilt wrapper objects with their hash cached
 * (Caffeine, ConcurrentHashMap: no allocation per lookup), and packed in a
 * direct buffer (the C loops).
 */
final class Workload {
    static final int KEY_BYTES = 16;

    final int n;
    final int valueBytes;
    final byte[][] keys;
    final Key[] keyObjects;
    final ByteBuffer packedKeys;

    Workload(int n, int valueBytes) {
        this.n = n;
        this.valueBytes = valueBytes;
        keys = new byte[n][];
        keyObjects = new Key[n];
        packedKeys = ByteBuffer.allocateDirect(n * KEY_BYTES);
        for (int i = 0; i < n; i++) {
            ByteBuffer b = ByteBuffer.allocate(KEY_BYTES).putLong(i).putLong(mix(i));
            keys[i] = b.array();
            keyObjects[i] = new Key(keys[i]);
            packedKeys.put(keys[i]);
        }
        packedKeys.clear();
    }

    /** A value for key i (its index in the first bytes). */
    byte[] value(int i) {
        byte[] v = new byte[valueBytes];
        for (int j = 0; j < Math.min(4, valueBytes); j++) {
            v[j] = (byte) (i >>> (8 * j));
        }
        return v;
    }

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** A per-thread xorshift stream; the same as bench_jni.c's pick(). */
    static final class Rng {
        private long s;

        Rng(long seed) {
            s = seed | 1;
        }

        long next() {
            s ^= s << 13;
            s ^= s >>> 7;
            s ^= s << 17;
            return s;
        }

        /** Uniform in [0, n). */
        int pick(int n) {
            return (int) (((next() >>> 32) * n) >>> 32);
        }
    }

    /** A key object as an on-heap cache user would keep it. */
    static final class Key {
        final byte[] bytes;
        private final int hash;

        Key(byte[] bytes) {
            this.bytes = bytes;
            this.hash = Arrays.hashCode(bytes);
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Key && Arrays.equals(bytes, ((Key) o).bytes);
        }
    }
}
