package io.streamshard.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The rule of {@code workers=auto} against a simulated downstream: a service that serves {@code
 * capacity} calls at once in {@code serviceNanos} each and queues the rest (or rejects them at
 * once), called by as many records as the limit and the ready keys allow. The integration test
 * ({@code AdaptiveWorkersIT}) runs the same against a real HTTP service and a real app.
 */
class AdaptiveLimitTest {
    private static final long MS = 1_000_000L;

    /** The simulated downstream and the records' supply. */
    private static final class Service {
        int capacity;
        final long serviceNanos;
        /** Past its capacity: true answers at once with an error (429), false queues. */
        final boolean rejects;
        /** The most records ready at once (distinct keys with work). */
        int readyKeys = Integer.MAX_VALUE;
        /** Every call this much slower, however many run (a CPU taken by other work). */
        double slowdown = 1;
        /**
         * Rejections lag a window: a window's calls are rejected as far as the previous window's
         * limit exceeded the capacity too (records started under the old limit end after a cut).
         */
        boolean staleRejects;

        Service(int capacity, long serviceNanos, boolean rejects) {
            this.capacity = capacity;
            this.serviceNanos = serviceNanos;
            this.rejects = rejects;
        }
    }

    /** What one window looked like: the limit after it, the records' mean run time in it. */
    static final class Window {
        final int limit;
        final long rttNanos;
        final boolean probing;

        Window(int limit, long rttNanos, boolean probing) {
            this.limit = limit;
            this.rttNanos = rttNanos;
            this.probing = probing;
        }

        @Override
        public String toString() {
            return limit + (probing ? " (probing)" : "") + " at " + rttNanos / 1000 + " µs";
        }

        int limit() {
            return limit;
        }

        long rttNanos() {
            return rttNanos;
        }
    }

    private long now;

    /** Runs {@code windows} windows: feeds each one's samples, then ticks once it is due. */
    private List<Window> run(AdaptiveLimit l, Service s, int windows) {
        List<Window> seen = new ArrayList<>();
        int before = 0;
        for (int w = 0; w < windows; w++) {
            int running = Math.min(l.limit(), s.readyKeys);
            int overloading = s.staleRejects ? Math.max(running, before) : running;
            before = running;
            long length = Math.max(AdaptiveLimit.MIN_WINDOW_NANOS, 2 * Math.max(l.baseNanos(), 0));
            long rtt;
            long calls;
            long rejected = 0;
            if (s.rejects) {
                rtt = s.serviceNanos;
                calls = Math.max(1, running * length / rtt);
                rejected = overloading > s.capacity ? calls * (overloading - s.capacity) / overloading : 0;
            } else {
                // Served `capacity` at a time: the run time grows with the queue in front.
                rtt = Math.max(s.serviceNanos, s.serviceNanos * running / s.capacity);
                calls = Math.max(1, running * length / rtt);
            }
            rtt = (long) (rtt * s.slowdown);
            for (long i = 0; i < calls; i++) {
                boolean failed = i < rejected;
                l.sample(failed ? MS / 10 : rtt, failed, running);
            }
            now += length;
            l.tick(now);
            seen.add(new Window(l.limit(), rtt, l.probing()));
        }
        return seen;
    }

    /** The windows outside the probes of the unloaded run time. */
    private static List<Window> steady(List<Window> w) {
        return w.stream().filter(x -> !x.probing).collect(java.util.stream.Collectors.toList());
    }

    private AdaptiveLimit limit(int max) {
        return new AdaptiveLimit(1, max, 2, now);
    }

    @Test
    void settlesWithinFifteenPercentOfWhatTheServiceServesAndStaysThere() {
        Service s = new Service(50, 20 * MS, false);
        AdaptiveLimit l = limit(4096);
        // A minute: twice the base's horizon, past which a base learnt from the queue's windows
        // would creep up.
        List<Window> w = run(l, s, 600);
        List<Window> settled = steady(w.subList(100, 600));
        assertThat(w.subList(100, 600).stream().filter(x -> x.probing).count())
                .as("windows probing the unloaded run time: two per 10 s of 0.1 s windows")
                .isBetween(6L, 12L);
        assertThat(settled).allSatisfy(x -> {
            assertThat(x.limit()).isBetween(43, 57);
            // The service's own queue: its latency within 1.5 times its unloaded one.
            assertThat(x.rttNanos()).isLessThanOrEqualTo(30 * MS);
        });
        long distinct = settled.stream().mapToInt(Window::limit).distinct().count();
        assertThat(distinct).as("a steady load does not make it oscillate").isLessThanOrEqualTo(2);
    }

