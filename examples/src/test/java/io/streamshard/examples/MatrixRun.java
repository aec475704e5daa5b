package io.streamshard.examples;

import io.streamshard.StreamShard;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;

/**
 * One Kafka Streams instance of a stock-vs-streamshard comparison: started with the shared
 * settings (no record cache, 200 ms commits, own state directory), waited on until every input
 * and internal topic is committed to its end and the outputs stop growing, snapshotted (stores by
 * interactive query, explain, explainNodes) and closed.
 */
final class MatrixRun {
    private MatrixRun() {}

    /** Messages from processors of a run (checks that do not throw on the processing thread). */
    static final class Violations {
        final ConcurrentLinkedQueue<String> list = new ConcurrentLinkedQueue<>();

        void add(String what) {
            if (list.size() < 100) {
                list.add(what);
            }
        }
    }

    enum StoreKind {
        KV,
        WINDOW,
        SESSION
    }

    record StoreRef(String name, StoreKind kind) {}

    /** What the run looked like at its end, before close. */
    record Snapshot(
            String appId,
            boolean active,
            Map<String, String> explain,
            Map<String, Map<String, String>> explainNodes,
            String explainNodesMissing,
            Map<String, Map<String, String>> stores,
            List<String> violations,
            long millis) {}

    /** Creates a case's input and output topics (both runs') and produces its feeds. */
    static void prepare(
            String bootstrap,
            CoverageCatalog.Case c,
            String suffix,
            CoverageCatalog.Names stock,
            CoverageCatalog.Names shard)
            throws Exception {
        List<String> topics = new ArrayList<>();
        c.feeds().forEach(f -> topics.add(f.name() + suffix));
        for (CoverageCatalog.Out o : c.outputs()) {
            topics.add(stock.out(o.name()));
            topics.add(shard.out(o.name()));
        }
        OrderProducer.createTopics(bootstrap, CoverageCatalog.PARTITIONS, topics);
        Feeds.produceAll(bootstrap, c.feeds(), suffix, Feeds.base(), CoverageCatalog.PARTITIONS);
    }

