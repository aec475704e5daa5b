package io.streamshard.runtime;

import java.util.concurrent.atomic.LongAdder;

/**
 * {@code streamshard.workers=auto}: how many records of an instance may run at once, sized to
 * what the slow step's downstream serves. Workers report every attempt ({@link #sample}: its run
 * time, whether it failed or asked for a retry, and how many records ran at the time); one thread
 * calls {@link #tick} now and then, which closes a window of samples once it is long enough and
 * moves the limit.
 *
 * <p>The rule is Vegas-like, on the queue the downstream holds for us. With {@code c} records
 * running and a run time of {@code rtt} against the unloaded run time {@code base}, about {@code
 * c × (1 − base / rtt)} of them wait in some queue (the service's, or for a CPU) rather than being
 * served: a service that serves N at once at a fixed latency makes the run time grow by N per
 * record above N, and the estimate is then exactly the excess. So:
 *
 * <ul>
 *   <li>a window in which 1% or more of the attempts failed (a 429 or 503 past the service's
 *       capacity, a timeout, anything the retry policy retries) lowers the limit to 0.9 of what
 *       ran, at once (fewer failures are not taken as a sign of load);
 *   <li>a queue above {@link #beta} in two windows in a row, or above {@link #spike} in one, lowers it
 *       to what the downstream served ({@code c × base / rtt}) plus {@link #alpha}, by a quarter at
 *       most (a young JVM's JIT slows every record for seconds): from overload to the knee in a
 *       few windows, not a crawl down, while one noisy window (a GC pause, a core taken
 *       by something else) moves nothing; the window after such a cut is not judged (records
 *       started under the old limit end in it), and if the next shows that what ran fell but the
 *       run time did not fall with it, as a queue of ours would, the run time becomes the base
 *       instead of a second cut (a CPU taken by another JVM, a downstream slower for everyone),
 *       checked at once by a probe (below);
 *   <li>a queue below {@link #alpha} raises it by a sixteenth a window, 2 at least (a step that lands
 *       between alpha and beta, so it settles, not saw-tooths past the knee), that many times the
 *       windows in a row it grew, up to a quarter (far below the knee, after a decrease that a
 *       young JVM's noise made, it regains the way in a few windows, not in dozens); only if the
 *       window used 0.8 of it, as time in records over the window's time (a hot key, few ready
 *       keys or a slow input are no sign that the downstream has room); at the start it doubles
 *       while the queue stays at most {@link #startBeta} (slow start, ended by the first
 *       decrease: an overshoot comes back down in a window);
 *   <li>in between it stays, so a steady load does not make it oscillate.
 * </ul>
 *
 * <p>{@code base} is the least window mean of the last {@link #BASE_HORIZON_NANOS} (per-bucket
 * minima), so a downstream that became slower for good is re-learnt within that time, while the
 * limit comes down at once meanwhile (the safe side). Held at the knee, every window has its small
 * queue, and a base re-learnt from them alone would creep up horizon by horizon and the limit with
 * it; so every {@link #PROBE_EVERY_NANOS} the limit steps down to 3/4 for two windows (the first
 * lets the records started above it end, the second measures the run time below the knee, which
 * 3/4 is since the queue is at most a sixteenth) and then back (about 1% of the throughput). A window lasts at least {@link
 * #MIN_WINDOW_NANOS} and twice {@code base}, so the records started under the last limit have
 * ended before it is judged, and holds at least {@link #MIN_SAMPLES} samples (at most {@link
 * #MAX_WINDOW_NANOS}, then it is judged on what it has, or, with no sample, skipped); at a
 * limit of 1 to 4, twice the limit's samples are enough (no queue can pass {@link #beta} there, so
 * a noisy window can only delay the start, not lower the limit).
 *
 * <p>Why not Netflix's concurrency-limits library: its limiters are per request with the caller
 * measuring around one call; here the run time is the record's whole parallel chain, samples come
 * from thousands of workers at once, and the rule needs the scheduler's knowledge of what was
 * ready (the 0.8 use test). The rule itself is small.
 */
public final class AdaptiveLimit {
    static final long MIN_WINDOW_NANOS = 100_000_000L;
    static final long MAX_WINDOW_NANOS = 5_000_000_000L;
    static final int MIN_SAMPLES = 10;
    static final long BASE_HORIZON_NANOS = 30_000_000_000L;
    static final int BASE_BUCKETS = 6;
    /** A change at least this large (up or down, as a share of the old limit) is logged. */
    static final double LOGGED_CHANGE = 0.25;
    /** How often the unloaded run time is measured below the knee. */
    static final long PROBE_EVERY_NANOS = 10_000_000_000L;

