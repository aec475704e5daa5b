package io.streamshard.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/** The ordered hand-back: append order is run order, one at a time, nothing left behind. */
class SerialRegionTest {
    /** An entry whose serial part checks exclusivity and records its place. */
    private static class Probe extends SerialRegion.Entry {
        final int seq;
        final List<Integer> ran;
        final AtomicInteger inside;
        final AtomicReference<String> violation;

        Probe(int seq, List<Integer> ran, AtomicInteger inside, AtomicReference<String> violation) {
            this.seq = seq;
            this.ran = ran;
            this.inside = inside;
            this.violation = violation;
        }

        @Override
        protected void runSerialPart() {
            if (inside.incrementAndGet() != 1) {
                violation.compareAndSet(null, "two threads in the serial region at " + seq);
            }
            ran.add(seq); // not thread-safe on purpose: exclusivity makes it safe
            if (seq % 97 == 0) {
                Thread.yield();
            }
            inside.decrementAndGet();
        }
    }

    @Test
    void entriesFinishedInAnyOrderOnManyThreadsRunInAppendOrderOneAtATime() throws Exception {
        int entries = 200_000;
        int threads = 8;
        List<Integer> ran = new ArrayList<>();
        AtomicInteger inside = new AtomicInteger();
        AtomicReference<String> violation = new AtomicReference<>();
        SerialRegion region = new SerialRegion();
        // Finishers take entries from a shared queue; a small shuffle window reorders them.
        BlockingQueue<Probe> queue = new ArrayBlockingQueue<>(1024);
        CountDownLatch done = finishers(region, queue, threads);
        feed(region, queue, entries, 16, 7, threads, i -> new Probe(i, ran, inside, violation));
        assertThat(done.await(60, TimeUnit.SECONDS)).isTrue();
        assertThat(violation.get()).isNull();
        assertThat(region.empty()).as("every finished entry's serial part ran").isTrue();
        assertThat(region.backlog()).isZero();
        assertRanInOrder(ran, entries);
    }

    /** Threads that finish the entries they take from {@code queue} until a negative one; counted down at their end. */
    private static CountDownLatch finishers(SerialRegion region, BlockingQueue<Probe> queue, int threads) {
        CountDownLatch done = new CountDownLatch(threads);
        for (int t = 0; t < threads; t++) {
            new Thread(() -> {
                        try {
                            while (true) {
                                Probe p = queue.poll(10, TimeUnit.SECONDS);
                                if (p == null || p.seq < 0) {
                                    return;
                                }
                                region.finished(p);
                            }
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        } finally {
                            done.countDown();
                        }
                    })
                    .start();
        }
        return done;
    }

    /**
     * Appends {@code entries} probes and queues them for the finishers in shuffled windows of
     * {@code window}, then one stop entry per finisher.
     */
    private static void feed(
            SerialRegion region,
            BlockingQueue<Probe> queue,
            int entries,
            int window,
            long seed,
            int finishers,
            IntFunction<Probe> probe)
            throws InterruptedException {
        Random random = new Random(seed);
        List<Probe> shuffled = new ArrayList<>();
        for (int i = 0; i < entries; i++) {
            Probe p = probe.apply(i);
            region.append(p);
            shuffled.add(p);
            if (shuffled.size() == window || i == entries - 1) {
                Collections.shuffle(shuffled, random);
                for (Probe w : shuffled) {
                    queue.put(w);
                }
                shuffled.clear();
            }
        }
        for (int t = 0; t < finishers; t++) {
            queue.put(probe.apply(-1));
        }
    }

    private static void assertRanInOrder(List<Integer> ran, int entries) {
        assertThat(ran).hasSize(entries);
        for (int i = 0; i < entries; i++) {
            if (ran.get(i) != i) {
                throw new AssertionError("position " + i + " ran entry " + ran.get(i));
            }
        }
    }

