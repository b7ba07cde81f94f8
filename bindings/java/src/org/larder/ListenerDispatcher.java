package org.larder;

import java.lang.System.Logger;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Java end of the engine's removal listener (native/jni_listener.c): it
 * deserializes the copied key and value and calls the user's listener on the
 * maintainer thread. Whatever the listener or a serializer throws is caught
 * here, counted, and logged for the first failure of each cache, so the
 * maintainer always goes on.
 */
final class ListenerDispatcher<K, V> {
    private static final Logger LOG = System.getLogger("org.larder");

    private final RemovalListener<K, V> listener;
    private final CacheSerializer<K> keySerializer;
    private final CacheSerializer<V> valueSerializer;
    private final AtomicLong failures = new AtomicLong();

    ListenerDispatcher(RemovalListener<K, V> listener, CacheSerializer<K> keySerializer,
            CacheSerializer<V> valueSerializer) {
        this.listener = listener;
        this.keySerializer = keySerializer;
        this.valueSerializer = valueSerializer;
    }

    long failures() {
        return failures.get();
    }

    /* Called by native code on the maintainer thread; cause is a larder_cause. */
    @SuppressWarnings("unused")
    private void onRemoval(byte[] key, byte[] value, int cause) {
        try {
            K k = keySerializer.deserialize(ByteBuffer.wrap(key).asReadOnlyBuffer());
            V v = valueSerializer.deserialize(ByteBuffer.wrap(value).asReadOnlyBuffer());
            listener.onRemoval(k, v, RemovalCause.of(cause));
        } catch (Throwable t) {
            if (failures.getAndIncrement() == 0) {
                LOG.log(Logger.Level.WARNING, "larder: the removal listener threw; later"
                        + " failures are only counted (LarderStats.listenerFailures)", t);
            }
        }
    }
}
