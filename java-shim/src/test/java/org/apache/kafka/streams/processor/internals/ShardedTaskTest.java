package org.apache.kafka.streams.processor.internals;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamshard.classify.Classification;
import io.streamshard.config.StreamShardConfig;
import io.streamshard.runtime.ShardExecutor;
import io.streamshard.scheduler.CloseMode;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.errors.LogAndFailExceptionHandler;
import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.processor.FailOnInvalidTimestamp;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The record path of one task without a broker and without the agent: a real StreamTask (from a
 * TopologyTestDriver), a real executor and native scheduler, and a source node whose processing
 * is the test's own code, so commit, close, failure and the inline/workers switch are driven
 * directly, as the StreamThread's hooks would drive them.
 */
class ShardedTaskTest {
    private static final String TOPIC = "in";
    private static final String SOURCE = "src";

    private TopologyTestDriver driver;
    private ShardExecutor executor;
    private ShardedTask sharded;
    private StreamShardConfig config;
    private AbstractPartitionGroup.RecordInfo info;
    private long offset;

    /** What processing a record does: the test's code, on whichever thread runs it. */
    private volatile Consumer<Record<Object, Object>> action = r -> {};

    /** A source node that runs {@link #action} instead of forwarding. */
    private final class TestSource extends SourceNode<Object, Object> {
        @SuppressWarnings({"unchecked", "rawtypes"})
        TestSource() {
            super(SOURCE, (Deserializer) Serdes.String().deserializer(), (Deserializer)
                    Serdes.String().deserializer());
        }

        @Override
        public void process(Record<Object, Object> record) {
            action.accept(record);
        }
    }

    /** The driver's task's partition group, as the isProcessable advice passes it. */
    private AbstractPartitionGroup group;

