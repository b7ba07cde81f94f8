package org.larder;

/**
 * A program (not a JUnit test) that test/load_test.sh runs to see where the
 * JNI library is loaded from: prints "LoadCheck OK" after a put and a get,
 * or the loading error and exits 3.
 */
public final class LoadCheck {
    private LoadCheck() {
    }

    public static void main(String[] args) {
        try (LarderCache<String, String> c = LarderCacheBuilder.<String, String>newBuilder()
                .keySerializer(CacheSerializers.STRING).valueSerializer(CacheSerializers.STRING)
                .build()) {
            c.put("hello", "world");
            System.out.println("LoadCheck OK " + c.get("hello"));
        } catch (UnsatisfiedLinkError e) {
            System.err.println(e.getMessage());
            System.exit(3);
        }
    }
}