    /**
     * Many short rounds: each round's entries are finished by several threads at once, and once
     * they all returned, every serial part of the round must have run (the hand-over of the runner
     * loses no entry that finished while another thread held it).
     */
    @Test
    void onceEveryFinishReturnedNothingIsLeftBehind() throws Exception {
        int threads = 3;
        int rounds = 30_000;
        SerialRegion region = new SerialRegion();
        List<Integer> ran = new ArrayList<>();
        AtomicInteger inside = new AtomicInteger();
        AtomicReference<String> violation = new AtomicReference<>();
        Probe[][] work = new Probe[threads][];
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        CyclicBarrier end = new CyclicBarrier(threads + 1);
        List<Thread> finishers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int me = t;
            Thread th = new Thread(() -> {
                try {
                    for (int r = 0; r < rounds; r++) {
                        start.await();
                        for (Probe p : work[me]) {
                            region.finished(p);
                        }
                        end.await();
                    }
                } catch (Exception e) {
                    violation.compareAndSet(null, e.toString());
                }
            });
            th.start();
            finishers.add(th);
        }
        int seq = 0;
        Random random = new Random(11);
        for (int r = 0; r < rounds; r++) {
            List<Probe> round = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                Probe p = new Probe(seq++, ran, inside, violation);
                region.append(p);
                round.add(p);
            }
            Collections.shuffle(round, random);
            for (int t = 0; t < threads; t++) {
                work[t] = new Probe[] {round.get(t)};
            }
            start.await();
            end.await();
            if (!region.empty()) {
                throw new AssertionError("round " + r + ": " + region.backlog() + " entries finished but not run");
            }
        }
        for (Thread th : finishers) {
            th.join();
        }
        assertThat(violation.get()).isNull();
        assertThat(ran).hasSize(seq);
    }

    @Test
    void aLaterEntryWaitsForTheHead() {
        List<Integer> ran = new ArrayList<>();
        SerialRegion region = new SerialRegion();
        Probe a = new Probe(0, ran, new AtomicInteger(), new AtomicReference<>());
        Probe b = new Probe(1, ran, new AtomicInteger(), new AtomicReference<>());
        region.append(a);
        region.append(b);
        region.finished(b);
        assertThat(ran).isEmpty();
        assertThat(region.backlog()).isEqualTo(2);
        assertThat(region.empty()).isFalse();
        region.finished(a);
        assertThat(ran).containsExactly(0, 1);
        assertThat(region.empty()).isTrue();
    }

    @Test
    void aFailedSerialPartStopsTheRegionAndResetStartsAfresh() {
        List<Integer> ran = new ArrayList<>();
        SerialRegion region = new SerialRegion();
        SerialRegion.Entry failing = new SerialRegion.Entry() {
            @Override
            protected void runSerialPart() {
                throw new IllegalStateException("boom");
            }
        };
        Probe after = new Probe(1, ran, new AtomicInteger(), new AtomicReference<>());
        region.append(failing);
        region.append(after);
        assertThatThrownBy(() -> region.finished(failing)).hasMessage("boom");
        region.finished(after);
        assertThat(ran).as("nothing after a failed entry runs").isEmpty();
        region.reset();
        Probe fresh = new Probe(2, ran, new AtomicInteger(), new AtomicReference<>());
        region.append(fresh);
        region.finished(fresh);
        assertThat(ran).containsExactly(2);
        assertThat(region.empty()).isTrue();
    }

    /**
     * A commit's pause: while the region is paused no serial part runs (finishers keep finishing,
     * their entries wait), a serial part that was running when the pause came has ended before
     * pause returns, and after the resume every finished entry runs, in order, with no finisher
     * left waiting.
     */
    @Test
    void whilePausedNoSerialPartRunsAndAfterTheResumeAllDo() throws Exception {
        int entries = 60_000;
        int threads = 4;
        List<Integer> ran = new ArrayList<>();
        AtomicInteger inside = new AtomicInteger();
        AtomicReference<String> violation = new AtomicReference<>();
        SerialRegion region = new SerialRegion();
        BlockingQueue<Probe> queue = new ArrayBlockingQueue<>(256);
        CountDownLatch done = finishers(region, queue, threads);
        // The pausing thread: pauses, checks that nothing runs for a while, resumes; again and again.
        AtomicInteger pauses = new AtomicInteger();
        AtomicInteger ranWhilePaused = new AtomicInteger();
        Thread committer = new Thread(() -> {
            while (done.getCount() > 0) {
                if (!region.pause(TimeUnit.SECONDS.toNanos(10), () -> false)) {
                    violation.compareAndSet(null, "pause timed out");
                    return;
                }
                pauses.incrementAndGet();
                if (inside.get() != 0) {
                    violation.compareAndSet(null, "a serial part ran when pause returned");
                }
                int before;
                synchronized (ran) {
                    before = ran.size();
                }
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(300));
                int after;
                synchronized (ran) {
                    after = ran.size();
                }
                if (after != before || inside.get() != 0) {
                    ranWhilePaused.incrementAndGet();
                }
                region.resume();
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(200));
            }
        });
        committer.start();
        feed(region, queue, entries, 8, 5, threads, i -> new Probe(i, ran, inside, violation) {
            @Override
            protected void runSerialPart() {
                synchronized (ran) { // the committer reads ran's size under the same lock
                    super.runSerialPart();
                }
            }
        });
        assertThat(done.await(60, TimeUnit.SECONDS))
                .as("no finisher left waiting")
                .isTrue();
        committer.join();
        region.resume();
        assertThat(violation.get()).isNull();
        assertThat(ranWhilePaused.get())
                .as("pauses during which a serial part ran")
                .isZero();
        assertThat(pauses.get()).as("pauses").isGreaterThan(10);
        assertThat(region.empty()).as("every finished entry's serial part ran").isTrue();
        synchronized (ran) {
            assertRanInOrder(ran, entries);
        }
    }

    /** A pause gives up (resumed) when the task failed: a serial part that threw holds the runner for good. */
    @Test
    void aPauseGivesUpOnAFailedRegion() {
        SerialRegion region = new SerialRegion();
        SerialRegion.Entry failing = new SerialRegion.Entry() {
            @Override
            protected void runSerialPart() {
                throw new IllegalStateException("boom");
            }
        };
        region.append(failing);
        assertThatThrownBy(() -> region.finished(failing)).hasMessage("boom");
        assertThat(region.pause(TimeUnit.SECONDS.toNanos(10), () -> true)).isFalse();
        assertThat(region.paused()).isFalse();
        assertThat(region.pause(TimeUnit.MILLISECONDS.toNanos(20), () -> false))
                .as("timed out")
                .isFalse();
        assertThat(region.paused()).isFalse();
    }

    /**
     * With workers=auto, a worker's time in the serial region (running the serial parts due,
     * waiting out a commit's pause) is left out of its record's run time: it is the task's local
     * ordered work, and counted in, a commit's pause would read as a queue at the downstream.
     */
    @Test
    void aWorkersTimeInTheSerialRegionIsNotInItsRecordsRunTime() throws Exception {
        boolean before = WorkerGate.timing;
        WorkerGate.timing = true;
        try {
            SerialRegion region = new SerialRegion();
            SerialRegion.Entry slow = new SerialRegion.Entry() {
                @Override
                protected void runSerialPart() {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(40));
                }
            };
            region.append(slow);
            long wall0 = System.nanoTime();
            long clock0 = WorkerGate.clock();
            region.finished(slow);
            long wall = System.nanoTime() - wall0;
            long clock = WorkerGate.clock() - clock0;
            assertThat(wall).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(40));
            assertThat(clock).as("run time counted, ns (wall %d)", wall).isLessThan(TimeUnit.MILLISECONDS.toNanos(5));

            // A commit's pause: the runner waits inside its record for the resume.
            SerialRegion.Entry next = new SerialRegion.Entry() {
                @Override
                protected void runSerialPart() {}
            };
            region.append(next);
            assertThat(region.pause(TimeUnit.SECONDS.toNanos(10), () -> false)).isTrue();
            long[] runner = new long[2];
            Thread t = new Thread(() -> {
                long w0 = System.nanoTime();
                long c0 = WorkerGate.clock();
                region.finished(next);
                runner[0] = System.nanoTime() - w0;
                runner[1] = WorkerGate.clock() - c0;
            });
            t.start();
            Thread.sleep(50);
            region.resume();
            t.join();
            assertThat(runner[0])
                    .as("the runner's wall time, ns")
                    .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(50));
            assertThat(runner[1])
                    .as("its run time counted, ns (wall %d)", runner[0])
                    .isLessThan(TimeUnit.MILLISECONDS.toNanos(5));
        } finally {
            WorkerGate.timing = before;
        }
    }
}