    private void start(int workers, int inlineBelowUs) throws Exception {
        Topology topology = new Topology();
        topology.addSource(SOURCE, TOPIC);
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "sharded-task-test");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        driver = new TopologyTestDriver(topology, props);
        Field f = TopologyTestDriver.class.getDeclaredField("task");
        f.setAccessible(true);
        StreamTask task = (StreamTask) f.get(driver);
        Field g = StreamTask.class.getDeclaredField("partitionGroup");
        g.setAccessible(true);
        group = (AbstractPartitionGroup) g.get(task);
        config = StreamShardConfig.from(Map.of(
                StreamShardConfig.WORKERS,
                workers,
                StreamShardConfig.INLINE_BELOW_US,
                inlineBelowUs,
                StreamShardConfig.DRAIN_TIMEOUT_MS,
                20_000));
        executor = ShardExecutor.create(config, "sharded-task-test");
        StreamShardInstances.Instance instance =
                new StreamShardInstances.Instance(null, config, executor, null, null, false);
        sharded = new ShardedTask(
                instance, task, new Classification(Map.of(), List.of(), Classification.Mode.PARALLEL, null), null);
        info = new AbstractPartitionGroup.RecordInfo();
        info.queue = new RecordQueue(
                new TopicPartition(TOPIC, 0),
                new TestSource(),
                new FailOnInvalidTimestamp(),
                new LogAndFailExceptionHandler(),
                task.processorContext,
                new LogContext());
    }

    @AfterEach
    void stop() {
        if (executor != null) {
            executor.close();
        }
        if (driver != null) {
            driver.close();
        }
    }

    /** Hands one record to the task as StreamTask.doProcess would; what submit returned. */
    private Object submit(String key) {
        byte[] raw = key.getBytes(StandardCharsets.UTF_8);
        long o = offset++;
        StampedRecord r = new StampedRecord(new ConsumerRecord<Object, Object>(TOPIC, 0, o, key, "v" + o), o, raw, raw);
        return sharded.submit(r, info, 0L);
    }

    /** Per key, the values processed, in order; and whether a key ever ran on two threads at once. */
    private final Map<Object, List<Object>> seen = new ConcurrentHashMap<>();

    private final Map<Object, Thread> running = new ConcurrentHashMap<>();
    private final AtomicInteger overlaps = new AtomicInteger();

    private void recordAndSleep(Record<Object, Object> r, long millis) {
        if (running.putIfAbsent(r.key(), Thread.currentThread()) != null) {
            overlaps.incrementAndGet();
        }
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        seen.computeIfAbsent(r.key(), k -> Collections.synchronizedList(new ArrayList<>()))
                .add(r.value());
        running.remove(r.key());
    }

    @Test
    void aCommitWaitsForEveryHandedOffRecordInKeyOrder() throws Exception {
        start(8, 0);
        action = r -> recordAndSleep(r, 2);
        for (int i = 0; i < 120; i++) {
            assertThat(submit("k" + (i % 6))).isSameAs(ShardedTask.HandedOff.INSTANCE);
        }
        sharded.beforeCommit(true);
        // Nothing may be left running once the commit's drain returned: every record is in.
        int total = seen.values().stream().mapToInt(List::size).sum();
        assertThat(total).isEqualTo(120);
        for (int k = 0; k < 6; k++) {
            List<Object> expected = new ArrayList<>();
            for (int i = k; i < 120; i += 6) {
                expected.add("v" + i);
            }
            assertThat(seen.get("k" + k)).as("key k%d in offset order", k).containsExactlyElementsOf(expected);
        }
        assertThat(overlaps.get()).as("a key on two threads at once").isZero();
        assertThat(sharded.drains().count()).isEqualTo(1);
    }

    @Test
    void aDirtyCloseDropsQueuedRecordsAndWaitsForRunningOnes() throws Exception {
        start(2, 0);
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger ran = new AtomicInteger();
        action = r -> {
            ran.incrementAndGet();
            started.countDown();
            try {
                release.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        for (int i = 0; i < 10; i++) {
            submit("same-key"); // one lane: the first runs, nine wait behind it
        }
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
        Thread releaser = new Thread(() -> {
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                return;
            }
            release.countDown();
        });
        releaser.start();
        long t0 = System.nanoTime();
        sharded.close(CloseMode.DROP_QUEUED);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        releaser.join();
        assertThat(tookMs).as("the close waited for the running record").isGreaterThanOrEqualTo(150);
        Thread.sleep(100);
        assertThat(ran.get()).as("queued records dropped, never run").isEqualTo(1);
        assertThat(executor.freeSlots()).as("every slot back in the pool").isEqualTo(config.maxInflight());
    }

    @Test
    void aWorkerFailureComesBackInStockFormAtTheNextProcessAndAtTheCommit() throws Exception {
        start(4, 0);
        action = r -> {
            if ("v3".equals(r.value())) {
                throw new IllegalStateException("boom");
            }
        };
        StreamsException thrown = null;
        for (int i = 0; i < 6 && thrown == null; i++) {
            try {
                submit("k" + i);
            } catch (StreamsException e) {
                // A worker may fail v3 before k4 or k5 is submitted: the submit of the next record
                // then throws the failure, as stock's process of that record would have.
                thrown = e;
            }
        }
        // Otherwise isProcessable throws it once none of the task's records runs (stock: from process).
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (thrown == null && System.nanoTime() < deadline) {
            try {
                sharded.processable(true, group);
                Thread.sleep(5);
            } catch (StreamsException e) {
                thrown = e;
            }
        }
        assertThat(thrown).isNotNull();
        assertThat(thrown.getMessage())
                .isEqualTo(
                        "Exception caught in process. taskId=0_0, processor=src, " + "topic=in, partition=0, offset=3");
        assertThat(thrown.getCause()).isInstanceOf(IllegalStateException.class).hasMessage("boom");
        // The commit's drain throws the same failure: no offset is taken past it.
        assertThatThrownBy(() -> sharded.beforeCommit(true)).isSameAs(thrown);
        // And a further record is refused with it, as stock's process would have failed first.
        assertThatThrownBy(() -> submit("k9")).isSameAs(thrown);
    }

    @Test
    void goingBackToTheStreamThreadDrainsTheTaskFirst() throws Exception {
        start(4, 1_000); // 1 ms: starts inline
        AtomicInteger handedOff = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        // On the workers a record takes 0.05 ms: far enough below the 1 ms mark that a worker
        // descheduled on a loaded machine (the run time is wall-clock) does not push the average
        // over it (0.2 ms did once, under a full test run beside benchmarks); inline records are
        // the test's own sleep, below.
        action = r -> {
            long until = System.nanoTime() + 50_000;
            while (System.nanoTime() < until) {
                Thread.onSpinWait();
            }
            done.incrementAndGet();
        };
        int slowInline = 0;
        // Slow records run inline (the stock body, here: the test's sleep) until the task switches.
        while (true) {
            Object r = submit("k" + slowInline % 4);
            if (r == ShardedTask.HandedOff.INSTANCE) {
                handedOff.incrementAndGet();
                break;
            }
            assertThat(r).isSameAs(sharded);
            assertThat(sharded.mode()).isEqualTo("inline");
            Thread.sleep(4);
            sharded.ranInline();
            slowInline++;
            assertThat(slowInline)
                    .as("slow records go to the workers within a block")
                    .isLessThan(64);
        }
        assertThat(sharded.mode()).isEqualTo("parallel");
        // Fast records on the workers: once enough of them are timed, the task goes back inline,
        // and the switch drains it: every record handed off has run when submit returns.
        for (int i = 0; i < 20_000; i++) {
            // Paced so the four keys' queues stay short: a task goes inline only once at most 64
            // of its records are handed off (InlinePolicy.next), and the drain then has those.
            while (handedOff.get() - done.get() > 32) {
                Thread.onSpinWait();
            }
            Object r = submit("k" + i % 4);
            if (r == sharded) {
                assertThat(done.get())
                        .as("every handed-off record ran before one runs inline")
                        .isEqualTo(handedOff.get());
                assertThat(sharded.mode()).isEqualTo("inline");
                sharded.ranInline();
                return;
            }
            handedOff.incrementAndGet();
        }
        throw new AssertionError("fast records never went back to the StreamThread");
    }
}
