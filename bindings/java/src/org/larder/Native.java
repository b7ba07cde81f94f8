package org.larder;

import java.io.File;
import java.nio.ByteBuffer;

/**
 * The native methods (native/jni_cache.c, jni_clock.c) and the loading of the
 * JNI library. Package-private: every address and length passed here comes
 * from the binding's own code (Scratch), never from a user.
 *
 * <p>Loading: the system property {@code larder.library.path}, when set, names
 * the library file ({@code System.load}); otherwise {@code liblarder_jni.so}
 * is looked up on {@code java.library.path} ({@code System.loadLibrary}). A
 * failure is kept and reported by {@link #ensureLoaded()} as one
 * {@link UnsatisfiedLinkError} naming both ways, each time a cache is built,
 * rather than as an ExceptionInInitializerError once.
 */
final class Native {
    static final String LIBRARY_PROPERTY = "larder.library.path";
    static final String LIBRARY_NAME = "larder_jni";

    /* Result codes: the engine's (larder.h) and the binding's (jni_state.h). */
    static final int OK = 0;
    static final int MISS = 1;
    static final int EXISTS = 2;
    static final int MISMATCH = 3;
    static final int EINVAL = -1;
    static final int EKEYSIZE = -2;
    static final int EVALSIZE = -3;
    static final int ENOMEM = -4;
    static final int EBUFSIZE = -5;
    static final int EBUSY = -6;
    static final int ESTATE = -9;
    static final int CLOSED = -100;
    static final int IN_CALLBACK = -101;
    static final int IN_LISTENER = -102;

    /* get() and ttlRemaining() results below zero (jni_state.h). */
    static final long GET_MISS = -1;
    static final long GET_ERR_BASE = -1000;
    static final long GET_BUFSIZE_BASE = -(1L << 32);

    /* Indexes of open()'s settings array (jni_cache.c, enum setting). */
    static final int S_CAPACITY = 0;
    static final int S_EXPECTED_ENTRIES = 1;
    static final int S_MAX_KEY_BYTES = 2;
    static final int S_MAX_VALUE_BYTES = 3;
    static final int S_DEFAULT_TTL_MS = 4;
    static final int S_POLICY = 5;
    static final int S_EXPIRY = 6;
    static final int S_HASH_SEED = 7;
    static final int S_HAS_HASH_SEED = 8;
    static final int S_WRITE_WAIT_MS = 9;
    static final int S_POOL = 10;
    static final int S_MIN_SHARE = 11;
    static final int S_MAX_SHARE = 12;
    static final int S_MISS_COST = 13;
    static final int S_COMPRESS_MIN = 14;
    static final int S_COMPRESS_SAVING = 15;
    static final int S_SHARDS = 16;
    static final int S_COUNT = 17;

    /* write() operations (jni_cache.c, enum write_op). */
    static final int OP_PUT = 0;
    static final int OP_PUT_IF_ABSENT = 1;
    static final int OP_REPLACE = 2;
    static final int OP_REPLACE_IF_EQUALS = 3;
    static final int OP_REMOVE = 4;
    static final int OP_REMOVE_IF_EQUALS = 5;
    static final int OP_TOUCH = 6;
    static final int OP_ACCESS = 7;

    /* Engine TTL arguments: 0 takes the cache's default, all ones never expires. */
    static final long TTL_DEFAULT = 0;
    static final long TTL_NEVER = -1;

    private static final UnsatisfiedLinkError LOAD_ERROR = load();

    private Native() {
    }

    private static UnsatisfiedLinkError load() {
        String path = System.getProperty(LIBRARY_PROPERTY);
        try {
            if (path != null && !path.isEmpty()) {
                System.load(new File(path).getAbsolutePath());
            } else {
                System.loadLibrary(LIBRARY_NAME);
            }
            return null;
        } catch (UnsatisfiedLinkError | SecurityException e) {
            String tried = path != null && !path.isEmpty()
                    ? "-D" + LIBRARY_PROPERTY + "=" + path
                    : "java.library.path=" + System.getProperty("java.library.path");
            UnsatisfiedLinkError error = new UnsatisfiedLinkError(
                    "larder: cannot load the JNI library " + System.mapLibraryName(LIBRARY_NAME)
                    + " (tried " + tried + "): set -D" + LIBRARY_PROPERTY
                    + "=/path/to/" + System.mapLibraryName(LIBRARY_NAME)
                    + ", or put its directory (the one holding liblarder.so) on"
                    + " -Djava.library.path; cause: " + e.getMessage());
            error.initCause(e);
            return error;
        }
    }

    /** Throws the loading failure, if there was one. */
    static void ensureLoaded() {
        if (LOAD_ERROR != null) {
            UnsatisfiedLinkError e = new UnsatisfiedLinkError(LOAD_ERROR.getMessage());
            e.initCause(LOAD_ERROR.getCause());
            throw e;
        }
    }

    static native long bufferAddress(ByteBuffer direct);

    static native long open(long[] settings, ListenerDispatcher<?, ?> listener, long clockCell,
            long[] out);

    static native int close(long guard, long gen);

    /** Why this thread may not close the cache (IN_CALLBACK, IN_LISTENER), or OK. */
    static native int closeRefusal(long guard, long gen);

    static native long get(long guard, long gen, long key, int keyLen, long buf, int bufLen);

    /** get() with a key of 1..16 bytes in k0 and k1 (see Scratch.keyInLongs). */
    static native long getShort(long guard, long gen, long k0, long k1, int keyLen, long buf,
            int bufLen);

    /** get() without a read's effects: no hit or miss counted, no deadline extended. */
    static native long peek(long guard, long gen, long key, int keyLen, long buf, int bufLen);

    static native int getDirect(long guard, long gen, long key, int keyLen, ValueView view);

    static native int getBatch(long guard, long gen, long base, int count, int keyTable,
            int outTable, int values, int valuesCap);

    static native int contains(long guard, long gen, long key, int keyLen);

    static native long ttlRemaining(long guard, long gen, long key, int keyLen);

    static native int write(long guard, long gen, int op, long key, int keyLen, long value,
            int valueLen, long expected, int expectedLen, long ttl);

    static native int clear(long guard, long gen);

    static native int flush(long guard, long gen, long timeoutMillis);

    static native int setCapacity(long guard, long gen, long bytes);

    static native int stats(long guard, long gen, long[] out);

    static native int classStats(long guard, long gen, long[] out);

    static native int classCount();

    static native String[] statNames();

    static native String[] classStatNames();

    static native String strerror(int rc);

    static native int poolCacheStats(long guard, long gen, double[] out);

    /* Cursors (native/jni_iter.c): iterOpen gives an address > 0 or a code. */
    static native long iterOpen(long guard, long gen);

    static native int iterNext(long guard, long gen, long iter, boolean values, Object[] out);

    static native void iterClose(long guard, long gen, long iter);

    /* Pools (native/jni_pool.c): every call under the pool's lock (P1 there). */
    static native long poolCreate(long budget, long intervalMillis, int[] out);

    static native int poolClose(long pool);

    static native int poolStats(long pool, long[] out);

    static native String[] poolStatNames();

    static native String[] poolCacheStatNames();

    static native long clockCreate(long startMillis);

    static native boolean clockSet(long cell, long millis);

    static native long clockAdvance(long cell, long millis);

    static native long clockGet(long cell);

    static native void clockFree(long cell);
}
