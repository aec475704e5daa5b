package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import java.nio.file.Files;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.api.Test;

/**
 * A DSL aggregation keeps its caching layer (Kafka Streams' default) under streamshard: while the
 * task runs on its StreamThread the cache works as in stock (updates of a key are merged until a
 * flush or an eviction), and while its records run on the workers each update is written through
 * and forwarded by the worker of its key. The input has a cheap phase, a slow phase (the
 * aggregator takes 1 ms a record, so the task goes to the workers) and a cheap phase again; the
 * commit interval is long enough that the cache still holds dirty entries of every key when the
 * task goes to the workers.
 *
 * <p>What fails if the write-through breaks: the aggregator checks that each record continues
 * its key's aggregate (a worker reading a stale cached value sees an old sequence number); the
 * node below the aggregate checks that each key's updates arrive one at a time and in order (a
 * cache eviction on a worker forwards another key's update there); every update made on a worker
 * must be in the output, and the last update of every key must carry its full count (a lost
 * forward).
 */
class CachedStoreIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int CHEAP = 6_000;
    private static final int SLOW = 1_500;
    private static final int TOTAL = 2 * CHEAP + SLOW;
    private static final int KEYS = 50;

    @Test
    void anAggregationCachesOnTheStreamThreadAndWritesThroughOnTheWorkers() throws Exception {
        String suffix = Inputs.suffix("cached");
        String input = "cached-in" + suffix;
        String output = "cached-out" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 2, List.of(input, output));
        Inputs.producePhases(BOOTSTRAP, input, CHEAP, SLOW, KEYS);

        Probe probe = new Probe();
        AtomicReference<String> violation = new AtomicReference<>();
        Map<String, AtomicLong> aggregatedOn = new ConcurrentHashMap<>();
        // "key,seq" of every update made on a worker: each must be forwarded, as an uncached store's.
        Set<String> onWorkers = ConcurrentHashMap.newKeySet();
        Map<String, AtomicInteger> inUse = new ConcurrentHashMap<>();
        Map<String, AtomicLong> lastSeq = new ConcurrentHashMap<>();
        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .process(
                        probe.supplier(
                                input,
                                r -> {},
                                r -> r.value().substring(r.value().indexOf(',') + 1)),
                        Named.as("probe"))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .aggregate(
                        () -> "0,0",
                        (key, value, agg) -> {
                            // agg is "lastSeq,count": this record must be the next of its key.
                            long seq = Long.parseLong(value.split(",")[0]);
                            String[] a = agg.split(",");
                            long last = Long.parseLong(a[0]);
                            if (seq != last + 1) {
                                violation.compareAndSet(null, "aggregate of " + key + " saw " + seq + " after " + last);
                            }
                            String role = Thread.currentThread().getName().startsWith("streamshard-worker-")
                                    ? "worker"
                                    : "StreamThread";
                            aggregatedOn
                                    .computeIfAbsent(
                                            value.substring(value.indexOf(',') + 1) + ":" + role, k -> new AtomicLong())
                                    .incrementAndGet();
                            if (role.equals("worker")) {
                                onWorkers.add(key + "," + seq);
                            }
                            if (value.endsWith(",B")) {
                                Probe.sleep(1); // the slow phase: the aggregate's task goes to the workers
                            }
                            return seq + "," + (Long.parseLong(a[1]) + 1);
                        },
                        Named.as("aggregate"),
                        Materialized.with(Serdes.String(), Serdes.String()))
                .toStream()
                .process(() -> new Downstream(violation, inUse, lastSeq), Named.as("downstream"))
                .to(output, Produced.with(Serdes.String(), Serdes.String()));
        Properties p = EnrichmentApp.config(BOOTSTRAP, "it" + suffix);
        p.put("streamshard.workers", "16");
        p.put("streamshard.parallel.processors", "probe,downstream");
        p.put("streamshard.inline.below.us", "100");
        // A small cap: records are timed when they finish, so fewer go out before the first switch.
        p.put("streamshard.max.inflight.per.task", "100");
        // Dirty entries of every key are still cached when the slow phase starts (all 50 keys fit).
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 10_000);
        p.put("state.dir", Files.createTempDirectory("streamshard-it").toString());
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            streams.start();
            Demo.waitForCommitted(BOOTSTRAP, "it" + suffix, input, TOTAL, Duration.ofMinutes(3), () -> {});
            // The probe's key may change, so the aggregate reads a repartition topic: 2 x 2 tasks.
            assertThat(StreamShard.explain(streams))
                    .hasSize(4)
                    .allSatisfy((task, d) -> assertThat(d).isEqualTo("parallel"));
        }
        assertThat(probe.violation.get()).isNull();
        assertThat(violation.get()).isNull();
        assertThat(aggregatedOn).as("aggregated per phase and thread").satisfies(m -> {
            assertThat(m.get("A:StreamThread"))
                    .as("cheap, inline, cached: " + m)
                    .isNotNull();
            assertThat(m.get("B:worker"))
                    .as("slow, on the workers, written through: " + m)
                    .isNotNull();
        });

        List<ConsumerRecord<String, String>> out = Demo.readAll(BOOTSTRAP, output, new StringDeserializer());
        Map<String, String> last = new LinkedHashMap<>();
        out.forEach(r -> last.put(r.key(), r.value()));
        Map<String, Integer> expected = new HashMap<>();
        for (int i = 0; i < TOTAL; i++) {
            expected.merge("k" + (i % KEYS), 1, Integer::sum);
        }
        assertThat(last).hasSize(KEYS);
        expected.forEach(
                (k, n) -> assertThat(last.get(k)).as("last update of " + k).isEqualTo(n + "," + n));
        Set<String> forwarded = new HashSet<>();
        out.forEach(r -> forwarded.add(r.key() + "," + r.value().split(",")[0]));
        assertThat(forwarded).as("every update made on a worker was forwarded").containsAll(onWorkers);
        // The cache merged updates on the StreamThread: fewer updates than records, as in stock.
        assertThat(out.size()).isLessThan(TOTAL);
    }

    /** Below the aggregate: each key's updates one at a time, their sequence numbers increasing. */
    static final class Downstream implements Processor<String, String, String, String> {
        private final AtomicReference<String> violation;
        private final Map<String, AtomicInteger> inUse;
        private final Map<String, AtomicLong> lastSeq;
        private ProcessorContext<String, String> context;

        Downstream(
                AtomicReference<String> violation, Map<String, AtomicInteger> inUse, Map<String, AtomicLong> lastSeq) {
            this.violation = violation;
            this.inUse = inUse;
            this.lastSeq = lastSeq;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(Record<String, String> record) {
            AtomicInteger held = inUse.computeIfAbsent(record.key(), k -> new AtomicInteger());
            if (held.incrementAndGet() != 1) {
                violation.compareAndSet(null, "update of " + record.key() + " on two threads");
            }
            long seq = Long.parseLong(record.value().split(",")[0]);
            long before =
                    lastSeq.computeIfAbsent(record.key(), k -> new AtomicLong()).getAndSet(seq);
            if (seq <= before) {
                violation.compareAndSet(null, "update of " + record.key() + ": " + seq + " after " + before);
            }
            held.decrementAndGet();
            context.forward(record);
        }
    }
}