    /** Not probing; settling at the probe's limit (the window is not judged); measuring. */
    private enum Probe {
        NONE,
        SETTLING,
        MEASURING
    }

    private volatile Probe probe = Probe.NONE;
    private long lastProbe;
    /** The limit the probe stepped down from, restored after it. */
    private int probeFrom;

    private final int min;
    private final int max;
    private volatile int limit;
    /** Whether the limit still doubles (no queue nor failure seen yet). */
    private boolean slowStart = true;
    /** Windows in a row whose queue was above {@link #beta} but not above {@link #spike}. */
    private int overBeta;
    /** Windows in a row that raised the limit after the slow start. */
    private int grew;
    /**
     * The last change, if it was a cut for latency: the run time over the base then (else 0), and
     * the records that ran then.
     */
    private double cutRatio;

    private double cutRunning;
    /** The window after a cut for latency: not judged. */
    private boolean afterCut;

    // The open window, added to by any worker (adders: thousands of workers end records at once).
    private final LongAdder samples = new LongAdder();
    private final LongAdder okSamples = new LongAdder();
    private final LongAdder okNanos = new LongAdder();
    private final LongAdder failures = new LongAdder();
    private final LongAdder runningSum = new LongAdder();
    /** Every attempt's run time, failed ones too: the window's mean concurrency (Little). */
    private final LongAdder allNanos = new LongAdder();

    private long windowStart;

    // The base run time: per-bucket minima of window means (tick thread only).
    private final long[] bucketMin = new long[BASE_BUCKETS];
    private final long[] bucketStart = new long[BASE_BUCKETS];

    // The last judged window and change, for metrics, the status and the log.
    private volatile long lastRttNanos = -1;
    private volatile long baseNanos = -1;
    private volatile double lastQueue = -1;
    private volatile String lastChange = "";
    private volatile long changes;

    /** What a {@link #tick} that moved the limit did. */
    public static final class Change {
        public final int from;
        public final int to;
        public final String why;
        /** A step of the base run time's probe: routine, not logged. */
        public final boolean probe;

        Change(int from, int to, String why) {
            this(from, to, why, false);
        }

        Change(int from, int to, String why, boolean probe) {
            this.from = from;
            this.to = to;
            this.why = why;
            this.probe = probe;
        }

        /** Whether it is large enough for one INFO line. */
        public boolean large() {
            return !probe && Math.abs(to - from) >= Math.max(1, LOGGED_CHANGE * from);
        }

        @Override
        public String toString() {
            return why + ": " + from + " → " + to;
        }
    }

    /**
     * @param min the floor
     * @param max the ceiling
     * @param initial where it starts (clamped to the bounds)
     * @param now the clock's reading now, ns
     */
    public AdaptiveLimit(int min, int max, int initial, long now) {
        if (min < 1 || max < min) {
            throw new IllegalArgumentException("bounds " + min + ".." + max);
        }
        this.min = min;
        this.max = max;
        this.limit = Math.max(min, Math.min(max, initial));
        this.windowStart = now;
        this.lastProbe = now;
        java.util.Arrays.fill(bucketMin, Long.MAX_VALUE);
        java.util.Arrays.fill(bucketStart, Long.MIN_VALUE);
    }

    public int limit() {
        return limit;
    }

    public int min() {
        return min;
    }

    public int max() {
        return max;
    }

    /** The last judged window's mean run time of attempts that did not fail, ns; -1 before one. */
    public long lastRttNanos() {
        return lastRttNanos;
    }

    /** The unloaded run time the limit is judged against, ns; -1 before one. */
    public long baseNanos() {
        return baseNanos;
    }

    /** Whether the limit is stepped down for the probe of the unloaded run time now. */
    public boolean probing() {
        return probe != Probe.NONE;
    }

    /** The last change and why, or "" before one. */
    public String lastChange() {
        return lastChange;
    }

    public long changes() {
        return changes;
    }

    /**
     * One attempt ended (any thread).
     *
     * @param runNanos how long it ran
     * @param failed it threw, or asked to be retried
     * @param running records running when it ended, itself included
     */
    public void sample(long runNanos, boolean failed, int running) {
        samples.increment();
        runningSum.add(running);
        allNanos.add(runNanos);
        if (failed) {
            failures.increment();
        } else {
            okSamples.increment();
            okNanos.add(runNanos);
        }
    }

