package org.larder;

/**
 * One slab size class's figures ({@code larder_stats_size_class}): entries
 * up to the largest class live in fixed-size slots carved from pages of one
 * class each. Exact once the maintainer is idle; may lag by the entries in
 * flight before that.
 */
public final class SizeClassStats {
    private final long slotBytes;
    private final long pageBytes;
    private final long pages;
    private final long slotsUsed;
    private final long slotsFree;
    private final long bytes;
    private final long usedBytes;

    SizeClassStats(String[] names, long[] values, int base) {
        long[] v = new long[7];
        String[] want = {"slot_bytes", "page_bytes", "pages", "slots_used", "slots_free",
            "bytes", "used_bytes"};
        for (int i = 0; i < names.length; i++) {
            for (int j = 0; j < want.length; j++) {
                if (want[j].equals(names[i])) {
                    v[j] = values[base + i];
                }
            }
        }
        slotBytes = v[0];
        pageBytes = v[1];
        pages = v[2];
        slotsUsed = v[3];
        slotsFree = v[4];
        bytes = v[5];
        usedBytes = v[6];
    }

    /** The slot size of the class. */
    public long slotBytes() {
        return slotBytes;
    }

    /** The page size of the class. */
    public long pageBytes() {
        return pageBytes;
    }

    /** Pages of this class held by the cache (not the reserve). */
    public long pages() {
        return pages;
    }

    /** Slots holding counted entries. */
    public long slotsUsed() {
        return slotsUsed;
    }

    /** The other slots of those pages. */
    public long slotsFree() {
        return slotsFree;
    }

    /** Memory mapped for the class: pages x page bytes. */
    public long bytes() {
        return bytes;
    }

    /** Slots used x slot bytes. */
    public long usedBytes() {
        return usedBytes;
    }

    @Override
    public String toString() {
        return "SizeClassStats{slot=" + slotBytes + ", page=" + pageBytes + ", pages=" + pages
                + ", used=" + slotsUsed + ", free=" + slotsFree + "}";
    }
}
