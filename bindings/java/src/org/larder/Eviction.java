package org.larder;

/**
 * The engine's eviction policies ({@code enum larder_policy} in larder.h);
 * the names shared with Cassandra OHC's {@code Eviction} mean the same.
 */
public enum Eviction {
    /** The recommended policy: today {@link #S3FIFO_TUNED}. */
    DEFAULT(0),
    /** S3-FIFO: a small probationary queue, a main queue and a ghost queue. */
    S3FIFO(1),
    /** First in, first out; ignores hits. */
    FIFO(2),
    /** Least recently used. */
    LRU(3),
    /** W-TinyLFU with Caffeine's hill-climbing window. */
    W_TINY_LFU(4),
    /** Adaptive replacement cache. */
    ARC(5),
    /** W-TinyLFU whose window follows small simulations on a sample of the keys. */
    W_TINY_LFU_TUNED(6),
    /** S3-FIFO whose small queue follows small simulations on a sample of the keys. */
    S3FIFO_TUNED(7);

    final int code;

    Eviction(int code) {
        this.code = code;
    }
}