    @Test
    void followsACapacityThatHalvesWithinAFewWindowsAndGrowsBackWhenItReturns() {
        Service s = new Service(200, 20 * MS, false);
        AdaptiveLimit l = limit(4096);
        settles(l, s, 170, 230);
        s.capacity = 100;
        // Each cut is judged in the second window after it (in the first, records started
        // under the old limit end): two cuts in six windows.
        List<Window> after = steady(run(l, s, 6));
        assertThat(after.get(after.size() - 1).limit()).isBetween(85, 115);
        assertThat(l.lastChange()).contains("latency").contains("baseline");
        s.capacity = 200;
        settles(l, s, 170, 230);
    }

    @Test
    void farBelowTheKneeAfterAnEarlyDecreaseItRegainsTheWayInAFewWindows() {
        // A young JVM: every call twice as slow while the limit starts, so the slow start ends at
        // half the capacity; then the service is as fast as it is.
        Service s = new Service(200, 20 * MS, false);
        AdaptiveLimit l = limit(4096);
        s.capacity = 100;
        run(l, s, 30);
        int from = outOfProbe(l, s);
        assertThat(from).isBetween(85, 115);
        s.capacity = 200;
        int windows = 0;
        while (l.limit() < 170 && windows < 100) {
            if (!steady(run(l, s, 1)).isEmpty()) {
                windows++;
            }
        }
        // A sixteenth a window would take about 11 windows from 100 to 170; growing by more with
        // every window in a row that had no queue, 6 (2 s at the 20 ms calls' windows: 0.1 s).
        assertThat(windows).as("windows from %d to at least 170", from).isLessThanOrEqualTo(7);
        List<Window> after = steady(run(l, s, 100));
        assertThat(after.subList(20, after.size()))
                .as("and settles, without overshooting for good")
                .allSatisfy(x -> assertThat(x.limit()).isBetween(170, 230));
    }

    /** Runs 20 s of windows, then until no probe is on; the limit is then within the bounds. */
    private void settles(AdaptiveLimit l, Service s, int lo, int hi) {
        run(l, s, 200);
        assertThat(outOfProbe(l, s)).isBetween(lo, hi);
    }

    /** Runs windows until no probe is on; returns the limit. */
    private int outOfProbe(AdaptiveLimit l, Service s) {
        while (l.probing()) {
            run(l, s, 1);
        }
        return l.limit();
    }

    @Test
    void aServiceThatRejectsPastItsCapacityKeepsTheLimitNearIt() {
        Service s = new Service(50, 20 * MS, true);
        AdaptiveLimit l = limit(4096);
        List<Window> w = run(l, s, 400);
        double mean =
                w.subList(100, 400).stream().mapToInt(Window::limit).average().orElseThrow();
        assertThat(mean).isBetween(42.5, 57.5);
        assertThat(steady(w.subList(100, 400)))
                .allSatisfy(x -> assertThat(x.limit()).isBetween(40, 60));
        assertThat(l.changes()).isPositive();
    }

    /**
     * Rejections of records started under the old limit, which end in the window after a cut,
     * cut it no further: the limit stays near the capacity. Judged, they cut it again and again
     * for one overload (CI: 45, 40, 36, 33, a median of 33 against a capacity of 40).
     */
    @Test
    void rejectionsOfRecordsStartedBeforeACutDoNotCutItAgain() {
        Service s = new Service(40, 50 * MS, true);
        s.staleRejects = true;
        AdaptiveLimit l = limit(4096);
        List<Window> w = run(l, s, 400);
        List<Integer> settled = steady(w.subList(100, 400)).stream()
                .map(Window::limit)
                .sorted()
                .collect(java.util.stream.Collectors.toList());
        assertThat(settled.get(settled.size() / 2))
                .as("median limit %s", settled)
                .isBetween(37, 46);
        assertThat(settled.get(settled.size() / 10))
                .as("10th percentile %s", settled)
                .isGreaterThanOrEqualTo(34);
    }

    @Test
    void aHotKeyIsNoSignOfRoom() {
        Service s = new Service(1000, 20 * MS, false);
        s.readyKeys = 1;
        AdaptiveLimit l = limit(4096);
        run(l, s, 100);
        assertThat(l.limit())
                .as("one key ready: the limit never used, so never raised")
                .isEqualTo(2);
        s.readyKeys = Integer.MAX_VALUE;
        run(l, s, 100);
        assertThat(l.limit()).isBetween(850, 1150);
    }

