package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.Test;

/**
 * Interactive queries while workers write (issue 11): through {@code KafkaStreams.store(...)},
 * from two query threads, while the workers count 40,000 records over 20,000 keys (half of them
 * inserts): {@code get}, {@code range} and {@code all()} on a parallel task's RocksDB store and
 * on its in-memory store. No query may throw, no entry may come back without its value, and a
 * count read for a key never goes backwards. At the end both stores hold the exact counts.
 *
 * <p>The in-memory store's iterator copies the keys under the store's lock but (in Kafka Streams
 * itself) reads each value later without it, so under concurrent inserts it returned a key with a
 * null value: stock 4.3.1 failed this test 3 of 3 runs, the agent before its fix 3 of 5. The agent
 * now makes each iterator call under the store's lock ({@code StreamShardStores}).
 */
class InteractiveQueriesIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 40_000;
    private static final int KEYS = 20_000;

    @Test
    void queriesDuringParallelWritesNeverFailNorGoBackwards() throws Exception {
        String suffix = Inputs.suffix("iq");
        String input = "iq-in" + suffix;
        OrderProducer.createTopics(BOOTSTRAP, 2, List.of(input));
        StreamsBuilder b = new StreamsBuilder();
        var grouped = b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> {
                    Probe.sleep(0); // a DSL step on the workers; the counts below run there too
                    return v;
                })
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        grouped.count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("iq-mem"))
                .withKeySerde(Serdes.String())
                .withValueSerde(Serdes.Long()));
        grouped.count(Materialized.<String, Long>as(Stores.persistentKeyValueStore("iq-rocks"))
                .withKeySerde(Serdes.String())
                .withValueSerde(Serdes.Long()));
        String appId = "it" + suffix;
        Properties p = EnrichmentApp.config(BOOTSTRAP, appId);
        p.put("streamshard.workers", "16");
        p.put("streamshard.inline.below.us", "0");
        p.put("state.dir", Files.createTempDirectory("streamshard-iq").toString());
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            streams.start();
            long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
            while (streams.state() != KafkaStreams.State.RUNNING && System.nanoTime() < deadline) {
                sleep(50);
            }
            AtomicBoolean stop = new AtomicBoolean();
            List<String> problems = Collections.synchronizedList(new ArrayList<>());
            AtomicLong reads = new AtomicLong();
            List<Thread> queriers = new ArrayList<>();
            for (String store : List.of("iq-mem", "iq-rocks")) {
                Thread t = new Thread(() -> query(streams, store, stop, problems, reads), "iq-" + store);
                t.start();
                queriers.add(t);
            }
            Inputs.produce(BOOTSTRAP, RECORDS, i -> new ProducerRecord<>(input, "k" + (i % KEYS), Integer.toString(i)));
            Demo.waitForCommitted(BOOTSTRAP, appId, input, RECORDS, Duration.ofMinutes(3), () -> {});
            stop.set(true);
            for (Thread t : queriers) {
                t.join();
            }
            assertThat(problems).as("what the queries saw go wrong").isEmpty();
            assertThat(reads.get())
                    .as("query rounds that overlapped the writes")
                    .isGreaterThan(20);
            assertThat(StreamShard.explain(streams).values())
                    .allSatisfy(v -> assertThat(v).isEqualTo("parallel"));
            for (String store : List.of("iq-mem", "iq-rocks")) {
                ReadOnlyKeyValueStore<String, Long> s =
                        streams.store(StoreQueryParameters.fromNameAndType(store, QueryableStoreTypes.keyValueStore()));
                for (int k = 0; k < KEYS; k++) {
                    assertThat(s.get("k" + k)).as("%s k%d", store, k).isEqualTo((long) RECORDS / KEYS);
                }
            }
        }
    }

    /** Reads until told to stop: single keys, a range, the whole store (forward and reverse). */
    private static void query(
            KafkaStreams streams, String store, AtomicBoolean stop, List<String> problems, AtomicLong reads) {
        Map<String, Long> seen = new ConcurrentHashMap<>();
        Random random = new Random(store.hashCode());
        while (!stop.get() && problems.size() < 20) {
            try {
                ReadOnlyKeyValueStore<String, Long> s =
                        streams.store(StoreQueryParameters.fromNameAndType(store, QueryableStoreTypes.keyValueStore()));
                for (int i = 0; i < 50; i++) {
                    String k = "k" + random.nextInt(KEYS);
                    check(store, "get", k, s.get(k), seen, problems, true);
                }
                try (KeyValueIterator<String, Long> it = s.range("k1", "k3")) {
                    drain(store, "range", it, seen, problems);
                }
                try (KeyValueIterator<String, Long> it = s.all()) {
                    drain(store, "all", it, seen, problems);
                }
                try (KeyValueIterator<String, Long> it = s.reverseAll()) {
                    drain(store, "reverseAll", it, seen, problems);
                }
                try (KeyValueIterator<String, Long> it =
                        s.prefixScan("k7", Serdes.String().serializer())) {
                    drain(store, "prefixScan", it, seen, problems);
                }
                reads.incrementAndGet();
            } catch (InvalidStateStoreException e) {
                // rebalancing or not yet running: stock answers the same; try again
                sleep(10);
            } catch (RuntimeException e) {
                problems.add(store + ": " + e);
            }
        }
    }

    private static void drain(
            String store,
            String how,
            KeyValueIterator<String, Long> it,
            Map<String, Long> seen,
            List<String> problems) {
        while (it.hasNext()) {
            KeyValue<String, Long> kv = it.next();
            check(store, how, kv.key, kv.value, seen, problems, false);
        }
    }

    private static void check(
            String store,
            String how,
            String key,
            Long value,
            Map<String, Long> seen,
            List<String> problems,
            boolean mayBeAbsent) {
        if (value == null) {
            if (!mayBeAbsent || seen.containsKey(key)) {
                problems.add(store + " " + how + ": " + key + " came back without a value");
            }
            return;
        }
        Long before = seen.put(key, Math.max(value, seen.getOrDefault(key, 0L)));
        if (before != null && value < before) {
            problems.add(store + " " + how + ": " + key + " went back from " + before + " to " + value);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