    /** The settings both runs share; {@code streamshard=false} makes the instance fully stock. */
    static Properties config(String bootstrap, String appId, boolean streamshard) throws Exception {
        Properties p = EnrichmentApp.config(bootstrap, appId);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(
                StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG,
                Serdes.String().getClass().getName());
        p.put(
                StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG,
                Serdes.String().getClass().getName());
        p.put("state.dir", Files.createTempDirectory("streamshard-matrix").toString());
        // Stock emits a left/outer stream-stream join's unmatched records at most once per second
        // of wall-clock time (a throttle on an internal setting), so which records come out when
        // depends on timing even stock; without the throttle they come out by stream time alone.
        p.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX, 0L);
        p.put("streamshard.enabled", Boolean.toString(streamshard));
        p.put("streamshard.workers", System.getProperty("matrix.workers", "16"));
        return p;
    }

    static final class App implements AutoCloseable {
        final String appId;
        final KafkaStreams streams;
        final AtomicReference<Throwable> error = new AtomicReference<>();
        final long startedAt = System.nanoTime();
        long doneAt;

        App(Topology topology, Properties props) {
            this.appId = props.getProperty(StreamsConfig.APPLICATION_ID_CONFIG);
            this.streams = new KafkaStreams(topology, props);
            streams.setUncaughtExceptionHandler(e -> {
                error.compareAndSet(null, e);
                return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
            streams.start();
        }

        void checkHealthy() {
            if (error.get() != null) {
                throw new AssertionError(appId + " failed", error.get());
            }
        }

        void awaitDone(String bootstrap, Collection<String> inputs, Collection<String> outputs, Duration timeout)
                throws Exception {
            Completion c = completion(inputs, outputs);
            awaitAll(bootstrap, timeout, List.of(c));
            doneAt = c.doneAt;
        }

        /** For {@link #awaitAll}; {@link #done} takes its time afterwards. */
        Completion completion(Collection<String> inputs, Collection<String> outputs) {
            return new Completion(appId, inputs, outputs, this::checkHealthy);
        }

        void done(Completion c) {
            doneAt = c.doneAt;
        }

        Snapshot snapshot(List<StoreRef> stores, Violations violations) {
            Map<String, Map<String, String>> contents = new TreeMap<>();
            for (StoreRef s : stores) {
                contents.put(s.name(), query(s));
            }
            Map<String, Map<String, String>> nodes = null;
            String missing = null;
            try {
                nodes = Explain.nodes(streams);
            } catch (UnsupportedOperationException e) {
                missing = e.getMessage();
            }
            return new Snapshot(
                    appId,
                    StreamShard.active(streams),
                    StreamShard.explain(streams),
                    nodes,
                    missing,
                    contents,
                    List.copyOf(violations.list),
                    (doneAt - startedAt) / 1_000_000);
        }

        /**
         * The store's content per partition ({@code "p<partition>/<key>"}): tasks' stores may hold
         * the same key (state across keys, e.g. a running total under a fixed key).
         */
        private Map<String, String> query(StoreRef s) {
            Map<String, String> m = new TreeMap<>();
            for (int p = 0; p < CoverageCatalog.PARTITIONS; p++) {
                String prefix = "p" + p + "/";
                switch (s.kind()) {
                    case KV -> {
                        var store = streams.store(StoreQueryParameters.fromNameAndType(
                                        s.name(), QueryableStoreTypes.<Object, Object>keyValueStore())
                                .withPartition(p));
                        try (KeyValueIterator<Object, Object> it = store.all()) {
                            it.forEachRemaining(kv -> m.put(prefix + kv.key, String.valueOf(kv.value)));
                        }
                    }
                    case WINDOW -> {
                        var store = streams.store(StoreQueryParameters.fromNameAndType(
                                        s.name(), QueryableStoreTypes.<Object, Object>windowStore())
                                .withPartition(p));
                        try (KeyValueIterator<Windowed<Object>, Object> it = store.all()) {
                            it.forEachRemaining(kv -> m.put(prefix + windowed(kv), String.valueOf(kv.value)));
                        }
                    }
                    case SESSION -> {
                        var store = streams.store(StoreQueryParameters.fromNameAndType(
                                        s.name(), QueryableStoreTypes.<Object, Object>sessionStore())
                                .withPartition(p));
                        try (KeyValueIterator<Windowed<Object>, Object> it = store.fetch(null, null)) {
                            it.forEachRemaining(kv -> m.put(prefix + windowed(kv), String.valueOf(kv.value)));
                        }
                    }
                }
            }
            return m;
        }

        private static String windowed(KeyValue<Windowed<Object>, Object> kv) {
            return kv.key.key() + "@" + kv.key.window().start() + "-"
                    + kv.key.window().end();
        }

        @Override
        public void close() {
            streams.close(Duration.ofSeconds(60));
        }
    }

    /**
     * Whether group {@code appId} is done: it has committed every partition of {@code inputs}
     * and of its own internal topics (repartition, FK subscription/response) up to the end, and
     * the end offsets of {@code outputs} did not move for two polls after that.
     */
    static final class Completion {
        final String appId;
        final Collection<String> inputs;
        final Collection<String> outputs;
        final Runnable check;
        private Map<TopicPartition, Long> lastOutputs;
        private int stable;
        String progress = "not polled";
        long doneAt;

        Completion(String appId, Collection<String> inputs, Collection<String> outputs, Runnable check) {
            this.appId = appId;
            this.inputs = inputs;
            this.outputs = outputs;
            this.check = check;
        }

        boolean poll(Admin admin) throws Exception {
            if (doneAt != 0) {
                return true;
            }
            check.run();
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(appId)
                    .partitionsToOffsetAndMetadata()
                    .get();
            List<String> sources = new ArrayList<>(inputs);
            for (String t : admin.listTopics().names().get()) {
                if (t.startsWith(appId + "-") && !t.endsWith("-changelog")) {
                    sources.add(t);
                }
            }
            Map<TopicPartition, Long> ends = endOffsets(admin, sources);
            long behind = 0;
            for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                OffsetAndMetadata c = committed.get(e.getKey());
                behind += e.getValue() - (c == null ? 0 : c.offset());
            }
            Map<TopicPartition, Long> outs = endOffsets(admin, outputs);
            if (behind == 0 && outs.equals(lastOutputs)) {
                stable++;
            } else {
                stable = 0;
            }
            lastOutputs = outs;
            progress = appId + ": " + behind + " records behind over " + sources;
            if (stable >= 2) {
                doneAt = System.nanoTime();
            }
            return doneAt != 0;
        }
    }

    /** Polls every 250 ms until all are done. */
    static void awaitAll(String bootstrap, Duration timeout, List<Completion> all) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Admin admin = Admin.create(p)) {
            while (System.nanoTime() < deadline) {
                boolean done = true;
                for (Completion c : all) {
                    done &= c.poll(admin);
                }
                if (done) {
                    return;
                }
                Thread.sleep(250);
            }
        }
        throw new AssertionError("not finished within " + timeout + ": "
                + all.stream().filter(c -> c.doneAt == 0).map(c -> c.progress).toList());
    }

    static void awaitDone(
            String bootstrap,
            String appId,
            Collection<String> inputs,
            Collection<String> outputs,
            Duration timeout,
            Runnable check)
            throws Exception {
        awaitAll(bootstrap, timeout, List.of(new Completion(appId, inputs, outputs, check)));
    }

    /** Offsets {@code group} has committed, summed over the partitions of {@code topics}. */
    static long committed(Admin admin, String group, Collection<String> topics) throws Exception {
        return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().entrySet().stream()
                .filter(e -> topics.contains(e.getKey().topic()) && e.getValue() != null)
                .mapToLong(e -> e.getValue().offset())
                .sum();
    }

    static Map<TopicPartition, Long> endOffsets(Admin admin, Collection<String> topics) throws Exception {
        if (topics.isEmpty()) {
            return Map.of();
        }
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        admin.describeTopics(Set.copyOf(topics))
                .allTopicNames()
                .get()
                .forEach((t, d) -> d.partitions()
                        .forEach(pi -> latest.put(new TopicPartition(t, pi.partition()), OffsetSpec.latest())));
        return admin.listOffsets(latest).all().get().entrySet().stream()
                .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    }
}