    @Test
    void cpuBoundWorkSettlesNearTheCores() {
        // Two cores: a record's run time grows with every runnable record past two.
        Service s = new Service(2, MS, false);
        AdaptiveLimit l = limit(4096);
        List<Window> w = run(l, s, 200);
        assertThat(steady(w.subList(50, 200)))
                .allSatisfy(x -> assertThat(x.limit()).isBetween(2, 5));
    }

    @Test
    void slowCallsReachThousandsWithinSeconds() {
        Service s = new Service(4096, 200 * MS, false);
        long start = now;
        AdaptiveLimit l = limit(4096);
        int windows = 0;
        while (l.limit() < 4096 && windows < 100) {
            run(l, s, 1);
            windows++;
        }
        assertThat(l.limit()).isEqualTo(4096);
        assertThat((now - start) / MS)
                .as("ms to reach 4,096 from 2 at 200 ms a call")
                .isLessThan(6_000);
    }

    @Test
    void staysWithinItsBoundsAndLogsOnlyLargeChanges() {
        Service s = new Service(10_000, 20 * MS, false);
        AdaptiveLimit l = new AdaptiveLimit(8, 100, 2, now);
        assertThat(l.limit()).as("starts at the floor at least").isEqualTo(8);
        run(l, s, 100);
        assertThat(l.limit()).isEqualTo(100);
        s.capacity = 1;
        run(l, s, 50);
        assertThat(l.limit()).isEqualTo(8);
        assertThat(new AdaptiveLimit.Change(100, 80, "x").large()).isFalse();
        assertThat(new AdaptiveLimit.Change(100, 75, "x").large()).isTrue();
        assertThat(new AdaptiveLimit.Change(2, 4, "x").large()).isTrue();
        assertThatThrownBy(() -> new AdaptiveLimit(0, 10, 1, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new AdaptiveLimit(10, 5, 1, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aSlowdownThatIsNotOursDoesNotWalkTheLimitDown() {
        // The service serves 40 at once; for 10 s every call is 1.3 times slower however many run
        // (the app's cores taken by another JVM). A queue of ours shrinks as the limit is cut; this
        // one does not, so after one cut the slower run time is the base, not a queue.
        Service s = new Service(40, 50 * MS, false);
        AdaptiveLimit l = limit(4096);
        settles(l, s, 34, 46);
        s.slowdown = 1.3;
        List<Window> slow = steady(run(l, s, 100));
        assertThat(slow)
                .as("the limit while slower")
                .allSatisfy(x -> assertThat(x.limit()).isGreaterThanOrEqualTo(28));
        assertThat(median(slow)).as("%s", slow).isBetween(34, 46);
        s.slowdown = 1;
        settles(l, s, 34, 46);
    }

    @Test
    void aQueueOfOursTakenForSomeoneElsesIsFoundByTheProbe() {
        // A service serving 40 at once in 20 ms. The slow start's last doubling, to 64, is judged
        // on a window of mixed records (1.3× where 64 running make it 1.6×) and cut to 51; the
        // queue at 51 then looks as if it had not fallen with the limit.
        AdaptiveLimit l = new AdaptiveLimit(1, 4096, 32, now);
        window(l, 20 * MS, 32);
        assertThat(l.limit()).isEqualTo(64);
        window(l, 26 * MS, 64);
        assertThat(l.limit()).isEqualTo(51);
        long atCut = 20 * MS * 51 / 40;
        window(l, atCut, 51); // the cut's own records end: not judged
        assertThat(l.limit()).isEqualTo(51);
        window(l, atCut, 51);
        assertThat(l.lastChange()).contains("re-learnt");
        assertThat(l.baseNanos()).isEqualTo(atCut);
        assertThat(l.probing()).isTrue();
        window(l, 20 * MS, l.limit()); // below the knee: the probe's windows
        window(l, 20 * MS, l.limit());
        assertThat(l.probing()).isFalse();
        assertThat(l.baseNanos()).as("the probe's run time, a least").isEqualTo(20 * MS);
        window(l, atCut, l.limit());
        assertThat(l.limit()).as("the queue, seen against the right base").isBetween(40, 44);
    }

    private static int median(List<Window> w) {
        return w.stream().mapToInt(Window::limit).sorted().toArray()[w.size() / 2];
    }

    @Test
    void oneNoisyWindowMovesNothingTwoDo() {
        AdaptiveLimit l = new AdaptiveLimit(1, 4096, 50, now);
        window(l, 20 * MS, 50); // the base; no queue: up
        int settled = l.limit();
        window(l, 20 * MS, settled / 2); // unused: stays
        assertThat(l.limit()).isEqualTo(settled);
        // A queue of about 13 of 100 (above a sixteenth, below a fifth): once is noise, twice is load.
        window(l, 23 * MS, settled);
        assertThat(l.limit()).isEqualTo(settled);
        window(l, 23 * MS, settled);
        assertThat(l.limit()).isLessThan(settled);
        // The window after a cut is not judged (records started under the old limit end in it).
        int before = l.limit();
        window(l, 60 * MS, before);
        assertThat(l.limit()).isEqualTo(before);
        window(l, 21 * MS, before); // the cut relieved it: holds
        assertThat(l.limit()).isEqualTo(before);
        // Far over, once: at once.
        window(l, 60 * MS, before);
        assertThat(l.limit()).isLessThan(before);
    }

    /**
     * One window at {@code rtt} with {@code running} records running all along (as many samples
     * as end in it), then its tick.
     */
    private void window(AdaptiveLimit l, long rtt, int running) {
        long samples = Math.max(AdaptiveLimit.MIN_SAMPLES, running * AdaptiveLimit.MIN_WINDOW_NANOS / rtt);
        for (int i = 0; i < samples; i++) {
            l.sample(rtt, false, running);
        }
        now += AdaptiveLimit.MIN_WINDOW_NANOS;
        l.tick(now);
    }

    @Test
    void recordsWaitingMidRunDoNotCountAsUsingTheLimit() {
        // Computing records on virtual workers over 2 cores: 2 run at a time, 2 ms each, while
        // others wait mid-run for a carrier; each end counts 8 running, but 2 ran on average.
        AdaptiveLimit l = new AdaptiveLimit(1, 4096, 8, now);
        for (int w = 0; w < 5; w++) {
            for (int i = 0; i < 100; i++) {
                l.sample(2 * MS, false, 8);
            }
            now += AdaptiveLimit.MIN_WINDOW_NANOS;
            l.tick(now);
        }
        assertThat(l.limit()).as("a limit of which a quarter is used").isEqualTo(8);
        window(l, 2 * MS, 8); // 8 ran all along: up
        assertThat(l.limit()).isEqualTo(16);
    }

    @Test
    void aFewFailuresAreNoSignOfLoad() {
        AdaptiveLimit l = new AdaptiveLimit(1, 4096, 100, now);
        for (int i = 0; i < 1_000; i++) {
            l.sample(20 * MS, i == 0, 100);
        }
        now += AdaptiveLimit.MIN_WINDOW_NANOS;
        l.tick(now);
        assertThat(l.limit()).as("1 in 1,000 failed").isGreaterThanOrEqualTo(100);
        for (int i = 0; i < 1_000; i++) {
            l.sample(20 * MS, i < 20, 100);
        }
        now += AdaptiveLimit.MIN_WINDOW_NANOS;
        l.tick(now);
        assertThat(l.limit()).as("2% failed").isEqualTo(90);
        assertThat(l.lastChange()).isEqualTo("20 of 1000 attempts failed: 200 → 90");
    }

    @Test
    void aWindowWaitsForEnoughSamplesAndTwiceTheBaseRunTime() {
        AdaptiveLimit l = new AdaptiveLimit(1, 4096, 8, now);
        for (int i = 0; i < AdaptiveLimit.MIN_SAMPLES - 1; i++) {
            l.sample(200 * MS, false, 8);
        }
        now += AdaptiveLimit.MIN_WINDOW_NANOS;
        assertThat(l.tick(now)).as("too few samples").isNull();
        l.sample(200 * MS, false, 8);
        assertThat(l.tick(now)).isNotNull();
        assertThat(l.limit()).isEqualTo(16);
        for (int i = 0; i < 100; i++) {
            l.sample(200 * MS, false, 16);
        }
        now += AdaptiveLimit.MIN_WINDOW_NANOS;
        assertThat(l.tick(now)).as("shorter than twice the base").isNull();
        now += 3 * AdaptiveLimit.MIN_WINDOW_NANOS;
        assertThat(l.tick(now)).isNotNull();
        assertThat(l.limit()).isEqualTo(32);
    }

    @Test
    void atALimitOfOneTwoSamplesMakeAWindow() {
        AdaptiveLimit l = new AdaptiveLimit(1, 4096, 1, now);
        l.sample(50 * MS, false, 1);
        now += AdaptiveLimit.MIN_WINDOW_NANOS;
        assertThat(l.tick(now)).as("one sample").isNull();
        l.sample(50 * MS, false, 1);
        assertThat(l.tick(now)).isNotNull();
        assertThat(l.limit()).isEqualTo(2);
        assertThat(AdaptiveLimit.minSamples(5)).isEqualTo(AdaptiveLimit.MIN_SAMPLES);
    }
}
