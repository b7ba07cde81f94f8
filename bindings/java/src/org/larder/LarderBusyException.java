package org.larder;

/**
 * A write found no room in time ({@code LARDER_EBUSY}): the cache was at its
 * memory bound and the maintainer freed nothing within the write wait
 * ({@link LarderCacheBuilder#writeWaitMillis(long)}), or the write was made
 * from a removal listener or a read callback, which never wait, or the
 * maintainer was stuck for over a second (a removal listener that does not
 * return). A {@code put} so refused has removed the key's previous value
 * (see {@link LarderCache#put(Object, Object)}); after any other call it is
 * intact. Retrying later may succeed.
 */
public class LarderBusyException extends LarderException {
    private static final long serialVersionUID = 1L;

    public LarderBusyException(String message) {
        super(Native.EBUSY, message);
    }
}