    /**
     * Closes the window if it is due and moves the limit (one thread only). Returns the change,
     * or null if there was none.
     */
    public Change tick(long now) {
        long elapsed = now - windowStart;
        long n = samples.sum();
        long base = baseNanos;
        long minWindow = Math.max(MIN_WINDOW_NANOS, base > 0 ? 2 * base : 0);
        if (elapsed < minWindow || (n < minSamples(limit) && elapsed < MAX_WINDOW_NANOS)) {
            return null;
        }
        windowStart = now;
        // Racy against samples landing now: one lands in this window or the next, either is fine.
        n = samples.sumThenReset();
        long ok = okSamples.sumThenReset();
        long okSum = okNanos.sumThenReset();
        long failed = failures.sumThenReset();
        long runningTotal = runningSum.sumThenReset();
        // Time in records over the window's time: the mean number that ran. The count at each
        // end ({@code running}) is not it where records wait mid-run: on virtual workers, records
        // that computed waited seconds for a carrier, counted as running all along.
        double used = (double) allNanos.sumThenReset() / Math.max(1, elapsed);
        if (n == 0) {
            return null;
        }
        double running = (double) runningTotal / n;
        int old = limit;
        int grewBefore = grew;
        grew = 0; // set again below if this window raises it too
        if (probe == Probe.SETTLING) {
            probe = Probe.MEASURING;
            return null;
        }
        if (probe == Probe.MEASURING) {
            probe = Probe.NONE;
            lastProbe = now;
            if (ok > 0) {
                lastRttNanos = okSum / ok;
                base(now, lastRttNanos);
            }
            return set(old, probeFrom, "probe of the unloaded run time over", true);
        }
        if (failed > 0 && failed * 100 >= n) {
            if (afterCut) {
                // Records started under the old limit end in this window: their failures (a
                // service that rejected them past its capacity) are the old limit's. The next
                // window judges the cut; judging this one cut a rejecting service's limit three
                // times for one overload (45, 40, 36, 33) and held it below the capacity.
                afterCut = false;
                return null;
            }
            slowStart = false;
            int to = clamp((int) Math.floor(0.9 * Math.min(old, Math.max(1, running))));
            Change c = set(old, to, String.format("%d of %d attempts failed", failed, n));
            afterCut = true;
            return c;
        }
        long rtt = okSum / Math.max(1, ok);
        lastRttNanos = rtt;
        base = base(now, rtt);
        double queue = running * (1 - (double) base / Math.max(1, rtt));
        lastQueue = queue;
        double ratio = (double) rtt / Math.max(1, base);
        double over = slowStart ? startBeta(old) : beta(old);
        if (afterCut) {
            // Records started under the old limit end in it: what ran and their run time are
            // the old limit's, still. The next window judges the cut.
            afterCut = false;
            return null;
        }
        if (queue > over
                && cutRatio > 0
                && running <= 0.92 * cutRunning
                && ratio > cutRatio * Math.sqrt(running / cutRunning)
                && ratio <= 1.1 * cutRatio) {
            // The last cut lowered what ran, but not the run time as a queue of ours would (it
            // falls in step with what runs): the latency looks like someone else's, a CPU taken
            // by other work or a downstream slower for everyone. Cutting again would walk the
            // limit down window by window for as long as it lasts; the run time becomes the base
            // instead. A run time that rose by more than a tenth is news (a capacity that
            // fell), cut for as usual. Checked at once by a probe: its window below the limit
            // folds its run time into the base as a least, so a queue of ours taken for someone
            // else's (a cut judged on a window of mixed records) is found in two windows.
            overBeta = 0;
            java.util.Arrays.fill(bucketMin, Long.MAX_VALUE);
            base(now, rtt);
            lastQueue = 0;
            return probe(
                    old,
                    String.format(
                            "latency %.1f× baseline did not fall with the limit: baseline re-learnt, probing it",
                            ratio),
                    false);
        }
        if (queue > over && ++overBeta < 2 && queue <= spike(old)) {
            // One window a little over: noise (a GC pause, a core taken) as often as load.
            return null;
        }
        if (queue > over) {
            overBeta = 0;
            slowStart = false;
            int served = (int) Math.floor(running * base / (double) rtt);
            int to = clamp(Math.min(old - 1, Math.max(3 * old / 4, served + (int) Math.ceil(alpha(old)))));
            Change c = set(old, to, String.format("latency %.1f× baseline", ratio));
            cutRatio = ratio;
            cutRunning = running;
            afterCut = true;
            overBeta = 1; // a queue still over beta once the cut took effect is the second window
            return c;
        }
        // Slow start doubles while the queue stays below beta (a young JVM's noise must not end
        // it at a tenth of the way); later the limit grows only with no queue at all.
        if ((slowStart ? queue <= over : queue < alpha(old)) && used >= 0.8 * old && old < max) {
            grew = slowStart ? 0 : grewBefore + 1;
            int step = Math.min(Math.max(2, old / 4), grew * Math.max(2, old / 16));
            int to = clamp(slowStart ? 2 * old : old + step);
            return set(
                    old,
                    to,
                    String.format(
                            slowStart
                                    ? "no queue (latency %.2f× baseline), starting"
                                    : "no queue (latency %.2f× baseline)",
                            ratio));
        }
        overBeta = 0;
        cutRatio = 0; // the cut relieved it: a later queue is judged afresh
        if (!slowStart && now - lastProbe >= PROBE_EVERY_NANOS && old > min) {
            return probe(old, "probing the unloaded run time", true);
        }
        return null;
    }

