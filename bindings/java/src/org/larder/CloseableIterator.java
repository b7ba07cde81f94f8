package org.larder;

import java.util.Iterator;

/**
 * An iterator over a cache that holds a native cursor: close it when done
 * early (an iterator that reaches its end closes itself; the cache's
 * {@code close()} frees any left open). As OHC's {@code CloseableIterator}.
 *
 * @param <T> element type
 */
public interface CloseableIterator<T> extends Iterator<T>, AutoCloseable {
    /** Frees the cursor; later calls of {@code hasNext} return false. Idempotent. */
    @Override
    void close();
}
