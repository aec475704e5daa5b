package io.streamshard.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class NativeSchedulerTest {

    private static NativeScheduler small(int slots) {
        return NativeScheduler.create(slots, slots, 16, 8, 0);
    }

    @Test
    void roundTripThroughJni() {
        try (NativeScheduler s = small(8)) {
            long t = s.registerTask(1, 3, false, 0);
            assertThat(s.submit(t, 0, 10, true, 42, 0)).isEqualTo(NativeScheduler.SUBMIT_AVAILABLE);
            assertThat(s.submit(t, 0, 11, true, 42, 1)).isEqualTo(NativeScheduler.SUBMIT_AVAILABLE);
            int[] out = new int[4];
            assertThat(s.completeAndPoll(new int[0], 0, out, 0)).isEqualTo(1);
            assertThat(out[0]).isZero();
            // Same key: the second record waits until the first completes.
            assertThat(s.completeAndPoll(new int[0], 0, out, 0)).isZero();
            assertThat(s.completeAndPoll(new int[] {0}, 1, out, 0)).isEqualTo(1);
            assertThat(out[0]).isEqualTo(1);
            PartitionProgress p = s.partitionProgress(t, 0);
            assertThat(p.submitted()).isEqualTo(2);
            assertThat(p.finished()).isEqualTo(1);
            assertThat(p.running()).isEqualTo(1);
            assertThat(p.lowestUnfinished()).isEqualTo(11);
            s.complete(1);
            p = s.partitionProgress(t, 0);
            assertThat(p.lowestUnfinished()).isEqualTo(NativeScheduler.NO_OFFSET);
            assertThat(p.committable()).isEqualTo(12);
            assertThat(s.totals()).isEqualTo(new Totals(2, 2, 0, 0, 0, 0));
            s.drain(new long[] {t}, 1_000);
        }
    }

    /** The lock-free copy through JNI: totals, the sampled times and one row per live task. */
    @Test
    void metricsCopyEveryCounterOfEveryLiveTask() {
        try (NativeScheduler s = NativeScheduler.create(64, 64, 64, 8, 0)) {
            assertThat(s.metrics().taskCount()).isZero();
            assertThat(s.metrics().wait.meanNanos()).isNaN();
            List<Long> handles = new ArrayList<>();
            // More tasks than the first copy has rows for (16): the copy grows to fit them all.
            for (int p = 0; p < 20; p++) {
                handles.add(s.registerTask(2, p, false, 0));
            }
            long t = handles.get(7);
            assertThat(s.submit(t, 0, 0, true, 5, 0)).isEqualTo(NativeScheduler.SUBMIT_AVAILABLE);
            assertThat(s.submit(t, 0, 1, true, 5, 1)).isEqualTo(NativeScheduler.SUBMIT_AVAILABLE);
            assertThat(s.submit(t, 0, 2, true, 6, 2)).isEqualTo(NativeScheduler.SUBMIT_AVAILABLE);
            int[] out = new int[4];
            assertThat(s.completeAndPoll(new int[0], 0, out, 0)).isEqualTo(2); // keys 5 and 6
            s.complete(out[0]);
            SchedulerMetrics m = s.metrics();
            assertThat(m.taskCount()).isEqualTo(20);
            SchedulerMetrics.Task x = m.task(2, 7);
            assertThat(x.submitted).isEqualTo(3);
            assertThat(x.finished).isEqualTo(1);
            assertThat(x.running + x.queued).isEqualTo(2);
            assertThat(x.maxKeyDepth).isEqualTo(2);
            assertThat(x.failed).isFalse();
            assertThat(x.wait.count)
                    .as("the task's two dispatched records, sampled")
                    .isEqualTo(2);
            assertThat(x.run.count).as("its one completed record").isEqualTo(1);
            assertThat(x.run.maxNanos).isGreaterThanOrEqualTo((long) x.run.meanNanos());
            assertThat(m.task(2, 8).submitted).isZero();
            assertThat(m.task(3, 7)).isNull();
            assertThat(m.totals.submitted()).isEqualTo(3);
            assertThat(m.run.count).isEqualTo(1); // sampled: every record (shift 0)
            assertThat(m.run.meanNanos()).isGreaterThanOrEqualTo(0);
            assertThat(m.wait.count).isGreaterThanOrEqualTo(2);
            s.closeTask(handles.get(19), CloseMode.DRAIN, 1_000, new int[4]);
            assertThat(s.metrics().task(2, 19)).as("a closed task has no row").isNull();
            s.removeTask(handles.get(19));
            assertThat(s.metrics().taskCount()).isEqualTo(19);
        }
    }

    @Test
    void capsAreReturnCodesNotExceptions() {
        try (NativeScheduler s = NativeScheduler.create(3, 2, 4, 4, 3)) {
            long a = s.registerTask(0, 0, false, 0);
            long b = s.registerTask(0, 1, false, 0);
            assertThat(s.submit(a, 0, 0, true, 1, 0)).isEqualTo(NativeScheduler.SUBMIT_AVAILABLE);
            assertThat(s.submit(a, 0, 1, true, 2, 1)).isEqualTo(NativeScheduler.SUBMIT_TASK_FULL);
            assertThat(s.hasCapacity(a)).isFalse();
            assertThat(s.submit(a, 0, 2, true, 3, 2)).isEqualTo(NativeScheduler.SUBMIT_REFUSED_TASK_CAP);
            assertThat(s.submit(b, 0, 0, false, 0, 2)).isEqualTo(NativeScheduler.SUBMIT_GLOBAL_FULL);
            assertThat(s.hasCapacity(b)).isFalse();
        }
    }

    @Test
    void errorsBecomeExceptionsWithClearMessages() {
        assertThatThrownBy(() -> NativeScheduler.create(0, 1, 1, 1, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("max_inflight");
        assertThatThrownBy(() -> NativeScheduler.create(10, 10, 10, 10, 40))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("timing_sample_shift");
        try (NativeScheduler s = small(4)) {
            long t = s.registerTask(2, 7, false, 0);
            assertThatThrownBy(() -> s.registerTask(2, 7, false, 0))
                    .isInstanceOf(SchedulerException.class)
                    .hasMessageContaining("task 2_7 is already registered");
            assertThatThrownBy(() -> s.submit(t, 0, 0, true, 1, 99))
                    .isInstanceOf(SchedulerException.class)
                    .hasMessageContaining("slot 99 is out of range");
            assertThatThrownBy(() -> s.submit(t, 0, 0, true, 1, -1))
                    .isInstanceOf(SchedulerException.class)
                    .hasMessageContaining("out of range");
            s.submit(t, 0, 5, true, 1, 0);
            assertThatThrownBy(() -> s.submit(t, 0, 5, true, 1, 1))
                    .isInstanceOf(SchedulerException.class)
                    .hasMessageContaining("offset 5 submitted after offset 5");
            assertThatThrownBy(() -> s.complete(0))
                    .isInstanceOf(SchedulerException.class)
                    .hasMessageContaining("slot 0 is not running");
            assertThatThrownBy(() -> s.submit(12345L, 0, 0, true, 1, 1))
                    .isInstanceOf(SchedulerException.class)
                    .hasMessageContaining("unknown task");
            assertThatThrownBy(() -> s.drain(new long[] {t}, 20))
                    .isInstanceOf(DrainTimeoutException.class)
                    .hasMessageContaining("1 queued, 0 running")
                    .hasMessageContaining("partition 0 from offset 5");
            assertThatThrownBy(() -> s.completeAndPoll(new int[0], 5, new int[1], 0))
                    .isInstanceOf(ArrayIndexOutOfBoundsException.class)
                    .hasMessageContaining("doneCount 5 exceeds done.length 0");
        }
    }

    @Test
    void aRetriedRecordKeepsItsKeyAndRunsAgainWhenDue() {
        try (NativeScheduler s = small(4)) {
            long t = s.registerTask(0, 1, false, 0);
            s.submit(t, 0, 10, true, 9, 0);
            s.submit(t, 0, 11, true, 9, 1);
            int[] out = new int[2];
            assertThat(s.completeAndPoll(new int[0], 0, out, 0)).isEqualTo(1);
            assertThat(out[0]).isZero();
            long retried = System.nanoTime();
            s.retry(0, 30_000_000L);
            // The key's next record waits behind the retried one; nothing is ready meanwhile.
            assertThat(s.completeAndPoll(new int[0], 0, out, 0)).isZero();
            assertThat(s.completeAndPoll(new int[0], 0, out, 5_000_000_000L)).isEqualTo(1);
            assertThat(out[0]).isZero();
            assertThat(System.nanoTime() - retried).isGreaterThanOrEqualTo(30_000_000L);
            assertThat(s.completeAndPoll(new int[] {0}, 1, out, 0)).isEqualTo(1);
            assertThat(out[0]).isEqualTo(1);
            assertThatThrownBy(() -> s.retry(0, 0)).isInstanceOf(SchedulerException.class);
            assertThatThrownBy(() -> s.retry(1, -1)).isInstanceOf(IllegalArgumentException.class);
            s.complete(1);
        }
    }

    @Test
    void failureIsKeptAndReportedToTheOwner() {
        try (NativeScheduler s = small(4)) {
            long t = s.registerTask(0, 0, false, 0);
            s.submit(t, 2, 100, true, 9, 0);
            s.submit(t, 2, 101, true, 9, 1);
            int[] out = new int[2];
            assertThat(s.completeAndPoll(new int[0], 0, out, 0)).isEqualTo(1);
            s.fail(out[0]);
            assertThat(s.failure(t)).contains("partition 2 offset 100");
            assertThatThrownBy(() -> s.drain(new long[] {t}, 1_000))
                    .isInstanceOf(TaskFailedException.class)
                    .hasMessageContaining("partition 2 offset 100");
            assertThatThrownBy(() -> s.submit(t, 2, 102, true, 9, 2)).isInstanceOf(TaskFailedException.class);
            int[] dropped = new int[4];
            int n = s.closeTask(t, CloseMode.DROP_QUEUED, 1_000, dropped);
            assertThat(n).isEqualTo(1);
            assertThat(dropped[0]).isEqualTo(1);
            assertThat(dropped[1]).isEqualTo(-1);
            s.removeTask(t);
        }
    }

    @Test
    void closedSchedulerRefusesCallsInsteadOfCrashing() {
        NativeScheduler s = small(4);
        long t = s.registerTask(0, 0, false, 0);
        s.close();
        s.close();
        assertThatThrownBy(() -> s.submit(t, 0, 0, true, 1, 0))
                .isInstanceOf(SchedulerException.class)
                .hasMessageContaining("closed");
        assertThat(s.completeAndPoll(new int[0], 0, new int[1], 0)).isEqualTo(NativeScheduler.POLL_SHUTDOWN);
    }

    @Test
    void oneRecordEachWayWithoutArrays() {
        try (NativeScheduler s = small(8)) {
            long t = s.registerTask(1, 3, false, 0);
            assertThat(s.submit(t, 0, 10, true, 42, 5)).isEqualTo(NativeScheduler.SUBMIT_AVAILABLE);
            assertThat(s.submit(t, 0, 11, true, 42, 6)).isEqualTo(NativeScheduler.SUBMIT_AVAILABLE);
            assertThat(s.completeOneAndPoll(-1, 0)).isEqualTo(5);
            // Same key: the second record waits until the first completes, then comes in the same call.
            assertThat(s.completeOneAndPoll(-1, 0)).isEqualTo(NativeScheduler.POLL_NONE);
            assertThat(s.completeOneAndPoll(5, 0)).isEqualTo(6);
            assertThat(s.completeOneAndPoll(6, 0)).isEqualTo(NativeScheduler.POLL_NONE);
            PartitionProgress p = s.partitionProgress(t, 0);
            assertThat(p.finished()).isEqualTo(2);
            assertThat(p.committable()).isEqualTo(12);
            // A slot that is not running is refused, as by completeAndPoll.
            assertThatThrownBy(() -> s.completeOneAndPoll(5, 0)).isInstanceOf(SchedulerException.class);
        }
        NativeScheduler closed = small(2);
        closed.close();
        assertThat(closed.completeOneAndPoll(-1, 0)).isEqualTo(NativeScheduler.POLL_SHUTDOWN);
    }

    @Test
    void closeReleasesBlockedPollers() throws Exception {
        NativeScheduler s = small(4);
        CountDownLatch started = new CountDownLatch(2);
        List<Thread> pollers = new ArrayList<>();
        AtomicInteger shutdowns = new AtomicInteger();
        for (int i = 0; i < 2; i++) {
            Thread th = new Thread(() -> {
                started.countDown();
                int r = s.completeAndPoll(new int[0], 0, new int[1], TimeUnit.SECONDS.toNanos(60));
                if (r == NativeScheduler.POLL_SHUTDOWN) {
                    shutdowns.incrementAndGet();
                }
            });
            th.start();
            pollers.add(th);
        }
        started.await();
        Thread.sleep(50);
        s.close();
        for (Thread th : pollers) {
            th.join(10_000);
            assertThat(th.isAlive()).isFalse();
        }
        assertThat(shutdowns.get()).isEqualTo(2);
    }

    /**
     * Java worker threads through JNI: per-key order, no key on two threads at once, nothing lost
     * or duplicated, a drain in the middle leaves the watermark past everything submitted.
     */
    @Test
    void javaWorkersKeepPerKeyOrderAndExclusivity() throws Exception {
        final int slots = 256;
        final int keys = 500;
        final int records = 60_000;
        final int workers = 8;
        try (NativeScheduler s = NativeScheduler.create(slots, slots, 4, 4, 3)) {
            long t = s.registerTask(0, 0, false, 0);
            int[] keyOf = new int[slots];
            long[] seqOf = new long[slots];
            AtomicIntegerArray inUse = new AtomicIntegerArray(keys);
            AtomicLongArray lastSeq = new AtomicLongArray(keys);
            ConcurrentLinkedQueue<Integer> free = new ConcurrentLinkedQueue<>();
            for (int i = 0; i < slots; i++) {
                free.add(i);
            }
            AtomicReference<String> violation = new AtomicReference<>();
            AtomicLong processed = new AtomicLong();
            AtomicInteger maxConcurrent = new AtomicInteger();
            AtomicInteger concurrent = new AtomicInteger();
            List<Thread> pool = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                Thread th = new Thread(
                        () -> {
                            int[] out = new int[4];
                            int[] done = new int[4];
                            int doneCount = 0;
                            while (true) {
                                int n = s.completeAndPoll(done, doneCount, out, TimeUnit.MILLISECONDS.toNanos(20));
                                for (int i = 0; i < doneCount; i++) {
                                    free.add(done[i]);
                                }
                                doneCount = 0;
                                if (n == NativeScheduler.POLL_SHUTDOWN) {
                                    return;
                                }
                                for (int i = 0; i < n; i++) {
                                    int slot = out[i];
                                    int key;
                                    long seq;
                                    synchronized (keyOf) {
                                        key = keyOf[slot];
                                        seq = seqOf[slot];
                                    }
                                    if (inUse.getAndIncrement(key) != 0) {
                                        violation.compareAndSet(null, "key " + key + " on two threads");
                                    }
                                    int c = concurrent.incrementAndGet();
                                    maxConcurrent.accumulateAndGet(c, Math::max);
                                    long last = lastSeq.get(key);
                                    if (seq != last + 1) {
                                        violation.compareAndSet(null, "key " + key + ": seq " + seq + " after " + last);
                                    }
                                    lastSeq.set(key, seq);
                                    Thread.onSpinWait();
                                    concurrent.decrementAndGet();
                                    inUse.decrementAndGet(key);
                                    processed.incrementAndGet();
                                    done[doneCount++] = slot;
                                }
                            }
                        },
                        "test-worker-" + w);
                th.start();
                pool.add(th);
            }
            long[] nextSeq = new long[keys];
            Random rnd = new Random(7);
            for (int i = 0; i < records; i++) {
                // Skewed keys: a few hot ones, many cold ones.
                int key = rnd.nextInt(4) == 0 ? rnd.nextInt(5) : rnd.nextInt(keys);
                Integer slot;
                while ((slot = free.poll()) == null) {
                    Thread.onSpinWait();
                }
                synchronized (keyOf) {
                    keyOf[slot] = key;
                    seqOf[slot] = ++nextSeq[key];
                }
                int r;
                while ((r = s.submit(t, 0, i, true, key * 0x9E3779B97F4A7C15L, slot)) < 0) {
                    Thread.onSpinWait();
                }
                if (i == records / 2) {
                    s.drain(new long[] {t}, 30_000);
                    PartitionProgress p = s.partitionProgress(t, 0);
                    assertThat(p.lowestUnfinished()).isEqualTo(NativeScheduler.NO_OFFSET);
                    assertThat(p.committable()).isEqualTo(i + 1);
                }
            }
            s.drain(new long[] {t}, 30_000);
            s.shutdown();
            for (Thread th : pool) {
                th.join(10_000);
            }
            assertThat(violation.get()).isNull();
            assertThat(processed.get()).isEqualTo(records);
            for (int k = 0; k < keys; k++) {
                assertThat(lastSeq.get(k)).as("key %d", k).isEqualTo(nextSeq[k]);
            }
            assertThat(maxConcurrent.get()).isGreaterThan(1);
        }
    }
}