    /**
     * Steps the limit down to 3/4 for two windows, whose second measures the run time below it
     * (folded into the base as a least), then back to {@code old}.
     *
     * @param routine the every-10-s probe (not logged, not counted as a change)
     */
    private Change probe(int old, String why, boolean routine) {
        probe = Probe.SETTLING;
        probeFrom = old;
        return set(old, clamp(Math.max(1, 3 * old / 4)), why, routine);
    }

    /** Samples a window needs: {@link #MIN_SAMPLES}, or twice a limit below 5. */
    static int minSamples(int limit) {
        return Math.min(MIN_SAMPLES, 2 * limit);
    }

    /** The queue below which the limit may grow: 1, or 1/32 of the limit. */
    static double alpha(int limit) {
        return Math.max(1, limit / 32.0);
    }

    /**
     * The queue above which the limit comes down if it stays there two windows: 3, or 1/16 of the
     * limit. With 1/10 the limit held at 45–47 against a capacity of 40 on virtual workers (a tenth
     * of queue, and the records outside the service's queue). Below 3 a young JVM's noise keeps it
     * low for seconds (a floor of 2 or 2.5: 0.80–0.93 of the best fixed count, 3: 0.92–0.98).
     */
    static double beta(int limit) {
        return Math.max(3, limit / 16.0);
    }

    /**
     * The queue up to which the slow start goes on doubling: 3, or 1/10 of the limit (a young
     * JVM's noise passes {@link #beta} more often, and ended the start at 16 of 50).
     */
    static double startBeta(int limit) {
        return Math.max(3, limit / 10.0);
    }

    /** The queue above which one window brings the limit down: 6, or 1/5 of the limit. */
    static double spike(int limit) {
        return Math.max(6, limit / 5.0);
    }

    private int clamp(int v) {
        return Math.max(min, Math.min(max, v));
    }

    private Change set(int from, int to, String why) {
        return set(from, to, why, false);
    }

    private Change set(int from, int to, String why, boolean probeStep) {
        cutRatio = 0; // set again by a cut for latency, after this
        afterCut = false;
        if (to == from) {
            return null;
        }
        Change c = new Change(from, to, why, probeStep);
        if (!probeStep) {
            changes++;
            lastChange = c.toString();
        }
        limit = to; // last: whoever reads the new limit reads its reason too
        return c;
    }

    /** Folds the window's mean into its bucket; returns the least over the horizon. */
    private long base(long now, long rtt) {
        long bucketNanos = BASE_HORIZON_NANOS / BASE_BUCKETS;
        int b = (int) Math.floorMod(now / bucketNanos, (long) BASE_BUCKETS);
        long start = now - Math.floorMod(now, bucketNanos);
        if (bucketStart[b] != start) {
            bucketStart[b] = start;
            bucketMin[b] = Long.MAX_VALUE;
        }
        bucketMin[b] = Math.min(bucketMin[b], rtt);
        long least = Long.MAX_VALUE;
        for (int i = 0; i < BASE_BUCKETS; i++) {
            if (bucketStart[i] > now - BASE_HORIZON_NANOS) {
                least = Math.min(least, bucketMin[i]);
            }
        }
        baseNanos = least;
        return least;
    }
}
