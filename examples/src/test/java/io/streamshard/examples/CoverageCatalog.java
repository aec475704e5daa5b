package io.streamshard.examples;

import static io.streamshard.examples.OutputCompare.Mode.EXACT;
import static io.streamshard.examples.OutputCompare.Mode.FINAL;
import static io.streamshard.examples.OutputCompare.Mode.PARALLEL;
import static io.streamshard.examples.OutputCompare.Mode.PARALLEL_NO_TS;

import io.streamshard.examples.Explain.NodeRule;
import io.streamshard.examples.Feeds.Feed;
import io.streamshard.examples.MatrixRun.StoreKind;
import io.streamshard.examples.MatrixRun.StoreRef;
import io.streamshard.examples.MatrixRun.Violations;
import io.streamshard.examples.OutputCompare.Mode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The topologies of the coverage matrix: each a plain Kafka Streams app with a slow step (a
 * {@code mapValues} that sleeps) above the operator it covers, its input feeds, its outputs with
 * how each must relate to stock ({@link Mode}), its queryable stores and which named nodes must be
 * parallel or in the serial region. Node names are set with {@code Named}/{@code withName} so
 * that the expectations are stable.
 */
final class CoverageCatalog {
    private CoverageCatalog() {}

    static final Serde<String> S = Serdes.String();
    static final Serde<Long> L = Serdes.Long();
    static final int PARTITIONS = 4;
    /** Sleep of the slow steps (ms); the crash test's child JVM sleeps longer so that its kill lands mid-stream. */
    static final int SLOW_MS = Integer.getInteger("matrix.slow.ms", 2);

    /** Topic names and per-run state handed to a topology: inputs shared by both runs, outputs per run. */
    static final class Names {
        final String inSuffix;
        final String outSuffix;
        final Violations violations;
        /** Records the slow steps ran on streamshard worker threads, and on any other thread. */
        final AtomicLong slowOnWorkers = new AtomicLong();

        final AtomicLong slowElsewhere = new AtomicLong();

        /** When the slow step started first and ended last (nanoTime): its rate, without start-up. */
        final AtomicLong firstSlowAt = new AtomicLong();

        final AtomicLong lastSlowAt = new AtomicLong();

        /** The slow step: sleeps, notes the thread kind. */
        String slowly(String v) {
            firstSlowAt.compareAndSet(0, System.nanoTime());
            Probe.sleep(SLOW_MS);
            (Thread.currentThread().getName().startsWith("streamshard-worker-") ? slowOnWorkers : slowElsewhere)
                    .incrementAndGet();
            lastSlowAt.accumulateAndGet(System.nanoTime(), Math::max);
            return v;
        }

        /** Slow-step calls per second from the first call's start to the last call's end. */
        double slowRate() {
            long n = slowOnWorkers.get() + slowElsewhere.get();
            long span = lastSlowAt.get() - firstSlowAt.get();
            return span <= 0 ? 0 : n * 1e9 / span;
        }

        Names(String inSuffix, String outSuffix, Violations violations) {
            this.inSuffix = inSuffix;
            this.outSuffix = outSuffix;
            this.violations = violations;
        }

        String in(String name) {
            return name + inSuffix;
        }

        String out(String name) {
            return name + inSuffix + outSuffix;
        }
    }

    record Out(String name, Mode mode, boolean longValues) {}

    record Case(
            String id,
            String title,
            List<Feed> feeds,
            List<String> globalFeeds,
            Function<Names, Topology> topology,
            List<Out> outputs,
            List<StoreRef> stores,
            String parallelProcessors,
            List<NodeRule> rules,
            List<String> topSerial,
            boolean allParallel) {
        @Override
        public String toString() {
            return id + " " + title;
        }

        /** The same case with other input feeds (the topology, outputs and rules unchanged). */
        Case withFeeds(List<Feed> other) {
            return new Case(
                    id,
                    title,
                    List.copyOf(other),
                    globalFeeds,
                    topology,
                    outputs,
                    stores,
                    parallelProcessors,
                    rules,
                    topSerial,
                    allParallel);
        }

        /** Topics the group consumes (not the global ones). */
        List<String> groupInputs(String suffix) {
            return feeds.stream()
                    .map(Feed::name)
                    .filter(n -> !globalFeeds.contains(n))
                    .map(n -> n + suffix)
                    .toList();
        }
    }

