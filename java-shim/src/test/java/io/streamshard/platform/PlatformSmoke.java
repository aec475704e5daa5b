package io.streamshard.platform;

import io.streamshard.StreamShard;
import io.streamshard.agent.StreamShardAgent;
import io.streamshard.scheduler.NativeLibrary;
import io.streamshard.scheduler.NativeScheduler;
import io.streamshard.scheduler.PartitionProgress;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;

/**
 * The native scheduler driven through the real Java classes, on whatever platform this JVM is:
 * {@code tests/platforms/smoke.sh} runs it in an emulated aarch64 JVM with the agent jar as
 * {@code -javaagent}. With {@code --agent}, a KafkaStreams is created first (never started: no
 * broker) and must be one streamshard runs, which loads the library the way an application does.
 * Then records of 16 keys are submitted, run by two worker threads and drained;
 * per-key order, one thread per key at a time, every record run once and the committable offset
 * are checked. Only the public API is used: with the agent, the scheduler's classes are the
 * bootstrap layer's, not this loader's. Exits 1, naming what failed, on any difference.
 */
public final class PlatformSmoke {
    static final int RECORDS = 2_000;
    static final int KEYS = 16;
    static final int SLOTS = 64;

    private PlatformSmoke() {}

    public static void main(String[] args) throws Exception {
        boolean agent = args.length > 0 && args[0].equals("--agent");
        try {
            System.out.println(run(agent));
        } catch (Throwable t) {
            System.out.println("streamshard platform smoke: FAILED on " + System.getProperty("os.name") + "/"
                    + System.getProperty("os.arch") + ": " + t);
            System.exit(1);
        }
    }

    /** Whether streamshard runs a KafkaStreams of a one-step topology (created, not started). */
    static boolean kafkaStreamsActive() throws IOException {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("smoke-in").mapValues(v -> v).to("smoke-out");
        Properties p = new Properties();
        p.put("application.id", "platform-smoke");
        p.put("bootstrap.servers", "127.0.0.1:1");
        p.put("streamshard.workers", "2");
        p.put("state.dir", Files.createTempDirectory("platform-smoke").toString());
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            return StreamShard.active(streams);
        }
    }

    /** The run; returns its one-line summary or throws naming the first difference. */
    public static String run(boolean agent) throws Exception {
        if (agent && !StreamShardAgent.installed()) {
            throw new IllegalStateException("the agent did not install (see its ERROR above)");
        }
        if (agent) {
            boolean active = kafkaStreamsActive();
            System.out.println("streamshard active: " + active);
            if (!active) {
                throw new IllegalStateException("streamshard does not run the KafkaStreams (see the ERROR above)");
            }
        }
        String resource = NativeLibrary.resource();
        int[] keyOf = new int[SLOTS];
        int[] seqOf = new int[SLOTS];
        ConcurrentLinkedQueue<Integer> free = new ConcurrentLinkedQueue<>();
        for (int s = 0; s < SLOTS; s++) {
            free.add(s);
        }
        AtomicIntegerArray running = new AtomicIntegerArray(KEYS);
        AtomicIntegerArray lastSeq = new AtomicIntegerArray(KEYS);
        for (int k = 0; k < KEYS; k++) {
            lastSeq.set(k, -1);
        }
        AtomicReference<String> problem = new AtomicReference<>();
        try (NativeScheduler scheduler = NativeScheduler.create(SLOTS, SLOTS, 4, 4, 0)) {
            long task = scheduler.registerTask(0, 0, false, 0);
            List<Thread> workers = new ArrayList<>();
            for (int w = 0; w < 2; w++) {
                Thread t = new Thread(
                        () -> {
                            int done = -1;
                            while (true) {
                                int slot = scheduler.completeOneAndPoll(done, 50_000_000L);
                                if (done >= 0) {
                                    free.add(done);
                                }
                                done = -1;
                                if (slot == NativeScheduler.POLL_SHUTDOWN) {
                                    return;
                                }
                                if (slot < 0) {
                                    continue;
                                }
                                int key = keyOf[slot];
                                if (running.incrementAndGet(key) != 1) {
                                    problem.compareAndSet(null, "key " + key + " ran on two threads at once");
                                }
                                int prev = lastSeq.getAndSet(key, seqOf[slot]);
                                if (prev + 1 != seqOf[slot]) {
                                    problem.compareAndSet(
                                            null, "key " + key + " ran record " + seqOf[slot] + " after " + prev);
                                }
                                Thread.yield();
                                running.decrementAndGet(key);
                                done = slot;
                            }
                        },
                        "smoke-worker-" + w);
                t.start();
                workers.add(t);
            }
            int[] nextSeq = new int[KEYS];
            for (int offset = 0; offset < RECORDS; offset++) {
                int key = (offset * 7) % KEYS;
                Integer slot;
                while ((slot = free.poll()) == null) {
                    Thread.onSpinWait();
                }
                keyOf[slot] = key;
                seqOf[slot] = nextSeq[key]++;
                int code;
                while ((code = scheduler.submit(task, 0, offset, true, 1000 + key, slot)) < 0) {
                    Thread.sleep(1); // a cap: wait for the workers
                }
                if (code != NativeScheduler.SUBMIT_AVAILABLE
                        && code != NativeScheduler.SUBMIT_TASK_FULL
                        && code != NativeScheduler.SUBMIT_GLOBAL_FULL) {
                    throw new IllegalStateException("submit returned " + code);
                }
            }
            scheduler.drain(new long[] {task}, 60_000);
            PartitionProgress p = scheduler.partitionProgress(task, 0);
            scheduler.shutdown();
            for (Thread t : workers) {
                t.join(10_000);
            }
            if (problem.get() != null) {
                throw new IllegalStateException(problem.get());
            }
            for (int k = 0; k < KEYS; k++) {
                if (lastSeq.get(k) != nextSeq[k] - 1) {
                    throw new IllegalStateException("key " + k + " ran " + (lastSeq.get(k) + 1) + " of " + nextSeq[k]);
                }
            }
            if (p.finished() != RECORDS || p.committable() != RECORDS) {
                throw new IllegalStateException("after the drain: " + p.finished() + " finished, committable "
                        + p.committable() + "; expected " + RECORDS);
            }
        }
        return "streamshard platform smoke: ok on " + System.getProperty("os.name") + "/"
                + System.getProperty("os.arch") + " with " + resource + (agent ? " (agent installed)" : "")
                + ": " + RECORDS + " records of " + KEYS + " keys on 2 workers, in order per key, drained, committable "
                + RECORDS;
    }
}
