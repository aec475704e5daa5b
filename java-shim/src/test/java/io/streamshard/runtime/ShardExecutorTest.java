package io.streamshard.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.scheduler.CloseMode;
import io.streamshard.scheduler.SchedulerMetrics;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class ShardExecutorTest {

    /** The kind of worker these tests run on (a subclass runs them all on virtual workers). */
    WorkerThreads kind() {
        return WorkerThreads.PLATFORM;
    }

    private ShardExecutor executor(String name, int workers, int maxInflight, int perTask, long drainMs) {
        return new ShardExecutor(name, kind(), workers, maxInflight, perTask, drainMs);
    }

    private static byte[] key(int k) {
        return ByteBuffer.allocate(4).putInt(k).array();
    }

    /** Submits until accepted (the StreamThread would serve other tasks meanwhile). */
    private static void submit(ShardExecutor.ShardTask t, int partition, long offset, byte[] key, Runnable r) {
        while (!t.submit(partition, offset, key, r)) {
            Thread.onSpinWait();
        }
    }

    /** A worker returns its finished slot to the pool right after reporting it: a moment later. */
    private static void awaitFreeSlots(ShardExecutor ex, int expected) {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (ex.freeSlots() != expected && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertThat(ex.freeSlots()).isEqualTo(expected);
    }

    @Test
    void blockingWorkRunsInParallelAcrossKeysInOrderPerKey() throws Exception {
        final int keys = 200;
        final int records = 3_000;
        try (ShardExecutor ex = executor("test", 16, 512, 512, 30_000)) {
            ShardExecutor.ShardTask task = ex.register(0, 0, false, NO_FAILURE);
            AtomicIntegerArray inUse = new AtomicIntegerArray(keys);
            AtomicLongArray lastSeq = new AtomicLongArray(keys);
            AtomicInteger concurrent = new AtomicInteger();
            AtomicInteger maxConcurrent = new AtomicInteger();
            AtomicReference<String> violation = new AtomicReference<>();
            Set<String> threads = ConcurrentHashMap.newKeySet();
            long[] nextSeq = new long[keys];
            Random rnd = new Random(1);
            for (int i = 0; i < records; i++) {
                int k = rnd.nextInt(keys);
                long seq = ++nextSeq[k];
                submit(task, 0, i, key(k), () -> {
                    threads.add(Thread.currentThread().getName());
                    if (inUse.getAndIncrement(k) != 0) {
                        violation.compareAndSet(null, "key " + k + " on two threads");
                    }
                    maxConcurrent.accumulateAndGet(concurrent.incrementAndGet(), Math::max);
                    if (lastSeq.get(k) != seq - 1) {
                        violation.compareAndSet(null, "key " + k + ": " + seq + " after " + lastSeq.get(k));
                    }
                    lastSeq.set(k, seq);
                    try {
                        Thread.sleep(1);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    concurrent.decrementAndGet();
                    inUse.decrementAndGet(k);
                });
            }
            assertThat(task.drain()).isTrue();
            assertThat(violation.get()).isNull();
            for (int k = 0; k < keys; k++) {
                assertThat(lastSeq.get(k)).isEqualTo(nextSeq[k]);
            }
            assertThat(maxConcurrent.get()).isGreaterThanOrEqualTo(8);
            assertThat(threads).allMatch(n -> n.startsWith("test-worker-"));
            PartitionProgressCheck.committablePastAll(ex, task, records);
            task.close(CloseMode.DRAIN);
            awaitFreeSlots(ex, 512);
        }
    }

    /** Keeps the first failure, as the agent's TaskFailure does. */
    private static final class FirstFailure implements ShardExecutor.FailureSink {
        final AtomicReference<Throwable> first = new AtomicReference<>();

        @Override
        public void failed(Throwable e) {
            first.compareAndSet(null, e);
        }
    }

    /** For tasks none of whose records fails: a failure would make their drain return false, which they assert. */
    private static final ShardExecutor.FailureSink NO_FAILURE = e -> {};

    @Test
    void aWorkerFailureReachesTheOwnerUnchanged() {
        try (ShardExecutor ex = executor("test", 4, 64, 64, 10_000)) {
            FirstFailure failures = new FirstFailure();
            ShardExecutor.ShardTask task = ex.register(0, 1, false, failures);
            IllegalStateException boom = new IllegalStateException("remote call refused");
            submit(task, 0, 0, key(1), () -> {
                throw boom;
            });
            assertThat(task.drain()).as("a drain of a failed task").isFalse();
            assertThat(failures.first.get()).isSameAs(boom);
            assertThat(task.submit(0, 1, key(2), () -> {}))
                    .as("a submit to a failed task")
                    .isFalse();
            assertThat(ex.freeSlots()).as("the refused submit took no slot").isEqualTo(64);
            task.close(CloseMode.DROP_QUEUED);
            awaitFreeSlots(ex, 64);
        }
    }

    /** A record that counts its runs and whether it was told it was dropped. */
    private static final class Counted implements ShardExecutor.Retriable {
        final AtomicInteger runs = new AtomicInteger();
        final AtomicInteger dropped = new AtomicInteger();

        @Override
        public void run() {
            runs.incrementAndGet();
        }

        @Override
        public long retryDelayNanos() {
            return -1;
        }

        @Override
        public void dropped() {
            dropped.incrementAndGet();
        }
    }

    @Test
    void recordsDroppedByACloseAreToldSoAndNeverRun() throws Exception {
        try (ShardExecutor ex = executor("test", 2, 64, 64, 10_000)) {
            FirstFailure failures = new FirstFailure();
            ShardExecutor.ShardTask task = ex.register(0, 4, false, failures);
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            submit(task, 0, 0, key(1), () -> {
                started.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                throw new IllegalStateException("the first record fails");
            });
            assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
            // Behind the running record on its key's lane: queued, never dispatched once it failed.
            Counted second = new Counted();
            Counted third = new Counted();
            submit(task, 0, 1, key(1), second);
            submit(task, 0, 2, key(1), third);
            release.countDown();
            assertThat(task.drain()).as("a drain of a failed task").isFalse();
            task.close(CloseMode.DROP_QUEUED);
            assertThat(second.runs.get() + third.runs.get())
                    .as("dropped records ran")
                    .isZero();
            assertThat(second.dropped.get())
                    .as("the second record told it was dropped")
                    .isEqualTo(1);
            assertThat(third.dropped.get())
                    .as("the third record told it was dropped")
                    .isEqualTo(1);
            awaitFreeSlots(ex, 64);
        }
    }

    /** An exception whose toString() throws, as application exceptions sometimes do. */
    private static final class Unprintable extends RuntimeException {
        private static final long serialVersionUID = 1L;

        @Override
        public String toString() {
            throw new IllegalStateException("toString of a broken exception");
        }

        @Override
        public String getMessage() {
            throw new IllegalStateException("getMessage of a broken exception");
        }
    }

    @Test
    void aFailureThatCannotBePrintedStillEndsItsRecordAndReachesTheOwner() {
        // 2 s drain timeout: a worker killed by printing the failure would leave its record
        // running, and drain would end in a timeout instead of the failure.
        try (ShardExecutor ex = executor("test", 1, 8, 8, 2_000)) {
            FirstFailure failures = new FirstFailure();
            ShardExecutor.ShardTask task = ex.register(0, 2, false, failures);
            Unprintable boom = new Unprintable();
            submit(task, 0, 0, key(1), () -> {
                throw boom;
            });
            assertThat(task.drain())
                    .as("a drain of a failed task, not a timeout")
                    .isFalse();
            assertThat(failures.first.get()).isSameAs(boom);
            task.close(CloseMode.DROP_QUEUED);
            // The one worker is still alive: another task's record runs.
            ShardExecutor.ShardTask other = ex.register(0, 3, false, NO_FAILURE);
            AtomicInteger ran = new AtomicInteger();
            submit(other, 0, 0, key(1), ran::incrementAndGet);
            assertThat(other.drain()).isTrue();
            assertThat(ran.get()).isEqualTo(1);
            other.close(CloseMode.DRAIN);
        }
    }

    /** A record that fails its first {@code failures} runs, asking each time for a retry after {@code delayMs}. */
    private static final class Flaky implements ShardExecutor.Retriable {
        private final int failures;
        private final long delayNanos;
        private final Runnable body;
        final AtomicInteger runs = new AtomicInteger();
        private volatile long retryIn = -1;

        Flaky(int failures, long delayMs, Runnable body) {
            this.failures = failures;
            this.delayNanos = delayMs * 1_000_000L;
            this.body = body;
        }

        @Override
        public void run() {
            if (runs.incrementAndGet() <= failures) {
                retryIn = delayNanos;
                return;
            }
            body.run();
        }

        @Override
        public long retryDelayNanos() {
            long d = retryIn;
            retryIn = -1;
            return d;
        }
    }

    /**
     * One worker: a record of key 1 asks twice for a retry 300 ms later; meanwhile that worker
     * runs key 2's records (it is not held), key 1's next record waits behind the retried one,
     * and a drain waits for the record in backoff.
     */
    @Test
    void aRetriedRecordFreesItsWorkerAndKeepsItsKeysOrder() {
        try (ShardExecutor ex = executor("test", 1, 16, 16, 10_000)) {
            ShardExecutor.ShardTask task = ex.register(0, 2, false, NO_FAILURE);
            List<String> ran = Collections.synchronizedList(new ArrayList<>());
            long start = System.nanoTime();
            Flaky flaky = new Flaky(2, 300, () -> ran.add("k1-a"));
            submit(task, 0, 0, key(1), flaky);
            submit(task, 0, 1, key(1), () -> ran.add("k1-b"));
            for (int i = 0; i < 5; i++) {
                int n = i;
                submit(task, 0, 2 + i, key(2), () -> ran.add("k2-" + n));
            }
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (ran.size() < 5 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            long elapsedMs = (System.nanoTime() - start) / 1_000_000;
            assertThat(ran).as("key 2 ran while key 1 waited").startsWith("k2-0", "k2-1", "k2-2", "k2-3", "k2-4");
            assertThat(elapsedMs).as("key 2 did not wait for key 1's backoff").isLessThan(300);
            assertThat(task.drain()).isTrue();
            long drainedMs = (System.nanoTime() - start) / 1_000_000;
            assertThat(drainedMs).as("the drain waited for both backoffs").isGreaterThanOrEqualTo(2 * 300);
            assertThat(flaky.runs).hasValue(3);
            assertThat(ran).endsWith("k1-a", "k1-b").hasSize(7);
            SchedulerMetrics.Task m = ex.scheduler().metrics().task(0, 2);
            assertThat(m.retries).isEqualTo(2);
            assertThat(m.backoff).isZero();
            assertThat(m.finished).isEqualTo(7);
            task.close(CloseMode.DRAIN);
            awaitFreeSlots(ex, 16);
        }
    }

    @Test
    void closeDropQueuedReleasesEverySlot() throws Exception {
        try (ShardExecutor ex = executor("test", 1, 32, 32, 10_000)) {
            ShardExecutor.ShardTask task = ex.register(1, 0, false, NO_FAILURE);
            CountDownLatch running = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            AtomicInteger ran = new AtomicInteger();
            submit(task, 0, 0, key(0), () -> {
                running.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                ran.incrementAndGet();
            });
            for (int i = 1; i < 10; i++) {
                submit(task, 0, i, key(i), ran::incrementAndGet);
            }
            running.await();
            Thread closer = new Thread(() -> task.close(CloseMode.DROP_QUEUED));
            closer.start();
            Thread.sleep(50);
            assertThat(closer.isAlive())
                    .as("close waits for the running record")
                    .isTrue();
            release.countDown();
            closer.join(10_000);
            assertThat(closer.isAlive()).isFalse();
            assertThat(ran.get()).isEqualTo(1);
            awaitFreeSlots(ex, 32);
        }
    }

    @Test
    void aLargePlatformPoolGrowsToItsSizeWhileEveryWorkerIsBusy() throws Exception {
        int workers = 300;
        try (ShardExecutor ex = executor("growing", workers, 1_024, 1_024, 30_000)) {
            int initial = kind() == WorkerThreads.PLATFORM ? ShardExecutor.RAMP_INITIAL : workers;
            assertThat(ex.liveWorkers()).as("started at once").isEqualTo(initial);
            ShardExecutor.ShardTask task = ex.register(0, 0, false, NO_FAILURE);
            // As many records of distinct keys as workers, each held until all run at once: only
            // a pool grown to its full size lets them all in.
            CountDownLatch all = new CountDownLatch(workers);
            AtomicInteger timedOut = new AtomicInteger();
            for (int i = 0; i < workers; i++) {
                submit(task, 0, i, key(i), () -> {
                    all.countDown();
                    try {
                        if (!all.await(20, TimeUnit.SECONDS)) {
                            timedOut.incrementAndGet();
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
            }
            assertThat(task.drain()).isTrue();
            assertThat(timedOut.get())
                    .as("records that never met all the others")
                    .isZero();
            assertThat(ex.liveWorkers()).isEqualTo(workers);
            task.close(CloseMode.DRAIN);
        }
    }

    /** Runs {@code n} records of distinct keys, each {@code millis} long; returns the most that ran at once. */
    private static int mostAtOnce(ShardExecutor.ShardTask task, long firstOffset, int n, long millis) {
        AtomicInteger running = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        for (int i = 0; i < n; i++) {
            submit(task, 0, firstOffset + i, key(i), () -> {
                most.accumulateAndGet(running.incrementAndGet(), Math::max);
                try {
                    Thread.sleep(millis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                running.decrementAndGet();
            });
        }
        assertThat(task.drain()).isTrue();
        return most.get();
    }

    /** {@code workers=auto}: the limit caps the records running at once, and workers start as it needs them. */
    @Test
    void anAdaptiveLimitCapsTheRecordsRunningAtOnce() {
        AdaptiveLimit limit = new AdaptiveLimit(4, 4, 4, System.nanoTime());
        try (ShardExecutor ex = new ShardExecutor("capped", kind(), 64, limit, 1_024, 1_024, 30_000)) {
            ShardExecutor.ShardTask task = ex.register(0, 0, false, NO_FAILURE);
            assertThat(mostAtOnce(task, 0, 200, 2)).isEqualTo(4);
            assertThat(ex.liveWorkers()).as("workers started for a limit of 4").isEqualTo(4);
            assertThat(ex.adaptiveLimit()).isSameAs(limit);
            task.close(CloseMode.DRAIN);
        }
    }

    /**
     * Failing attempts bring the limit down to its floor, and the workers follow: once the
     * workers then holding a place have left it, one record runs at a time; records that run
     * without failing raise it again.
     */
    @Test
    void theWorkersFollowTheLimitDownAndUp() {
        AdaptiveLimit limit = new AdaptiveLimit(1, 64, 8, System.nanoTime());
        try (ShardExecutor ex = new ShardExecutor("following", kind(), 64, limit, 1_024, 1_024, 30_000)) {
            ShardExecutor.ShardTask task = ex.register(0, 0, false, NO_FAILURE);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            // Attempts that fail, as a downstream past its capacity answers, until told to stop.
            AtomicInteger failing = new AtomicInteger(1);
            Thread failures = new Thread(() -> {
                while (failing.get() == 1) {
                    for (int i = 0; i < 20; i++) {
                        limit.sample(1_000_000, true, 2);
                    }
                    try {
                        Thread.sleep(5);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            failures.start();
            while (limit.limit() > 1 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertThat(limit.limit()).isEqualTo(1);
            assertThat(limit.lastChange()).contains("attempts failed");
            mostAtOnce(task, 0, 32, 1); // the workers that held a place leave it after a record
            assertThat(mostAtOnce(task, 32, 100, 1)).isEqualTo(1);
            failing.set(0);
            try {
                failures.join();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
            int most = 0;
            for (long offset = 132;
                    most < 3 && System.nanoTime() < deadline + TimeUnit.SECONDS.toNanos(20);
                    offset += 200) {
                most = Math.max(most, mostAtOnce(task, offset, 200, 2));
            }
            assertThat(most).as("records at once, the limit raised again").isGreaterThanOrEqualTo(3);
            task.close(CloseMode.DRAIN);
        }
    }

    @Test
    void closeStopsTheWorkers() {
        ShardExecutor ex = executor("closing", 3, 8, 8, 1_000);
        assertThat(ex.liveWorkers()).isEqualTo(3);
        ex.close();
        assertThat(ex.liveWorkers()).isZero();
        assertThat(Thread.getAllStackTraces().keySet())
                .noneMatch(t -> t.getName().startsWith("closing-worker-"));
    }

    /** Commit watermark check through the scheduler API. */
    static final class PartitionProgressCheck {
        static void committablePastAll(ShardExecutor ex, ShardExecutor.ShardTask task, long records) {
            // Registered task handles are internal; the scheduler's totals cover the one task.
            assertThat(ex.scheduler().totals().finished()).isEqualTo(records);
            assertThat(ex.scheduler().totals().queued()
                            + ex.scheduler().totals().running())
                    .isZero();
        }
    }
}
