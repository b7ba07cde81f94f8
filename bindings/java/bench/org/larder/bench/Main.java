package org.larder.bench;

/**
 * The Java benchmark's entry point; bench/run.sh is the documented way to
 * run it (it builds, sets the JVM flags and the library paths).
 *
 * <pre>
 *   matrix [rounds] [millis] [threads]         the standard matrix + breakdown
 *   bigset [entries] [rounds] [millis] [threads]
 *   breakdown [entries] [rounds]               only where a get's nanoseconds go
 *   gc larder|caffeine entries valueBytes seconds threads gcLogFile
 *   gc-header                                  the GC table's header
 * </pre>
 */
public final class Main {
    private Main() {
    }

    private static int arg(String[] a, int i, int dflt) {
        return a.length > i ? Integer.parseInt(a[i]) : dflt;
    }

    public static void main(String[] a) throws Exception {
        int cores = Runtime.getRuntime().availableProcessors();
        switch (a.length == 0 ? "" : a[0]) {
        case "matrix":
            Matrix.run(arg(a, 1, 5), 2, arg(a, 2, 200), arg(a, 3, cores));
            break;
        case "bigset":
            BigSet.run(arg(a, 1, 10_000_000), arg(a, 2, 5), 1, arg(a, 3, 500), arg(a, 4, cores));
            break;
        case "breakdown": {
            int entries = arg(a, 1, Matrix.ENTRIES);
            Workload w = new Workload(entries, Matrix.VALUE_BYTES);
            try (org.larder.LarderCache<byte[], byte[]> c = Engines.larder(
                    Math.max(1L << 30, (long) entries * 200), entries)) {
                Engines.Larder copy = new Engines.Larder(c, false);
                copy.load(w);
                copy.settle();
                Crossing.run(w, c, arg(a, 2, 5));
            }
            break;
        }
        case "gc":
            GcPause.run(a[1], Integer.parseInt(a[2]), Integer.parseInt(a[3]),
                    Integer.parseInt(a[4]), Integer.parseInt(a[5]), a[6]);
            break;
        case "gc-header":
            System.out.println("| engine | entries | load | heap after load (live) | heap max"
                    + " while running | young GCs | concurrent cycles | full GCs | total pause"
                    + " | worst pause | M ops/s | get p99 | get p99.9 | get max |");
            System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
            break;
        default:
            System.err.println("usage: matrix|bigset|breakdown|gc|gc-header ... (see bench/run.sh)");
            System.exit(2);
        }
    }
}
