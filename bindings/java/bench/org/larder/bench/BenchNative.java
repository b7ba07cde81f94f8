package org.larder.bench;

import java.nio.ByteBuffer;

/**
 * The native baselines of bench/native/bench_jni.c, loaded from the path in
 * the system property {@code larder.bench.library} (bench/run.sh sets it).
 * Loops return nanoseconds measured in C, so the crossing is not in them.
 */
final class BenchNative {
    static {
        System.load(new java.io.File(System.getProperty("larder.bench.library")).getAbsolutePath());
    }

    private BenchNative() {
    }

    /** An empty native method with the arguments of the binding's get of a short key. */
    static native long noop(long guard, long gen, long k0, long k1, int keyLen, long buf,
            int bufLen);

    /** Opens a cache of its own (0 on failure). */
    static native long open(long capacity, long entries);

    static native void close(long cache);

    /** Puts count keys of keyLen bytes packed in keys (direct), values of valueLen bytes. */
    static native int load(long cache, ByteBuffer keys, int keyLen, int count, int valueLen);

    /** Nanoseconds for iterations larder_get calls on uniform random keys; -1 on a miss. */
    static native long getLoop(long cache, ByteBuffer keys, int keyLen, int count,
            long iterations, long seed);

    /** The address of a direct buffer. */
    static native long address(ByteBuffer direct);

    /** getLoop with a full fence after each get (one get at a time). */
    static native long getLoopFenced(long cache, ByteBuffer keys, int keyLen, int count,
            long iterations, long seed);

    /** One get of a 16-byte key (two longs, native order) into buf: its length, or -1. */
    static native long getOne(long cache, long k0, long k1, long buf, int bufLen);

    /** getOne into a stack buffer, then SetByteArrayRegion into dst: the length, or -1. */
    static native long getOneRegion(long cache, long k0, long k1, byte[] dst);

    /** getOne straight into dst's elements under GetPrimitiveArrayCritical: the length, or -1. */
    static native long getOneCritical(long cache, long k0, long k1, byte[] dst);

    /** Nanoseconds for iterations XXH3-64 hashes of random keys. */
    static native long hashLoop(ByteBuffer keys, int keyLen, int count, long iterations);

    /** Nanoseconds for iterations of the loops' own random key choice. */
    static native long pickLoop(int count, long iterations);

    /**
     * The engine handle (larder *) of a binding cache, from its guard address
     * (LarderCache's private field, read by reflection); valid while that
     * cache is open. For the diagnostic layers of Crossing only.
     */
    static native long bindingEngine(long guard);

    /** CPU time of the whole process (all its threads, native ones too), in ns. */
    static native long processCpuNanos();

    /** Nanoseconds for iterations enter/exit pairs of the binding's close guard. */
    static native long guardLoop(long iterations);
}
