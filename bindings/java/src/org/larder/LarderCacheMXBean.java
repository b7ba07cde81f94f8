package org.larder;

/**
 * A cache's statistics over JMX, registered under
 * {@code org.larder:type=LarderCache,name=<name>} when the cache is built
 * with {@link LarderCacheBuilder#jmxName(String)}, and unregistered by
 * {@code close()}. Each getter reads a fresh snapshot; a closed cache reads
 * as zeros.
 */
public interface LarderCacheMXBean {
    long getHitCount();

    long getMissCount();

    long getPutCount();

    long getEvictionCount();

    long getExpireCount();

    long getSize();

    long getUsedBytes();

    long getCapacity();

    long getMappedBytes();

    long getListenerFailures();

    /** Every engine counter by its larder.h name. */
    java.util.Map<String, Long> getCounters();
}