    /** Builder for a readable catalog. */
    static final class CaseBuilder {
        private final String id;
        private final String title;
        private final List<Feed> feeds = new ArrayList<>();
        private final List<String> globals = new ArrayList<>();
        private Function<Names, Topology> topology;
        private final List<Out> outputs = new ArrayList<>();
        private final List<StoreRef> stores = new ArrayList<>();
        private String parallelProcessors = "";
        private final List<NodeRule> rules = new ArrayList<>();
        private final List<String> topSerial = new ArrayList<>();
        private boolean allParallel;

        CaseBuilder(String id, String title) {
            this.id = id;
            this.title = title;
        }

        CaseBuilder feed(Feed f) {
            feeds.add(f);
            return this;
        }

        CaseBuilder globalFeed(Feed f) {
            feeds.add(f);
            globals.add(f.name());
            return this;
        }

        CaseBuilder topology(Function<Names, Topology> t) {
            topology = t;
            return this;
        }

        CaseBuilder out(String name, Mode mode) {
            outputs.add(new Out(name, mode, false));
            return this;
        }

        CaseBuilder outLong(String name, Mode mode) {
            outputs.add(new Out(name, mode, true));
            return this;
        }

        CaseBuilder store(String name, StoreKind kind) {
            stores.add(new StoreRef(name, kind));
            return this;
        }

        CaseBuilder optIn(String processors) {
            parallelProcessors = processors;
            return this;
        }

        CaseBuilder parallel(String... nodes) {
            for (String n : nodes) {
                rules.add(new NodeRule(n, false, true));
            }
            return this;
        }

        CaseBuilder serial(String... nodes) {
            for (String n : nodes) {
                rules.add(new NodeRule(n, false, false));
            }
            return this;
        }

        /** Every processor whose name starts with {@code prefix} is parallel ({@code true}) or serial. */
        CaseBuilder prefix(String prefix, boolean parallel) {
            rules.add(new NodeRule(prefix, true, parallel));
            return this;
        }

        /** Names explain must list as the top of the serial region (in the tasks that have them). */
        CaseBuilder topSerial(String... nodes) {
            topSerial.addAll(List.of(nodes));
            return this;
        }

        /** Every task's explain is "parallel". */
        CaseBuilder allParallel() {
            allParallel = true;
            return this;
        }

        Case build() {
            return new Case(
                    id,
                    title,
                    List.copyOf(feeds),
                    List.copyOf(globals),
                    topology,
                    List.copyOf(outputs),
                    List.copyOf(stores),
                    parallelProcessors,
                    List.copyOf(rules),
                    List.copyOf(topSerial),
                    allParallel);
        }
    }

    // ------------------------------------------------------------------------------ helpers

    static KStream<String, String> slow(Names n, KStream<String, String> s, String name) {
        return s.mapValues(n::slowly, Named.as(name));
    }

    static KStream<String, String> stream(StreamsBuilder b, Names n, String topic) {
        return b.stream(n.in(topic), Consumed.with(S, S).withName(topic + "-src"));
    }

    static KTable<String, String> table(StreamsBuilder b, Names n, String topic, String store) {
        return b.table(
                n.in(topic),
                Consumed.with(S, S).withName(topic + "-src"),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(store)
                        .withKeySerde(S)
                        .withValueSerde(S));
    }

    static Produced<String, String> produced(String name) {
        return Produced.with(S, S).withName(name + "-sink");
    }

    /** (window key, "start-end:value"): keeps the task's key, so the output partition is the task's. */
    static <V> KeyValue<String, String> windowed(Windowed<String> w, V value) {
        return KeyValue.pair(w.key(), w.window().start() + "-" + w.window().end() + ":" + value);
    }

    /** The far-future flush records (and anything else past {@code Feeds.FLUSH_AT}) are not windowed data. */
    static boolean isFlush(String key) {
        return key.startsWith("zz-flush-");
    }

    // ------------------------------------------------------------------------------ processors

    /**
     * Counts per key in a store and forwards each record with its count; a stream-time
     * punctuator (every 2 s of stream time) forwards every key's count ("p:<count>"). Records the
     * punctuator overlapping a record of its task (a punctuator must run on a drained task).
     */
    static final class PunctuatingCounter implements Processor<String, String, String, String> {
        private final Violations violations;
        private final AtomicInteger running = new AtomicInteger();
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, Long> counts;

