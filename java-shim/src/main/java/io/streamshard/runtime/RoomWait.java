package io.streamshard.runtime;

import java.time.Duration;
import java.util.Arrays;

/**
 * Where a StreamThread waits when its tasks are at their in-flight caps. Stock Kafka Streams
 * would then block in {@code Consumer.poll(poll.ms)}: with every input partition paused (its
 * buffer full) no new record ends that poll, and the workers can empty the caps long before it
 * returns (at 64 workers and 1 ms records, 1,000 records in 16 ms of a 100 ms poll). Instead the
 * thread notes each task it found at its cap ({@link #atCap}) and, before its next poll, waits
 * in the scheduler until one of them has room for a run of records ({@link #beforePoll}), at
 * most the poll time, then polls without blocking.
 *
 * <p>It also keeps the thread polling while a task waits for input. Kafka Streams' process loop
 * polls only once no task processed a record in a pass; a task whose records run on the workers
 * takes a few records each pass (as many as finished since the last), so the loop can run for
 * seconds without a poll. The consumer meanwhile returns what it fetched one partition at a time,
 * and the busy task's partition is never paused (its queue never fills: the records leave it for
 * the workers as fast as they finish), so the other tasks' fetched records wait behind it: at the
 * start of a backlog, tasks began 2 to 5 seconds apart, and the late ones' keys then ended the run
 * alone. So once a task is found waiting for input ({@link #waitingForInput}), the loop is ended
 * for a poll at most {@link #POLL_EVERY_NANOS} after the last one ({@link #pollDue}); the busy
 * task's queue then fills, Kafka Streams pauses its partition, and the next polls return the
 * others'. Per StreamThread; not shared.
 */
public final class RoomWait {
    private static final ThreadLocal<RoomWait> CURRENT = ThreadLocal.withInitial(RoomWait::new);

    /** How long a StreamThread with a task waiting for input goes without a poll, at most. */
    static final long POLL_EVERY_NANOS = 20_000_000L;
    /**
     * How long streamshard's tasks refuse records for a poll that does not come: tasks streamshard
     * leaves stock (no hook of ours) on the same thread keep Kafka Streams' loop going until their
     * queues are empty, and the workers would meanwhile run out of records.
     */
    static final long REFUSE_AT_MOST_NANOS = 5_000_000L;

    private ShardExecutor executor;
    private long[] tasks = new long[8];
    private int count;
    private long lastPoll = System.nanoTime();
    /** A task was found waiting for input since the last poll. */
    private boolean inputWanted;
    /** The process loop is being ended for a poll (every task answers not processable), since when. */
    private boolean pollNow;

    private long pollNowSince;
    /** Polls so far: a task that has not been asked since the last one is never refused. */
    private long polls;

    private RoomWait() {}

    /** On the StreamThread: {@code task} refused a record for its cap (it is not processable). */
    public static void atCap(ShardExecutor.ShardTask task) {
        CURRENT.get().add(task);
    }

    private void add(ShardExecutor.ShardTask task) {
        ShardExecutor e = task.executor();
        if (e != executor) {
            executor = e; // one StreamThread serves one instance: a change means a new instance
            count = 0;
        }
        long h = task.handle();
        for (int i = 0; i < count; i++) {
            if (tasks[i] == h) {
                return;
            }
        }
        if (count == tasks.length) {
            tasks = Arrays.copyOf(tasks, count * 2);
        }
        tasks[count++] = h;
    }

    /**
     * On the StreamThread, before its consumer poll: if a task was found at its cap since the
     * last poll, waits up to {@code pollTime} for room and returns {@link Duration#ZERO} (the
     * poll then only fetches what is there and serves the group protocol); otherwise returns
     * {@code pollTime} unchanged. Records that arrive for another task meanwhile wait at most
     * the poll time, as they would behind a stock poll that had just begun.
     */
    public static Duration beforePoll(Duration pollTime) {
        RoomWait w = CURRENT.get();
        w.lastPoll = System.nanoTime();
        w.inputWanted = false;
        w.polls++;
        if (w.pollNow) {
            // The loop was ended for this poll: no wait for room, which the next pass takes.
            w.pollNow = false;
            w.count = 0;
            return Duration.ZERO;
        }
        if (w.count == 0) {
            return pollTime;
        }
        int n = w.count;
        w.count = 0;
        if (pollTime.isZero() || pollTime.isNegative()) {
            return pollTime;
        }
        try {
            w.executor.waitForRoom(w.tasks, n, pollTime.toNanos());
        } catch (RuntimeException closed) {
            return pollTime; // the instance is closing: poll as stock would
        }
        return Duration.ZERO;
    }

    /**
     * On the StreamThread: stock found a task not processable (no record buffered for it, one of
     * its partitions waited on; also a transaction commit pending, or a closed task), so the
     * thread should not go long without a poll.
     */
    public static void waitingForInput() {
        CURRENT.get().inputWanted = true;
    }

    /** On the StreamThread: how many polls it has made (a task compares it with the last it saw). */
    public static long polls() {
        return CURRENT.get().polls;
    }

    /**
     * On the StreamThread, before a processable task takes a record: whether it should take none,
     * so that Kafka Streams' process loop ends and the thread polls, since a task has waited for
     * input for {@link #POLL_EVERY_NANOS} or more without one. Asked only of a task already asked
     * since the last poll (every task takes records once after each poll, however long the pass
     * before it took). Once true, true for every task until the poll, or for {@link
     * #REFUSE_AT_MOST_NANOS} if the poll does not come; then the tasks take records again and the
     * wait starts over.
     */
    public static boolean pollDue() {
        RoomWait w = CURRENT.get();
        if (!w.inputWanted) {
            return false;
        }
        long now = System.nanoTime();
        if (w.pollNow) {
            if (now - w.pollNowSince < REFUSE_AT_MOST_NANOS) {
                return true;
            }
            w.pollNow = false;
            w.lastPoll = now;
            return false;
        }
        if (now - w.lastPoll >= POLL_EVERY_NANOS) {
            w.pollNow = true;
            w.pollNowSince = now;
        }
        return w.pollNow;
    }
}
