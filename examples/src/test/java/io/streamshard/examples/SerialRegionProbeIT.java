package io.streamshard.examples;

import io.streamshard.examples.MatrixRun.App;
import io.streamshard.examples.MatrixRun.Snapshot;
import io.streamshard.examples.MatrixRun.Violations;
import io.streamshard.examples.OutputCompare.Mode;
import io.streamshard.examples.OutputCompare.Rec;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;

/**
 * The serial region seen from inside: an opted-in {@link Probe} (parallel region, 2 ms per record)
 * feeds an unknown Processor API processor (serial region) that checks, per task (one input
 * partition each), that it never runs on two threads at once, that it sees the partition's records
 * in offset order, and that {@code currentStreamTimeMs()} is what stock gives: the largest record
 * timestamp of the partition so far (some input timestamps go back). Runs stock at the same time
 * with the same checks (they must hold stock; that validates the checks) and compares the checker's
 * output record for record.
 */
class SerialRegionProbeIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 2_000;

    /** What the serial checkers of one run saw. */
    static final class Seen {
        final Violations violations = new Violations();
        final Map<String, AtomicInteger> inUse = new ConcurrentHashMap<>();
        final Map<String, AtomicLong> ranOn = new ConcurrentHashMap<>();
        final AtomicLong records = new AtomicLong();

        long ran(String role) {
            AtomicLong n = ranOn.get(role);
            return n == null ? 0 : n.get();
        }
    }

    /** The serial-region processor: checks, then forwards the value with its offset and stream time. */
    static ProcessorSupplier<String, String, String, String> checker(Seen seen) {
        return () -> new Processor<>() {
            private ProcessorContext<String, String> context;
            private AtomicInteger inUse;
            private long lastOffset = -1;
            private long lastStreamTime = Long.MIN_VALUE;
            private long maxTimestamp = Long.MIN_VALUE;
            /** Plain field next to an atomic one: a stale read means no happens-before between two records. */
            private long plainCount;

            private final AtomicLong atomicCount = new AtomicLong();

            @Override
            public void init(ProcessorContext<String, String> context) {
                this.context = context;
                this.inUse = seen.inUse.computeIfAbsent(context.taskId().toString(), k -> new AtomicInteger());
            }

            @Override
            public void process(Record<String, String> record) {
                String task = context.taskId().toString();
                int n = inUse.incrementAndGet();
                try {
                    if (n != 1) {
                        seen.violations.add("task " + task + ": serial processor on " + n + " threads at once");
                    }
                    if (plainCount != atomicCount.get()) {
                        seen.violations.add("task " + task + ": plain field " + plainCount + " but atomic "
                                + atomicCount.get() + " (no happens-before between serial records)");
                    }
                    var md = context.recordMetadata().orElseThrow();
                    if (md.partition() != context.taskId().partition()) {
                        seen.violations.add("task " + task + ": record of partition " + md.partition());
                    }
                    if (md.offset() <= lastOffset) {
                        seen.violations.add("task " + task + ": offset " + md.offset() + " after " + lastOffset);
                    }
                    lastOffset = md.offset();
                    maxTimestamp = Math.max(maxTimestamp, record.timestamp());
                    long streamTime = context.currentStreamTimeMs();
                    if (streamTime < lastStreamTime) {
                        seen.violations.add(
                                "task " + task + ": stream time " + streamTime + " after " + lastStreamTime);
                    }
                    if (streamTime != maxTimestamp) {
                        seen.violations.add("task " + task + " offset " + md.offset() + ": stream time " + streamTime
                                + ", largest timestamp so far " + maxTimestamp);
                    }
                    lastStreamTime = streamTime;
                    String thread = Thread.currentThread().getName();
                    String role = thread.startsWith("streamshard-worker-")
                            ? "worker"
                            : thread.contains("-StreamThread-") ? "StreamThread" : "other:" + thread;
                    seen.ranOn.computeIfAbsent(role, k -> new AtomicLong()).incrementAndGet();
                    seen.records.incrementAndGet();
                    plainCount++;
                    atomicCount.incrementAndGet();
                    context.forward(record.withValue(record.value() + "|o" + md.offset() + "|st" + streamTime));
                } finally {
                    inUse.decrementAndGet();
                }
            }
        };
    }

    static Topology topology(String input, String output, Probe probe, Seen seen) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()).withName("probe-src"))
                .process(probe.supplier(input, r -> Probe.sleep(2), r -> "all"), Named.as("probe"))
                .process(checker(seen), Named.as("serial-check"))
                .to(output, Produced.with(Serdes.String(), Serdes.String()).withName("probe-sink"));
        return b.build();
    }

    @Test
    void serialRegionRunsOneAtATimeInDequeueOrderWithStockStreamTime() throws Exception {
        String suffix = Inputs.suffix("serialprobe");
        String input = "serialprobe-in" + suffix;
        String stockOut = "serialprobe-out" + suffix + "-stock";
        String shardOut = "serialprobe-out" + suffix + "-ss";
        OrderProducer.createTopics(BOOTSTRAP, 4, List.of(input, stockOut, shardOut));
        // Every 7th record 500 ms older than its neighbours: stream time is not simply the record's timestamp.
        Feeds.produce(
                BOOTSTRAP,
                input,
                Feeds.Feed.of("serialprobe-in", RECORDS, 200).jitter(i -> i % 7 == 0 ? 500 : 0),
                Feeds.base(),
                4);

        Probe stockProbe = new Probe();
        Probe shardProbe = new Probe();
        Seen stockSeen = new Seen();
        Seen shardSeen = new Seen();
        Properties ps = MatrixRun.config(BOOTSTRAP, "it" + suffix + "-stock", false);
        Properties pss = MatrixRun.config(BOOTSTRAP, "it" + suffix + "-ss", true);
        ps.put("streamshard.parallel.processors", "probe");
        pss.put("streamshard.parallel.processors", "probe");
        Snapshot shard;
        try (App stock = new App(topology(input, stockOut, stockProbe, stockSeen), ps);
                App ss = new App(topology(input, shardOut, shardProbe, shardSeen), pss)) {
            MatrixRun.Completion stockDone = stock.completion(List.of(input), List.of(stockOut));
            MatrixRun.Completion shardDone = ss.completion(List.of(input), List.of(shardOut));
            MatrixRun.awaitAll(BOOTSTRAP, Duration.ofMinutes(3), List.of(stockDone, shardDone));
            stock.snapshot(List.of(), stockSeen.violations);
            shard = ss.snapshot(List.of(), shardSeen.violations);
        }
        List<Rec> stockRecs = OutputCompare.read(BOOTSTRAP, stockOut, false);
        List<Rec> shardRecs = OutputCompare.read(BOOTSTRAP, shardOut, false);
        System.out.printf(
                "serial region probe: checker ran on %s (stock %s); probe at most %d at once; explain %s%n",
                shardSeen.ranOn, stockSeen.ranOn, shardProbe.maxRunning.get(), shard.explain());

        SoftAssertions soft = new SoftAssertions();
        // The checks themselves hold stock.
        soft.assertThat(List.copyOf(stockSeen.violations.list))
                .as("stock: serial checker violations")
                .isEmpty();
        soft.assertThat(stockProbe.violation.get()).as("stock: probe violation").isNull();
        soft.assertThat(stockSeen.records.get())
                .as("stock: records through the checker")
                .isEqualTo(RECORDS);
        // streamshard: the serial region one at a time, in dequeue order, stock stream time.
        soft.assertThat(List.copyOf(shardSeen.violations.list))
                .as("streamshard: serial checker violations")
                .isEmpty();
        soft.assertThat(shardProbe.violation.get())
                .as("streamshard: probe (key on two threads or out of order)")
                .isNull();
        soft.assertThat(shardSeen.records.get())
                .as("streamshard: records through the checker")
                .isEqualTo(RECORDS);
        soft.assertThat(shardSeen.ran("worker") + shardSeen.ran("StreamThread"))
                .as("streamshard: checker ran on workers or the StreamThread only: %s", shardSeen.ranOn)
                .isEqualTo(RECORDS);
        soft.assertThat(OutputCompare.compare(Mode.EXACT, stockRecs, shardRecs))
                .as("checker output vs stock")
                .isEmpty();
        soft.assertThat(shard.active()).as("streamshard active").isTrue();
        // The probe above the serial region runs parallel.
        soft.assertThat(shardProbe.maxRunning.get())
                .as("probe records running at once (parallel region)")
                .isGreaterThanOrEqualTo(2);
        soft.assertThat(shard.explainNodesMissing()).as("explainNodes").isNull();
        if (shard.explainNodes() != null) {
            soft.assertThat(shard.explainNodes()).as("explainNodes").hasSize(4).allSatisfy((task, nodes) -> {
                soft.assertThat(nodes.get("probe")).as("task %s probe", task).isEqualTo(Explain.PARALLEL);
                soft.assertThat(nodes.get("serial-check"))
                        .as("task %s serial-check", task)
                        .startsWith(Explain.SERIAL_REGION);
                soft.assertThat(nodes.get("probe-sink"))
                        .as("task %s probe-sink", task)
                        .startsWith(Explain.SERIAL_REGION);
            });
        }
        soft.assertThat(shard.explain())
                .as("explain")
                .hasSize(4)
                .allSatisfy(
                        (task, d) -> soft.assertThat(d).as("task %s", task).isEqualTo(Explain.MIXED + "serial-check"));
        soft.assertAll();
    }
}
