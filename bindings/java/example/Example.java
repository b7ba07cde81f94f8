// The Java example (the README's Java section shows its core), compiled and
// run against the installed jar by the java_load test (bindings/java/test/load_test.sh), so it stays true.
import java.util.concurrent.TimeUnit;
import org.larder.CacheSerializers;
import org.larder.LarderCache;
import org.larder.LarderCacheBuilder;
import org.larder.RemovalCause;

public class Example {
    public static void main(String[] args) {
        try (LarderCache<String, byte[]> cache = LarderCacheBuilder.<String, byte[]>newBuilder()
                .keySerializer(CacheSerializers.STRING)
                .valueSerializer(CacheSerializers.BYTE_ARRAY)
                .capacity(256L << 20)                // bytes of entries, off-heap
                .removalListener((key, value, cause) -> {
                    if (cause == RemovalCause.EVICTED) {
                        System.out.println("evicted " + key);
                    }
                })
                .build()) {
            cache.put("user:42", new byte[] {1, 2, 3});
            cache.put("session:7", new byte[] {9}, 30, TimeUnit.MINUTES);

            byte[] value = cache.get("user:42");     // a new array, or null
            byte[] buf = new byte[64];
            int len = cache.getInto("user:42", buf); // copies into buf: no allocation
            boolean found = cache.getDirect("user:42",
                    view -> System.out.println("first byte " + view.getByte(0))); // in place

            boolean swapped = cache.replace("user:42", value, new byte[] {4}); // compare-and-set
            System.out.println(len + " " + found + " " + swapped + " " + cache.stats().hitCount()
                    + " hits; ttl left " + cache.remainingTTLmillis("session:7") + " ms");
        }
    }
}
