package io.streamshard.runtime;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * What a commit of one task may cover while its records are still running: the task's handed-off
 * records in the order its StreamThread dequeued them, and the prefix of that order whose records
 * have all finished (retired). A commit covers the retired prefix only: per partition, its offset is
 * that of the first record not retired, and its partition time the one stock had just before that
 * record's dequeue (kept on its entry), so a restart resumes exactly where stock would have.
 *
 * <p>Why the dequeue order and not each partition's own finished prefix: records of one key may
 * come from two partitions of a task (a co-partitioned join), and a later record of a key reads
 * what the earlier one wrote to the key's state. A record is retired only after every record
 * dequeued before it, so what a commit covers never depends on a record it does not cover.
 *
 * <p>Under exactly-once a record's sends (sinks, repartition topics, changelogs) are held on its
 * entry ({@link Entry#hold}) and go to the producer when it retires, in dequeue order, so a
 * transaction never carries a write of a record whose offset it does not commit.
 *
 * <p>Threads: {@link #append}, {@link #retire} and the readers belong to the task's StreamThread;
 * {@link Entry#hold} and {@link Entry#finish} to the one thread running the record at a time. An
 * entry's held sends are written before {@code finish} (a volatile write) and read after {@code
 * retire} saw it.
 *
 * @param <H> a held send
 */
public final class CommitOrder<H> {
    /** One record's place in the order. */
    public static final class Entry<H> {
        final int partition;
        final long offset;
        /** The partition's time just before this record's dequeue; {@link #UNKNOWN} if not known. */
        final long partitionTimeBefore;

        private final CommitOrder<H> order;
        private volatile boolean done;
        private ArrayList<H> held;
        private long bytes;

        private Entry(CommitOrder<H> order, int partition, long offset, long partitionTimeBefore) {
            this.order = order;
            this.partition = partition;
            this.offset = offset;
            this.partitionTimeBefore = partitionTimeBefore;
        }

        /** Keeps a send of this record's (of {@code bytes} serialized bytes) until the record retires. */
        public void hold(H send, long bytes) {
            if (held == null) {
                held = new ArrayList<>(2);
            }
            held.add(send);
            this.bytes += bytes;
            order.heldBytes.addAndGet(bytes);
            order.heldSends.incrementAndGet();
        }

        /** The record finished, both its parallel and its serial part: it may retire. */
        public void finish() {
            done = true;
        }

        public long offset() {
            return offset;
        }

        public long partitionTimeBefore() {
            return partitionTimeBefore;
        }
    }

    private final ArrayDeque<Entry<H>> order = new ArrayDeque<>();
    /** When the first record not retired became the first (System.nanoTime; StreamThread only). */
    private long headSince;
    /** {@code order}'s size, for readers on other threads (metrics, the status listener). */
    private volatile int backlog;
    /** The entries not retired, by partition number; each in offset order. */
    private ArrayDeque<Entry<H>>[] byPartition = newQueues(0);
    /**
     * A partition time streamshard did not read. Not Kafka Streams' own "no time yet" (-1), which a
     * new application's first record has before it and a commit encodes as stock's would.
     */
    public static final long UNKNOWN = Long.MIN_VALUE;

    private final AtomicLong heldBytes = new AtomicLong();
    private final AtomicLong heldSends = new AtomicLong();
    /** What {@link #retire} gives each retired entry's held sends to, in order. */
    private final Consumer<H> release;

    /** {@code release} receives the held sends of retiring records, in dequeue order (the StreamThread). */
    public CommitOrder(Consumer<H> release) {
        this.release = release;
    }

    @SuppressWarnings("unchecked")
    private static <H> ArrayDeque<Entry<H>>[] newQueues(int n) {
        return (ArrayDeque<Entry<H>>[]) new ArrayDeque<?>[n];
    }

    /** The next record in dequeue order, before any thread may run it. */
    public Entry<H> append(int partition, long offset, long partitionTimeBefore) {
        if (partition >= byPartition.length) {
            byPartition = Arrays.copyOf(byPartition, Math.max(partition + 1, 2 * byPartition.length));
        }
        ArrayDeque<Entry<H>> q = byPartition[partition];
        if (q == null) {
            q = byPartition[partition] = new ArrayDeque<>();
        }
        Entry<H> e = new Entry<>(this, partition, offset, partitionTimeBefore);
        if (order.isEmpty()) {
            headSince = System.nanoTime();
        }
        order.addLast(e);
        q.addLast(e);
        backlog = order.size();
        return e;
    }

    /**
     * Retires every finished entry from the head of the order, releasing their held sends in
     * order; returns how many retired. A send that throws stops it there: that entry and the ones
     * after it stay (the caller fails the task).
     */
    public int retire() {
        int n = 0;
        Entry<H> e;
        while ((e = order.peekFirst()) != null && e.done) {
            List<H> held = e.held;
            if (held != null) {
                for (H h : held) {
                    release.accept(h);
                }
                heldSends.addAndGet(-held.size());
                heldBytes.addAndGet(-e.bytes);
                e.held = null;
            }
            order.pollFirst();
            byPartition[e.partition].pollFirst();
            n++;
        }
        if (n > 0) {
            backlog = order.size();
            headSince = System.nanoTime();
        }
        return n;
    }

    /**
     * How long the first record not retired has been the first (it holds every commit at its
     * offset), ns at {@code now}; 0 if none is waiting. StreamThread only.
     */
    public long headHeldNanos(long now) {
        return order.isEmpty() ? 0 : now - headSince;
    }

    /** The partition's first record not retired, or null if every one handed off has retired. */
    public Entry<H> firstUnretired(int partition) {
        return partition >= byPartition.length || byPartition[partition] == null
                ? null
                : byPartition[partition].peekFirst();
    }

    /**
     * Whether every partition's first record not retired knows its partition's time before it
     * (not so for the first record handed off after a start or after records ran elsewhere: a
     * commit then waits for it instead).
     */
    public boolean partitionTimesKnown() {
        for (ArrayDeque<Entry<H>> q : byPartition) {
            Entry<H> e = q == null ? null : q.peekFirst();
            if (e != null && e.partitionTimeBefore == UNKNOWN) {
                return false;
            }
        }
        return true;
    }

    /** Records handed off and not retired (any thread). */
    public int backlog() {
        return backlog;
    }

    /** Sends held by records not retired, and their bytes (any thread). */
    public long heldSends() {
        return heldSends.get();
    }

    public long heldBytes() {
        return heldBytes.get();
    }

    /**
     * Forgets every entry not retired (a dirty close: their records run again from the committed
     * offsets, and their held sends are never sent).
     */
    public void clear() {
        order.clear();
        backlog = 0;
        for (ArrayDeque<Entry<H>> q : byPartition) {
            if (q != null) {
                q.clear();
            }
        }
        heldBytes.set(0);
        heldSends.set(0);
    }
}
