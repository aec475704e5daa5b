package io.streamshard.runtime;

import io.streamshard.config.StreamShardConfig;
import io.streamshard.scheduler.CloseMode;
import io.streamshard.scheduler.NativeScheduler;
import io.streamshard.scheduler.TaskFailedException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker pool of one {@code KafkaStreams} instance over the native scheduler. Submitters
 * (StreamThreads) hand records as {@link Runnable}s with their key bytes; workers named
 * {@code <name>-worker-N} run them, at most one per key of a task at a time, in submission order
 * per key. The runnables live in a slot table; only slot numbers cross into native code.
 */
public final class ShardExecutor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger("io.streamshard");
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /**
     * Virtual workers: the longest an idle one parks without a wake-up. Wake-ups are not lost
     * (the scheduler counts idle workers and owes each a wake-up, and defers none for them), so
     * this bounds only the damage of a bug; a record in backoff sets a shorter park. Long, since
     * 10,000 idle workers polling once a second cost more CPU than the busy ones.
     */
    private static final long IDLE_PARK_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final NativeScheduler scheduler;
    private final Work[] table;
    private final SlotPool free;
    /** Every worker started so far; guarded by itself, as is {@link #closed}. */
    private final List<Thread> workers = new ArrayList<>();

    private boolean closed;
    /** The size the pool grows to (see {@link #ramp}). */
    private final int workerCount;
    /** Platform workers waiting for work inside the scheduler now. */
    private final AtomicInteger waiting = new AtomicInteger();
    /**
     * Platform workers started at once; a larger platform pool grows from there, doubling at most
     * once per {@link #RAMP_PACE_NANOS} while every started worker is busy and more records are
     * in flight than workers ({@link #ramp}).
     */
    static final int RAMP_INITIAL = 64;

    static final long RAMP_PACE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    /** With {@code streamshard.workers=auto}: the places workers take; null with a fixed number. */
    private final WorkerGate gate;

    private final WorkerThreads kind;
    private final String name;
    private final long drainTimeoutMs;
    private final int maxInflightPerTask;
    /**
     * Virtual workers only (null for platform ones, which wait inside the scheduler): wake-ups
     * for idle workers, released by whoever the scheduler says owes one.
     */
    private final Semaphore wakeups;

    /**
     * A record that may ask, after it ran, to run again later on its key's lane (a failure to
     * retry): its key's later records keep waiting behind it, the worker goes on with others.
     */
    public interface Retriable extends Runnable {
        /** After {@link #run}: the wait before the next run, ns, or -1 if the record is done. Clears it. */
        long retryDelayNanos();

        /**
         * The record was dropped unrun by a close ({@link CloseMode#DROP_QUEUED}): it is processed
         * again after the task's restart, from its committed offset. Called on the closing thread;
         * must not throw.
         */
        default void dropped() {}
    }

    /**
     * Where a task's records' failures go: the task's owner keeps the first (the native scheduler
     * keeps only that a record failed, which holds its offset and stops the task's dispatch).
     */
    public interface FailureSink {
        /** On the worker that ran the record, before the scheduler hears of the failure. */
        void failed(Throwable e);
    }

    /** One slot of the table: written by the submitter before submit, read by one worker. */
    private static final class Work {
        Runnable run;
        ShardTask task;
    }

    public ShardExecutor(String name, int workerCount, int maxInflight, int maxInflightPerTask, long drainTimeoutMs) {
        this(name, WorkerThreads.PLATFORM, workerCount, maxInflight, maxInflightPerTask, drainTimeoutMs);
    }

    public ShardExecutor(
            String name,
            WorkerThreads kind,
            int workerCount,
            int maxInflight,
            int maxInflightPerTask,
            long drainTimeoutMs) {
        this(name, kind, workerCount, null, maxInflight, maxInflightPerTask, drainTimeoutMs);
    }

    /**
     * @param limit with {@code streamshard.workers=auto}: the limit on the records running at
     *     once, whose {@link AdaptiveLimit#max} is {@code workerCount}; null for a fixed pool
     */
    public ShardExecutor(
            String name,
            WorkerThreads kind,
            int workerCount,
            AdaptiveLimit limit,
            int maxInflight,
            int maxInflightPerTask,
            long drainTimeoutMs) {
        boolean virtual = kind == WorkerThreads.VIRTUAL;
        this.scheduler = NativeScheduler.create(maxInflight, maxInflightPerTask, 1 << 16, 1 << 16, 3, virtual);
        this.table = new Work[maxInflight];
        for (int i = 0; i < maxInflight; i++) {
            table[i] = new Work();
        }
        this.free = new SlotPool(maxInflight);
        this.drainTimeoutMs = drainTimeoutMs;
        this.maxInflightPerTask = maxInflightPerTask;
        this.wakeups = virtual ? new Semaphore(0) : null;
        this.kind = kind;
        this.name = name;
        this.workerCount = workerCount;
        if (limit != null) {
            // The limit's own start (doubling from few) is the ramp; workers start as it first
            // reaches them.
            this.gate = new WorkerGate(limit);
            startWorkers(limit.limit());
            Thread t = new Thread(this::followLimit, name + "-limit");
            t.setDaemon(true);
            t.start();
            return;
        }
        this.gate = null;
        boolean ramped = !virtual && workerCount > RAMP_INITIAL;
        startWorkers(ramped ? RAMP_INITIAL : workerCount);
        if (ramped) {
            Thread t = new Thread(this::ramp, name + "-ramp");
            t.setDaemon(true);
            t.start();
        }
    }

    /**
     * The limit's thread ({@code workers=auto}): judges a window of samples when one is due, lets
     * the gate follow, starts the workers a higher limit needs, and logs large changes.
     */
    private void followLimit() {
        AdaptiveLimit limit = gate.limit();
        while (true) {
            try {
                TimeUnit.NANOSECONDS.sleep(WorkerGate.TICK_NANOS);
            } catch (InterruptedException e) {
                return;
            }
            int started;
            synchronized (workers) {
                if (closed) {
                    return;
                }
                started = workers.size();
            }
            AdaptiveLimit.Change c = limit.tick(System.nanoTime());
            if (c == null) {
                continue;
            }
            if (c.to > started) {
                startWorkers(Math.min(workerCount, c.to) - started);
            }
            gate.allow(c.to);
            if (c.large()) {
                LOG.info("streamshard: at most {} records run at once now ({})", c.to, c);
            }
        }
    }

    /** With {@code streamshard.workers=auto}: its limit; null with a fixed number of workers. */
    public AdaptiveLimit adaptiveLimit() {
        return gate == null ? null : gate.limit();
    }

    /**
     * Grows a large platform pool to its size, doubling at most once per pace while it is short
     * of workers; ends when the pool is whole or closed.
     *
     * <p>Why not start them all at once: thousands of platform threads that start allocating in
     * the same instant (a backlog at start-up) each take a thread-local allocation buffer sized
     * for the few threads that allocated before, so eden fills with mostly empty buffers and young
     * collections follow one another, each scanning every thread's stack; and thousands of
     * runnable threads starve the JIT compiler while the record path is still interpreted. Doubling
     * from 64 reaches 4,096 in six paces (a third of a second) while the JVM adapts its buffer
     * sizes at each collection and compiles with fewer threads in its way. Virtual workers need
     * none of it: they allocate in their carriers' buffers, and only the carriers run.
     */
    private void ramp() {
        while (true) {
            try {
                TimeUnit.NANOSECONDS.sleep(RAMP_PACE_NANOS);
            } catch (InterruptedException e) {
                return;
            }
            int started;
            synchronized (workers) {
                started = workers.size();
                if (closed || started >= workerCount) {
                    return;
                }
            }
            int inflight = table.length - free.size();
            if (waiting.get() == 0 && inflight > started) {
                startWorkers(Math.min(started, workerCount - started));
            }
        }
    }

    /** Starts {@code n} more workers, unless the pool is closed. */
    private void startWorkers(int n) {
        synchronized (workers) {
            if (closed) {
                return;
            }
            Runnable loop = kind == WorkerThreads.VIRTUAL ? this::parkingLoop : this::workLoop;
            for (int i = 0; i < n; i++) {
                Thread t = kind.newThread(loop, name + "-worker-" + workers.size());
                workers.add(t);
                t.start();
            }
        }
    }

    public static ShardExecutor create(StreamShardConfig config, String name) {
        AdaptiveLimit limit = null;
        if (config.workersAuto()) {
            // Start at one record (or the floor): only below the knee does a step show its
            // unloaded run time, the base every later window is judged against, and a step that
            // computes has its knee at the cores (started at them, the base already held the
            // contention of the StreamThread and the JIT, and the limit settled at 4-5 times them).
            limit = new AdaptiveLimit(config.workersMin(), config.workers(), 1, System.nanoTime());
        }
        return new ShardExecutor(
                name,
                WorkerThreads.of(config),
                config.workers(),
                limit,
                config.maxInflight(),
                config.maxInflightPerTask(),
                config.drainTimeoutMs());
    }

    /**
     * Registers a stream task (sub-topology and partition numbers, as Kafka Streams names it);
     * what its records throw on a worker goes to {@code failures}.
     */
    public ShardTask register(int subtopology, int partition, boolean unorderedNullKeys, FailureSink failures) {
        long h = scheduler.registerTask(subtopology, partition, unorderedNullKeys, 0);
        return new ShardTask(h, subtopology + "_" + partition, failures);
    }

    public NativeScheduler scheduler() {
        return scheduler;
    }

    /**
     * Waits up to {@code timeoutNanos} until one of the tasks {@code handles[0..count)} has room
     * for a run of records (see {@link RoomWait}). Returns false on timeout.
     */
    boolean waitForRoom(long[] handles, int count, long timeoutNanos) {
        return scheduler.waitForRoom(handles, count, timeoutNanos);
    }

    /** Workers not yet ended (for tests: virtual threads are not in the JVM's thread list). */
    int liveWorkers() {
        synchronized (workers) {
            return (int) workers.stream().filter(Thread::isAlive).count();
        }
    }

    /** Free slots now (for tests and metrics). */
    public int freeSlots() {
        return free.size();
    }

    private void workLoop() {
        if (gate != null && !gate.enter()) {
            return;
        }
        int done = -1;
        while (true) {
            // Report the finished record and take the next without waiting; its slot returns to
            // the pool only once the scheduler has it as finished, and before this worker blocks.
            int slot = scheduler.completeOneAndPoll(done, 0);
            if (done >= 0) {
                free.release(done);
                done = -1;
            }
            if (slot == NativeScheduler.POLL_NONE) {
                waiting.incrementAndGet();
                try {
                    slot = scheduler.completeOneAndPoll(-1, POLL_NANOS);
                } finally {
                    waiting.decrementAndGet();
                }
            }
            if (slot == NativeScheduler.POLL_SHUTDOWN) {
                return;
            }
            if (slot == NativeScheduler.POLL_NONE) {
                // Idle and over the limit: give the place up now, not after one more record.
                if (gate != null && gate.leaveIfOver() && !gate.enter()) {
                    return;
                }
                continue;
            }
            done = run(slot);
            if (gate != null && gate.leaveIfOver()) {
                done = completeAndWait(done);
                if (done == CLOSED) {
                    return;
                }
            }
        }
    }

    private static final int CLOSED = -2;

    /**
     * A worker that gave its place up ({@code workers=auto}, the limit came down): completes its
     * record (it holds no record while it waits) and waits for a place. Returns -1, or {@link
     * #CLOSED} if the pool closed meanwhile.
     */
    private int completeAndWait(int done) {
        if (done >= 0) {
            wake(scheduler.complete(done));
            free.release(done);
        }
        return gate.enter() ? -1 : CLOSED;
    }

    /**
     * The loop of a virtual worker: it never blocks inside native code (that would pin its
     * carrier thread); when nothing is ready it parks on {@link #wakeups}, counted idle by the
     * scheduler, which owes it a wake-up from whichever call makes work ready for it.
     */
    private void parkingLoop() {
        if (gate != null && !gate.enter()) {
            return;
        }
        int done = -1;
        boolean idle = false;
        while (true) {
            long polled = scheduler.pollOrIdle(done, idle);
            if (done >= 0) {
                free.release(done);
                done = -1;
            }
            if (polled == NativeScheduler.POLL_SHUTDOWN) {
                return;
            }
            idle = NativeScheduler.isIdle(polled);
            if (idle) {
                park(Math.min(NativeScheduler.dueInNanos(polled), IDLE_PARK_NANOS));
                continue;
            }
            wake(NativeScheduler.polledWakes(polled));
            done = run(NativeScheduler.polledSlot(polled));
            // Only after a record, never while counted idle by the scheduler.
            if (gate != null && gate.leaveIfOver()) {
                done = completeAndWait(done);
                if (done == CLOSED) {
                    return;
                }
            }
        }
    }

    private void park(long nanos) {
        try {
            wakeups.tryAcquire(Math.max(nanos, 1), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            // Not this worker's to keep: the next record's code would see it (see run).
        }
    }

    /**
     * Wakes the {@code n} idle virtual workers a scheduler call said it owes (any of them: a
     * wake-up is not addressed). Platform workers wait inside the scheduler: there {@code n} is 0.
     */
    private void wake(int n) {
        if (n > 0) {
            wakeups.release(n);
        }
    }

    /**
     * Runs the record in {@code slot}. Returns the slot to complete with the next poll, or -1
     * when the record went back to wait for a retry or failed (the scheduler has it already).
     */
    private int run(int slot) {
        Work w = table[slot];
        Runnable run = w.run;
        ShardTask task = w.task;
        w.run = null;
        w.task = null;
        // An interrupt left by an earlier record (code that restores the flag after catching
        // InterruptedException) or sent to the idle worker is not this record's: without
        // this, its first sleep or blocking call would fail at once.
        Thread.interrupted();
        boolean timed = gate != null;
        long started = timed ? gate.begin() : 0;
        try {
            run.run();
            long retryIn = run instanceof Retriable ? ((Retriable) run).retryDelayNanos() : -1;
            if (timed) {
                timed = false;
                gate.end(started, retryIn >= 0);
            }
            if (retryIn < 0) {
                return slot;
            }
            // Back in the table before the scheduler has it: a worker may take it at once.
            w.run = run;
            w.task = task;
            wake(scheduler.retry(slot, retryIn));
        } catch (Throwable e) {
            if (timed) {
                gate.end(started, true);
            }
            // The exception goes to the task's owner only; the scheduler is told where (the
            // offset it holds), never what: no toString() of the application's exception here.
            task.failures.failed(e);
            wake(scheduler.fail(slot));
            free.release(slot);
        }
        return -1;
    }

    /** Shuts the scheduler down, stops the workers and frees native memory. */
    @Override
    public void close() {
        List<Thread> all;
        synchronized (workers) {
            closed = true;
            all = new ArrayList<>(workers);
        }
        scheduler.shutdown();
        if (gate != null) {
            gate.close();
        }
        if (wakeups != null) {
            // Every parked virtual worker polls once more and hears of the shutdown.
            wakeups.release(all.size());
        }
        for (Thread t : all) {
            try {
                t.join(TimeUnit.SECONDS.toMillis(30));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        scheduler.close();
    }

    /** One stream task's handle on the executor. Submit from one thread (the task's owner). */
    public final class ShardTask {
        private final long handle;
        private final String id;
        private final FailureSink failures;

        private ShardTask(long handle, String id, FailureSink failures) {
            this.handle = handle;
            this.id = id;
            this.failures = failures;
        }

        public String id() {
            return id;
        }

        long handle() {
            return handle;
        }

        ShardExecutor executor() {
            return ShardExecutor.this;
        }

        /** Whether another record can be submitted now. */
        public boolean hasCapacity() {
            return free.size() > 0 && scheduler.hasCapacity(handle);
        }

        /**
         * Hands a record over. Returns false, taking nothing, when a cap is reached or a record
         * of the task failed (its failure is with the task's {@link FailureSink} then).
         *
         * @param key the serialized key bytes, or null for a null key
         */
        public boolean submit(int partition, long offset, byte[] key, Runnable work) {
            int slot = free.take();
            if (slot < 0) {
                return false;
            }
            Work w = table[slot];
            w.run = work;
            w.task = this;
            int code;
            try {
                code = scheduler.submit(
                        handle, partition, offset, key != null, key == null ? 0 : KeyHash.of(key), slot);
            } catch (TaskFailedException e) {
                code = -1;
            } catch (RuntimeException e) {
                w.run = null;
                w.task = null;
                free.release(slot);
                throw e;
            }
            if (code < 0) {
                w.run = null;
                w.task = null;
                free.release(slot);
                return false;
            }
            wake(NativeScheduler.owedWakes(code));
            return true;
        }

        /**
         * Waits until every submitted record has run: true, or false once none runs if a record
         * failed (its failure is with the task's {@link FailureSink}). A timeout throws the
         * scheduler's {@code DrainTimeoutException}.
         */
        public boolean drain() {
            return drain(drainTimeoutMs);
        }

        /** {@link #drain()}, waiting at most {@code timeoutMs} (what is left of a commit's drain timeout). */
        public boolean drain(long timeoutMs) {
            try {
                scheduler.drain(new long[] {handle}, timeoutMs);
                return true;
            } catch (TaskFailedException e) {
                return false;
            }
        }

        /**
         * Closes the task: with {@link CloseMode#DROP_QUEUED} its queued records are discarded
         * (their slots released) and only running ones are waited for; with {@link
         * CloseMode#DRAIN} every record is (a failed task's queued records never run: close it
         * dropping them).
         */
        public void close(CloseMode mode) {
            int[] dropped = new int[maxInflightPerTask + 1];
            // -1 ends the list: a close that fails before the scheduler writes it releases nothing.
            Arrays.fill(dropped, -1);
            try {
                scheduler.closeTask(handle, mode, drainTimeoutMs, dropped);
            } finally {
                for (int slot : dropped) {
                    if (slot < 0) {
                        break;
                    }
                    if (table[slot].run instanceof Retriable) {
                        ((Retriable) table[slot].run).dropped();
                    }
                    table[slot].run = null;
                    table[slot].task = null;
                    free.release(slot);
                }
            }
            scheduler.removeTask(handle);
        }
    }
}
