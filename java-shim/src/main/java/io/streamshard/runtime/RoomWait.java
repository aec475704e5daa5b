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
 * most the poll time, then polls without blocking. Per StreamThread; not shared.
 */
public final class RoomWait {
    private static final ThreadLocal<RoomWait> CURRENT = ThreadLocal.withInitial(RoomWait::new);

    private ShardExecutor executor;
    private long[] tasks = new long[8];
    private int count;

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
}
