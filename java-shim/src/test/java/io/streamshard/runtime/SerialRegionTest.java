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
import org.junit.jupiter.api.Test;

/** The ordered hand-back: append order is run order, one at a time, nothing left behind. */
class SerialRegionTest {
    /** An entry whose serial part checks exclusivity and records its place. */
    private static final class Probe extends SerialRegion.Entry {
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
        CountDownLatch done = new CountDownLatch(threads);
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(() -> {
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
            });
            th.start();
        }
        Random random = new Random(7);
        List<Probe> window = new ArrayList<>();
        for (int i = 0; i < entries; i++) {
            Probe p = new Probe(i, ran, inside, violation);
            region.append(p);
            window.add(p);
            if (window.size() == 16 || i == entries - 1) {
                Collections.shuffle(window, random);
                for (Probe w : window) {
                    queue.put(w);
                }
                window.clear();
            }
        }
        for (int t = 0; t < threads; t++) {
            queue.put(new Probe(-1, ran, inside, violation));
        }
        assertThat(done.await(60, TimeUnit.SECONDS)).isTrue();
        assertThat(violation.get()).isNull();
        assertThat(region.empty()).as("every finished entry's serial part ran").isTrue();
        assertThat(region.backlog()).isZero();
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
}