        PunctuatingCounter(Violations violations) {
            this.violations = violations;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.counts = context.getStateStore("c07-counts");
            context.schedule(Duration.ofSeconds(2), PunctuationType.STREAM_TIME, ts -> {
                if (running.get() != 0) {
                    violations.add("stream-time punctuator of " + context.taskId() + " ran while " + running.get()
                            + " records of its task ran");
                }
                try (var it = counts.all()) {
                    while (it.hasNext()) {
                        KeyValue<String, Long> kv = it.next();
                        context.forward(new Record<>(kv.key, "p:" + kv.value, ts));
                    }
                }
            });
        }

        @Override
        public void process(Record<String, String> record) {
            running.incrementAndGet();
            try {
                Long c = counts.get(record.key());
                long next = c == null ? 1 : c + 1;
                counts.put(record.key(), next);
                context.forward(record.withValue(record.value() + "|c" + next));
            } finally {
                running.decrementAndGet();
            }
        }
    }

    /**
     * Not parallel-safe and not opted in: a sequence number over all records of its task (an
     * instance field) and a running total under a fixed key of its store, i.e. state across keys.
     */
    static final class GlobalSequencer implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, Long> totals;
        private long seq;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.totals = context.getStateStore("c08-totals");
        }

        @Override
        public void process(Record<String, String> record) {
            Long t = totals.get("__all");
            long total = (t == null ? 0 : t) + Feeds.n(record.value());
            totals.put("__all", total);
            seq++;
            context.forward(record.withValue(record.value() + "|g" + seq + "|t" + total));
        }
    }

    /** Opted in by class name: a running "count:sum" per key, in its store under the record's key only. */
    static final class KeyedSum implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, String> sums;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.sums = context.getStateStore("c09-sums");
        }

        @Override
        public void process(Record<String, String> record) {
            String old = sums.get(record.key());
            long count = 1;
            long sum = Feeds.n(record.value());
            if (old != null) {
                String[] parts = old.split(":");
                count += Long.parseLong(parts[0]);
                sum += Long.parseLong(parts[1]);
            }
            String agg = count + ":" + sum;
            sums.put(record.key(), agg);
            context.forward(record.withValue(record.value() + "|" + agg));
        }
    }

    /**
     * Not opted in: reads the tier table's store (connected to it by name) for its own key and for
     * a fixed other key, and numbers the task's records. Sharing the table's store makes the
     * table's source and the stream-table join that reads it serial too.
     */
    static final class TierAuditor implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, ValueAndTimestamp<String>> tiers;
        private long seq;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.tiers = context.getStateStore("c13-tiers-store");
        }

        @Override
        public void process(Record<String, String> record) {
            seq++;
            ValueAndTimestamp<String> own = tiers.get(record.key());
            ValueAndTimestamp<String> hot = tiers.get("k-0");
            context.forward(record.withValue(record.value() + "|a" + seq + "|own=" + (own == null ? null : own.value())
                    + "|k0=" + (hot == null ? null : hot.value())));
        }
    }

    // ------------------------------------------------------------------------------ the cases

    static List<Case> cases() {
        List<Case> all = new ArrayList<>();

        // 1. Stream-table enrichment, then an aggregate: all parallel.
        all.add(new CaseBuilder("c01", "slow mapValues -> leftJoin KTable -> groupByKey.aggregate")
                .feed(Feed.of("c01-tiers", 600, 200).timestamps(5, 40))
                .feed(Feed.of("c01-orders", 2400, 200))
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    KTable<String, String> tiers = table(b, n, "c01-tiers", "c01-tiers-store");
                    KStream<String, String> joined = slow(n, stream(b, n, "c01-orders"), "c01-slow")
                            .leftJoin(
                                    tiers,
                                    (v, t) -> v + "|tier=" + t,
                                    Joined.with(S, S, S).withName("c01-join"));
                    joined.to(n.out("c01-joined"), produced("c01-joined"));
                    joined.groupByKey(Grouped.with(S, S))
                            .aggregate(
                                    () -> "0:0",
                                    (k, v, agg) -> {
                                        String[] p = agg.split(":");
                                        return (Long.parseLong(p[0]) + 1) + ":" + (Long.parseLong(p[1]) + Feeds.n(v));
                                    },
                                    Named.as("c01-agg"),
                                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("c01-agg-store")
                                            .withKeySerde(S)
                                            .withValueSerde(S))
                            .toStream(Named.as("c01-agg-stream"))
                            .to(n.out("c01-totals"), produced("c01-totals"));
                    return b.build();
                })
                .out("c01-joined", PARALLEL)
                .out("c01-totals", PARALLEL)
                .store("c01-agg-store", StoreKind.KV)
                .store("c01-tiers-store", StoreKind.KV)
                .parallel("c01-slow", "c01-join", "c01-agg", "c01-tiers-src")
                .allParallel()
                .build());

        // 2. GlobalKTable join after a slow step: parallel.
        all.add(new CaseBuilder("c02", "slow mapValues -> join GlobalKTable")
                .globalFeed(Feed.of("c02-regions", 60, 30).keys(i -> "r" + (i % 30)))
                .feed(Feed.of("c02-orders", 2400, 200))
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    GlobalKTable<String, String> regions = b.globalTable(
                            n.in("c02-regions"),
                            Consumed.with(S, S).withName("c02-regions-src"),
                            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("c02-regions-store")
                                    .withKeySerde(S)
                                    .withValueSerde(S));
                    slow(n, stream(b, n, "c02-orders"), "c02-slow")
                            .join(
                                    regions,
                                    (k, v) -> "r" + (Feeds.n(v) % 40),
                                    (v, r) -> v + "|region=" + r,
                                    Named.as("c02-join"))
                            .to(n.out("c02-out"), produced("c02-out"));
                    return b.build();
                })
                .out("c02-out", PARALLEL)
                .store("c02-regions-store", StoreKind.KV)
                .parallel("c02-slow", "c02-join")
                .allParallel()
                .build());

        // 3. Table-table join (a slow mapValues on the left table): parallel.
        all.add(new CaseBuilder("c03", "KTable(slow mapValues) join KTable -> toStream")
                .feed(Feed.of("c03-left", 1600, 300))
                .feed(Feed.of("c03-right", 1200, 300).timestamps(5, 14))
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    KTable<String, String> left =
                            table(b, n, "c03-left", "c03-left-store").mapValues(n::slowly, Named.as("c03-slow"));
                    KTable<String, String> right = table(b, n, "c03-right", "c03-right-store");
                    left.join(
                                    right,
                                    (l, r) -> l + "|" + r,
                                    Named.as("c03-join"),
                                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("c03-join-store")
                                            .withKeySerde(S)
                                            .withValueSerde(S))
                            .toStream(Named.as("c03-stream"))
                            .to(n.out("c03-out"), produced("c03-out"));
                    return b.build();
                })
                .out("c03-out", PARALLEL)
                .store("c03-join-store", StoreKind.KV)
                .store("c03-left-store", StoreKind.KV)
                .store("c03-right-store", StoreKind.KV)
                .parallel("c03-slow", "c03-stream")
                .prefix("c03-join", true)
                .allParallel()
                .build());

        // 4. Windowed count + suppress: serial region from the count down.
        all.add(new CaseBuilder("c04", "slow mapValues -> windowed count -> suppress(untilWindowCloses)")
                .feed(Feed.of("c04-orders", 2400, 150)
                        .jitter(i -> i % 97 == 0 ? 2500 : i % 13 == 0 ? 250 : 0)
                        .flushed())
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    KTable<Windowed<String>, Long> counts = slow(n, stream(b, n, "c04-orders"), "c04-slow")
                            .groupByKey(Grouped.with(S, S))
                            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(1), Duration.ofMillis(300)))
                            .count(
                                    Named.as("c04-count"),
                                    Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("c04-win-store")
                                            .withKeySerde(S)
                                            .withValueSerde(L));
                    counts.toStream(Named.as("c04-updates-stream"))
                            .map(CoverageCatalog::windowed, Named.as("c04-updates-fmt"))
                            .to(n.out("c04-updates"), produced("c04-updates"));
                    counts.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())
                                    .withName("c04-suppress"))
                            .toStream(Named.as("c04-final-stream"))
                            .map(CoverageCatalog::windowed, Named.as("c04-final-fmt"))
                            .to(n.out("c04-final"), produced("c04-final"));
                    return b.build();
                })
                .out("c04-final", EXACT)
                .out("c04-updates", EXACT)
                .store("c04-win-store", StoreKind.WINDOW)
                .parallel("c04-slow", "c04-orders-src")
                .serial("c04-count", "c04-suppress", "c04-final-fmt", "c04-updates-fmt", "c04-final-sink")
                .topSerial("c04-count")
                .build());

        // 5. Stream-stream left join: serial region from the join windows down.
        all.add(new CaseBuilder("c05", "slow mapValues -> stream-stream leftJoin(JoinWindows)")
                .feed(Feed.of("c05-left", 2000, 200).flushed())
                .feed(Feed.of("c05-right", 1400, 200).timestamps(5, 14))
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    KStream<String, String> right = stream(b, n, "c05-right");
                    slow(n, stream(b, n, "c05-left"), "c05-slow")
                            .leftJoin(
                                    right,
                                    (l, r) -> l + "|" + r,
                                    JoinWindows.ofTimeDifferenceAndGrace(
                                            Duration.ofMillis(200), Duration.ofMillis(100)),
                                    StreamJoined.with(S, S, S)
                                            .withName("c05-join")
                                            .withStoreName("c05-join-store"))
                            .to(n.out("c05-out"), produced("c05-out"));
                    return b.build();
                })
                .out("c05-out", EXACT)
                .parallel("c05-slow")
                .prefix("c05-join", false)
                .serial("c05-out-sink")
                .topSerial("c05-join-this-windowed", "c05-join-other-windowed")
                .build());

        // 6. Session windows: serial region.
        all.add(new CaseBuilder("c06", "slow mapValues -> session-windowed count")
                .feed(Feed.of("c06-orders", 2400, 150)
                        .jitter(i -> i % 11 == 0 ? 150 : 0)
                        .flushed())
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    slow(n, stream(b, n, "c06-orders"), "c06-slow")
                            .groupByKey(Grouped.with(S, S))
                            .windowedBy(SessionWindows.ofInactivityGapAndGrace(
                                    Duration.ofMillis(400), Duration.ofMillis(100)))
                            .count(
                                    Named.as("c06-count"),
                                    Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("c06-session-store")
                                            .withKeySerde(S)
                                            .withValueSerde(L))
                            .toStream(Named.as("c06-stream"))
                            .map(CoverageCatalog::windowed, Named.as("c06-fmt"))
                            .to(n.out("c06-out"), produced("c06-out"));
                    return b.build();
                })
                .out("c06-out", EXACT)
                .store("c06-session-store", StoreKind.SESSION)
                .parallel("c06-slow")
                .serial("c06-count", "c06-stream", "c06-fmt")
                .topSerial("c06-count")
                .build());

        // 7. PAPI with a stream-time punctuator (opted in by name): parallel, punctuations on a drained task.
        all.add(new CaseBuilder("c07", "slow mapValues -> opted-in PAPI counter with a STREAM_TIME punctuator")
                .feed(Feed.of("c07-orders", 2400, 200).flushed())
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("c07-counts"), S, L));
                    slow(n, stream(b, n, "c07-orders"), "c07-slow")
                            .process(() -> new PunctuatingCounter(n.violations), Named.as("c07-punct"), "c07-counts")
                            .split(Named.as("c07-split-"))
                            .branch(
                                    (k, v) -> v.startsWith("p:"),
                                    Branched.withConsumer(
                                            s -> s.to(n.out("c07-punctuations"), produced("c07-punctuations")),
                                            "punct"))
                            .defaultBranch(Branched.withConsumer(
                                    s -> s.to(n.out("c07-records"), produced("c07-records")), "records"));
                    return b.build();
                })
                .out("c07-records", PARALLEL)
                .out("c07-punctuations", FINAL)
                .store("c07-counts", StoreKind.KV)
                .optIn("c07-punct")
                .parallel("c07-slow", "c07-punct", "c07-split-")
                .allParallel()
                .build());

        // 8. Unknown PAPI processor with state across keys: serial region from it down.
        all.add(new CaseBuilder("c08", "slow mapValues -> unknown PAPI processor (sequence across keys)")
                .feed(Feed.of("c08-orders", 2400, 200))
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("c08-totals"), S, L));
                    slow(n, stream(b, n, "c08-orders"), "c08-slow")
                            .process(GlobalSequencer::new, Named.as("c08-seq"), "c08-totals")
                            .mapValues(v -> v + "|after", Named.as("c08-after"))
                            .to(n.out("c08-out"), produced("c08-out"));
                    return b.build();
                })
                .out("c08-out", EXACT)
                .store("c08-totals", StoreKind.KV)
                .parallel("c08-slow")
                .serial("c08-seq", "c08-after", "c08-out-sink")
                .topSerial("c08-seq")
                .build());

        // 9. Opted-in PAPI processor (by class name) with a store under the record's key: parallel.
        all.add(new CaseBuilder("c09", "slow mapValues -> PAPI processor opted in by class name")
                .feed(Feed.of("c09-orders", 2400, 200))
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    b.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("c09-sums"), S, S));
                    slow(n, stream(b, n, "c09-orders"), "c09-slow")
                            .process(KeyedSum::new, Named.as("c09-sum"), "c09-sums")
                            .to(n.out("c09-out"), produced("c09-out"));
                    return b.build();
                })
                .out("c09-out", PARALLEL)
                .store("c09-sums", StoreKind.KV)
                .optIn(KeyedSum.class.getName())
                .parallel("c09-slow", "c09-sum")
                .allParallel()
                .build());

        // 10. Foreign-key join: parallel on both sides, and so is the slow step above it (the FK
        // response resolver reads the left table under the primary key, the same lane).
        all.add(new CaseBuilder("c10", "KTable(slow mapValues) FK-join KTable")
                .feed(Feed.of("c10-products", 120, 50).keys(i -> "p" + (i % 50)).timestamps(-100_000, 10))
                .feed(Feed.of("c10-orders", 1600, 400))
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    KTable<String, String> products = table(b, n, "c10-products", "c10-products-store");
                    table(b, n, "c10-orders", "c10-orders-store")
                            .mapValues(n::slowly, Named.as("c10-slow"))
                            .join(
                                    products,
                                    v -> "p" + (Feeds.n(v) % 60),
                                    (o, p) -> o + "|" + p,
                                    TableJoined.as("c10-fk"),
                                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("c10-fk-store")
                                            .withKeySerde(S)
                                            .withValueSerde(S))
                            .toStream(Named.as("c10-stream"))
                            .to(n.out("c10-out"), produced("c10-out"));
                    return b.build();
                })
                .out("c10-out", FINAL)
                .store("c10-fk-store", StoreKind.KV)
                .store("c10-orders-store", StoreKind.KV)
                .prefix("c10-fk", true)
                .parallel("c10-slow", "c10-stream")
                .allParallel()
                .build());

        // 14, 15. FK left join whose left rows move between foreign keys, are deleted, or have none;
        // the right table updated and with tombstones; then a groupBy + count. Skewed, then uniform keys.
        all.add(foreignKeyCase("c14", 0.8));
        all.add(foreignKeyCase("c15", 0.0));

        // 16, 17. Stream-table joins on a versioned table, with and without a grace period: the
        // join (and the versioned table's source) in the serial region, the slow step above it parallel.
        all.add(versionedJoinCase("c16", true));
        all.add(versionedJoinCase("c17", false));

        // 11. Key change + repartition, then aggregates: parallel.
        all.add(new CaseBuilder("c11", "slow mapValues -> groupBy(new key) -> count; KTable groupBy -> aggregate")
                .feed(Feed.of("c11-orders", 2400, 300))
                .feed(Feed.of("c11-profiles", 800, 250).timestamps(5, 30))
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    slow(n, stream(b, n, "c11-orders"), "c11-slow")
                            .groupBy((k, v) -> "g" + Math.floorMod(k.hashCode(), 37), Grouped.with("c11-regroup", S, S))
                            .count(
                                    Named.as("c11-count"),
                                    Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("c11-count-store")
                                            .withKeySerde(S)
                                            .withValueSerde(L))
                            .toStream(Named.as("c11-count-stream"))
                            .to(n.out("c11-counts"), Produced.with(S, L).withName("c11-counts-sink"));
                    table(b, n, "c11-profiles", "c11-profiles-store")
                            .groupBy(
                                    (k, v) -> KeyValue.pair("t" + Feeds.n(v) % 17, v), Grouped.with("c11-tgroup", S, S))
                            .aggregate(
                                    () -> 0L,
                                    (k, v, agg) -> agg + Feeds.n(v),
                                    (k, v, agg) -> agg - Feeds.n(v),
                                    Named.as("c11-tagg"),
                                    Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("c11-tagg-store")
                                            .withKeySerde(S)
                                            .withValueSerde(L))
                            .toStream(Named.as("c11-tagg-stream"))
                            .to(n.out("c11-tsums"), Produced.with(S, L).withName("c11-tsums-sink"));
                    return b.build();
                })
                .outLong("c11-counts", PARALLEL_NO_TS)
                .outLong("c11-tsums", FINAL)
                .store("c11-count-store", StoreKind.KV)
                .store("c11-tagg-store", StoreKind.KV)
                .parallel("c11-slow", "c11-count", "c11-tagg", "c11-count-stream")
                .allParallel()
                .build());

        // 12. split(): one arm windowed (serial region), the other plain (parallel).
        all.add(new CaseBuilder("c12", "slow mapValues -> split: windowed count arm / plain arm")
                .feed(Feed.of("c12-orders", 2400, 200)
                        .jitter(i -> i % 17 == 0 ? 120 : 0)
                        .flushed())
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    slow(n, stream(b, n, "c12-orders"), "c12-slow")
                            .split(Named.as("c12-split-"))
                            .branch(
                                    (k, v) -> Feeds.n(v) % 2 == 0,
                                    Branched.withConsumer(
                                            s -> s.groupByKey(Grouped.with(S, S))
                                                    .windowedBy(TimeWindows.ofSizeAndGrace(
                                                            Duration.ofMillis(500), Duration.ofMillis(100)))
                                                    .count(
                                                            Named.as("c12-wcount"),
                                                            Materialized.<String, Long, WindowStore<Bytes, byte[]>>as(
                                                                            "c12-win-store")
                                                                    .withKeySerde(S)
                                                                    .withValueSerde(L))
                                                    .toStream(Named.as("c12-wstream"))
                                                    .map(CoverageCatalog::windowed, Named.as("c12-wfmt"))
                                                    .to(n.out("c12-windowed"), produced("c12-windowed")),
                                            "even"))
                            .defaultBranch(Branched.withConsumer(
                                    s -> s.mapValues(v -> v + "|odd", Named.as("c12-plain"))
                                            .to(n.out("c12-plain"), produced("c12-plain")),
                                    "odd"));
                    return b.build();
                })
                .out("c12-windowed", EXACT)
                .out("c12-plain", PARALLEL)
                .store("c12-win-store", StoreKind.WINDOW)
                .parallel("c12-slow", "c12-split-", "c12-split-even", "c12-split-odd", "c12-plain", "c12-plain-sink")
                .serial("c12-wcount", "c12-wstream", "c12-wfmt", "c12-windowed-sink")
                .topSerial("c12-wcount")
                .build());

        // 13. A table store shared by an unknown processor: the join reading it is serial too.
        all.add(new CaseBuilder("c13", "slow mapValues -> leftJoin KTable whose store an unknown processor reads")
                .feed(Feed.of("c13-tiers", 600, 150).timestamps(5, 40))
                .feed(Feed.of("c13-orders", 2400, 150))
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    KTable<String, String> tiers = table(b, n, "c13-tiers", "c13-tiers-store");
                    KStream<String, String> orders = slow(n, stream(b, n, "c13-orders"), "c13-slow");
                    orders.leftJoin(
                                    tiers,
                                    (v, t) -> v + "|tier=" + t,
                                    Joined.with(S, S, S).withName("c13-join"))
                            .to(n.out("c13-joined"), produced("c13-joined"));
                    orders.process(TierAuditor::new, Named.as("c13-audit"), "c13-tiers-store")
                            .to(n.out("c13-audit"), produced("c13-audit"));
                    return b.build();
                })
                .out("c13-joined", EXACT)
                .out("c13-audit", EXACT)
                .store("c13-tiers-store", StoreKind.KV)
                .parallel("c13-slow")
                .serial("c13-join", "c13-audit")
                .topSerial("c13-join", "c13-audit")
                .build());

        return all;
    }

    /**
     * {@code orders} (a table whose rows change foreign key, one in 13 deleted, one in 11 without a
     * foreign key, some pointing at no product) left-joined by foreign key with {@code products}
     * (updated, one in 9 deleted), then counted per product. Stock's intermediate results depend
     * on how the subscription and response topics interleave, so the outputs compare as final
     * tables; {@code ForeignKeyJoinIT} checks the per-key order.
     */
    static Case foreignKeyCase(String id, double skew) {
        return new CaseBuilder(
                        id,
                        "KTable(slow mapValues) FK-leftJoin KTable (moves, deletes, no FK) -> groupBy count"
                                + (skew == 0 ? ", uniform keys" : ", skewed keys"))
                .feed(Feed.of(id + "-products", 300, 40)
                        .keys(i -> "p" + (i % 40))
                        .timestamps(-100_000, 10))
                .feed(Feed.of(id + "-orders", 2000, 300).skew(skew))
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    KTable<String, String> products = table(b, n, id + "-products", id + "-products-store")
                            .mapValues(v -> Feeds.n(v) % 9 == 0 ? null : v, Named.as(id + "-products-del"));
                    KTable<String, String> joined = table(b, n, id + "-orders", id + "-orders-store")
                            .mapValues(v -> Feeds.n(v) % 13 == 0 ? null : n.slowly(v), Named.as(id + "-slow"))
                            .leftJoin(
                                    products,
                                    v -> Feeds.n(v) % 11 == 0 ? null : "p" + (Feeds.n(v) % 45),
                                    (o, p) -> o + "|" + p,
                                    TableJoined.as(id + "-fk"),
                                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(id + "-fk-store")
                                            .withKeySerde(S)
                                            .withValueSerde(S));
                    joined.toStream(Named.as(id + "-stream")).to(n.out(id + "-out"), produced(id + "-out"));
                    joined.groupBy(
                                    (k, v) -> KeyValue.pair(v.substring(v.indexOf('|') + 1), v),
                                    Grouped.with(id + "-by-product", S, S))
                            .count(
                                    Named.as(id + "-count"),
                                    Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(id + "-counts")
                                            .withKeySerde(S)
                                            .withValueSerde(L))
                            .toStream(Named.as(id + "-count-stream"))
                            .to(n.out(id + "-counts"), Produced.with(S, L).withName(id + "-counts-sink"));
                    return b.build();
                })
                .out(id + "-out", FINAL)
                .outLong(id + "-counts", FINAL)
                .store(id + "-fk-store", StoreKind.KV)
                .store(id + "-counts", StoreKind.KV)
                .store(id + "-orders-store", StoreKind.KV)
                .prefix(id + "-fk", true)
                .parallel(id + "-slow", id + "-products-del", id + "-stream", id + "-count")
                .allParallel()
                .build();
    }

    /**
     * Orders through the slow step, joined with a versioned table of prices whose updates
     * interleave with them in time ({@code grace}: an inner join with a 500 ms grace period,
     * whose buffer is emitted by stream time; otherwise a left join). A versioned store's stream
     * time is store-wide, so the join is serial; its output must be stock's record for record.
     */
    static Case versionedJoinCase(String id, boolean grace) {
        return new CaseBuilder(
                        id,
                        "slow mapValues -> " + (grace ? "join" : "leftJoin") + " versioned KTable"
                                + (grace ? " with a grace period" : ""))
                .feed(Feed.of(id + "-prices", 400, 60).timestamps(1, 50))
                .feed(Feed.of(id + "-orders", 2000, 60)
                        .jitter(i -> i % 13 == 0 ? 40 : 0)
                        .flushed())
                .topology(n -> {
                    StreamsBuilder b = new StreamsBuilder();
                    KTable<String, String> prices = b.table(
                            n.in(id + "-prices"),
                            Consumed.with(S, S).withName(id + "-prices-src"),
                            Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore(
                                            id + "-prices-store", Duration.ofMinutes(5)))
                                    .withKeySerde(S)
                                    .withValueSerde(S));
                    KStream<String, String> orders = slow(n, stream(b, n, id + "-orders"), id + "-slow");
                    Joined<String, String, String> joined =
                            Joined.<String, String, String>with(S, S, S).withName(id + "-join");
                    (grace
                                    ? orders.join(
                                            prices,
                                            (o, p) -> o + "|" + p,
                                            joined.withGracePeriod(Duration.ofMillis(500)))
                                    : orders.leftJoin(prices, (o, p) -> o + "|" + p, joined))
                            .to(n.out(id + "-joined"), produced(id + "-joined"));
                    return b.build();
                })
                .out(id + "-joined", EXACT)
                .parallel(id + "-slow")
                .serial(id + "-prices-src", id + "-join", id + "-joined-sink")
                .topSerial(id + "-prices-src", id + "-join")
                .build();
    }

    static Case byId(String id) {
        return cases().stream()
                .filter(c -> c.id().equals(id))
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no case " + id));
    }
}
