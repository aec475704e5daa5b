package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.StreamShard;
import io.streamshard.examples.MatrixRun.App;
import io.streamshard.examples.MatrixRun.StoreKind;
import io.streamshard.examples.MatrixRun.StoreRef;
import io.streamshard.examples.OutputCompare.Mode;
import io.streamshard.examples.OutputCompare.Rec;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.state.BuiltInDslStoreSuppliers;
import org.apache.kafka.streams.state.DslKeyValueParams;
import org.apache.kafka.streams.state.DslSessionParams;
import org.apache.kafka.streams.state.DslStoreSuppliers;
import org.apache.kafka.streams.state.DslWindowParams;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.junit.jupiter.api.Test;

/**
 * A foreign-key left join on the parallel path, stock and streamshard side by side on the same
 * inputs, in phases that each change either the left table or the right one (never both, so that
 * stock's output per primary key does not depend on timing): rows inserted, moved to another
 * foreign key, updated under the same one, deleted, re-inserted, left without a foreign key or
 * pointing at a product that does not exist; products inserted, updated and deleted. After each
 * phase both runs catch up. Checked:
 * <ul>
 *   <li>the join's output: per partition the same records, and per primary key the same values
 *       in the same order, as stock; its table's final content the same;</li>
 *   <li>a probe on the subscription store (the right side's state, written by the subscription
 *       receiver and scanned by the foreign-table joiner under the foreign key's bytes) sees no
 *       foreign key used by two threads at once, and sees both processors on the workers;</li>
 *   <li>every task of the streamshard run is parallel, and the slow steps (the left table's
 *       {@code mapValues} and the foreign-key extractor) ran on the workers.</li>
 * </ul>
 * The foreign-key extractor sleeps: it runs between the subscription sender's reset of its
 * per-record hash and the hash's computation, so without streamshard's per-thread memo
 * (StreamShardForeignKeys) records of different keys swap hashes and lose their results.
 */
class ForeignKeyJoinIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final Serde<String> S = Serdes.String();
    private static final int ORDERS = 400;
    private static final int PRODUCTS = 30;
    private static final Duration PHASE_TIMEOUT = Duration.ofMinutes(2);

    /** What the probe store saw in the streamshard run. */
    static final class Seen {
        final Map<String, AtomicInteger> inUse = new ConcurrentHashMap<>();
        final ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
        final AtomicLong writesOnWorkers = new AtomicLong();
        final AtomicLong scansOnWorkers = new AtomicLong();
        final AtomicLong elsewhere = new AtomicLong();
    }

    /** The streamshard run's (the only one with the probe store); set before it starts. */
    static volatile Seen seen;

    /**
     * In-memory DSL stores; the FK join's subscription store is wrapped by {@link ProbeStore}
     * (reporting to {@link #seen}: Kafka Streams 3.9 does not configure this class).
     */
    public static final class ProbeStores implements DslStoreSuppliers {
        private final DslStoreSuppliers inMemory = new BuiltInDslStoreSuppliers.InMemoryDslStoreSuppliers();

        @Override
        public KeyValueBytesStoreSupplier keyValueStore(DslKeyValueParams params) {
            KeyValueBytesStoreSupplier inner = inMemory.keyValueStore(params);
            if (!params.name().endsWith("-subscription-store")) {
                return inner;
            }
            Seen s = seen;
            return new KeyValueBytesStoreSupplier() {
                @Override
                public String name() {
                    return inner.name();
                }

                @Override
                public KeyValueStore<Bytes, byte[]> get() {
                    return new ProbeStore(inner.get(), s);
                }

                @Override
                public String metricsScope() {
                    return inner.metricsScope();
                }
            };
        }

        @Override
        public WindowBytesStoreSupplier windowStore(DslWindowParams params) {
            return inMemory.windowStore(params);
        }

        @Override
        public SessionBytesStoreSupplier sessionStore(DslSessionParams params) {
            return inMemory.sessionStore(params);
        }
    }

    /**
     * The subscription store, watched: each keyed call marks the foreign key (the key's prefix:
     * a 4-byte length, then the foreign key's bytes) in use for a millisecond, so two records of
     * one foreign key on two threads at once overlap there.
     */
    static final class ProbeStore extends WrappedStateStore<KeyValueStore<Bytes, byte[]>, Bytes, byte[]>
            implements KeyValueStore<Bytes, byte[]> {
        private final Seen seen;

        ProbeStore(KeyValueStore<Bytes, byte[]> inner, Seen seen) {
            super(inner);
            this.seen = seen;
        }

        private <T> T watched(Bytes key, boolean scan, Supplier<T> call) {
            int length = ByteBuffer.wrap(key.get()).getInt();
            String fk = new String(key.get(), 4, length, StandardCharsets.UTF_8);
            if (Thread.currentThread().getName().startsWith("streamshard-worker-")) {
                (scan ? seen.scansOnWorkers : seen.writesOnWorkers).incrementAndGet();
            } else {
                seen.elsewhere.incrementAndGet();
            }
            AtomicInteger held = seen.inUse.computeIfAbsent(fk, k -> new AtomicInteger());
            if (held.incrementAndGet() != 1) {
                seen.violations.add("foreign key " + fk + " used by two threads at once");
            }
            try {
                Probe.sleep(1);
                return call.get();
            } finally {
                held.decrementAndGet();
            }
        }

        @Override
        public void put(Bytes key, byte[] value) {
            watched(key, false, () -> {
                wrapped().put(key, value);
                return null;
            });
        }

        @Override
        public byte[] putIfAbsent(Bytes key, byte[] value) {
            return watched(key, false, () -> wrapped().putIfAbsent(key, value));
        }

        @Override
        public void putAll(List<KeyValue<Bytes, byte[]>> entries) {
            wrapped().putAll(entries);
        }

        @Override
        public byte[] delete(Bytes key) {
            return watched(key, false, () -> wrapped().delete(key));
        }

        @Override
        public byte[] get(Bytes key) {
            return watched(key, false, () -> wrapped().get(key));
        }

        @Override
        public KeyValueIterator<Bytes, byte[]> range(Bytes from, Bytes to) {
            return watched(from, true, () -> wrapped().range(from, to));
        }

        @Override
        public KeyValueIterator<Bytes, byte[]> all() {
            return wrapped().all();
        }

        @Override
        public long approximateNumEntries() {
            return wrapped().approximateNumEntries();
        }
    }

    /** The slow steps' calls on streamshard's workers and elsewhere, per run. */
    static final class Slow {
        final AtomicLong onWorkers = new AtomicLong();
        final AtomicLong elsewhere = new AtomicLong();

        <T> T note(T v, long millis) {
            Probe.sleep(millis);
            (Thread.currentThread().getName().startsWith("streamshard-worker-") ? onWorkers : elsewhere)
                    .incrementAndGet();
            return v;
        }
    }

    private static Topology topology(String suffix, String out, Slow slow) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> products = b.table(
                "fk-products" + suffix,
                Consumed.with(S, S).withName("products-src"),
                Materialized.as("products-store"));
        KTable<String, String> joined = b.table(
                        "fk-orders" + suffix,
                        Consumed.with(S, S).withName("orders-src"),
                        Materialized.as("orders-store"))
                .mapValues(v -> slow.note(v, 2), Named.as("slow"))
                .leftJoin(
                        products,
                        v -> {
                            String fk = slow.note(v.split(",")[1], 1);
                            return fk.equals("none") ? null : fk;
                        },
                        (o, p) -> o + "|" + p,
                        TableJoined.as("fk"),
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("fk-store")
                                .withKeySerde(S)
                                .withValueSerde(S));
        joined.toStream(Named.as("fk-stream")).to(out, Produced.with(S, S).withName("out-sink"));
        return b.build();
    }

    /** Left: {@code o<i> -> "<seq>,<fk>"} (null: delete); right: {@code f<i> -> "f<i>v<version>"}. */
    private static final List<Phase> PHASES = List.of(
            new Phase("products", i -> i < PRODUCTS - 5 ? "f" + i + "v1" : Phase.SKIP, PRODUCTS),
            new Phase("orders", i -> i % 17 == 0 ? "1,none" : "1,f" + i % PRODUCTS, ORDERS),
            new Phase(
                    "orders",
                    i -> switch (i % 5) {
                        case 0 -> null;
                        case 1 -> "2,f" + (i + 7) % PRODUCTS;
                        case 2 -> "2,f" + i % PRODUCTS;
                        default -> Phase.SKIP;
                    },
                    ORDERS),
            new Phase("products", i -> i % 3 == 0 ? "f" + i + "v2" : i % 7 == 1 ? null : Phase.SKIP, PRODUCTS),
            new Phase(
                    "orders",
                    i -> switch (i % 5) {
                        case 0 -> "3,f" + (i + 3) % PRODUCTS;
                        case 1 -> "3,f" + i % PRODUCTS;
                        case 3 -> "3,none";
                        default -> Phase.SKIP;
                    },
                    ORDERS));

    record Phase(String table, IntFunction<String> value, int keys) {
        static final String SKIP = "skip";

        String key(int i) {
            return (table.equals("orders") ? "o" : "f") + i;
        }
    }

    @Test
    void aForeignKeyLeftJoinRunsOnTheWorkersWithStocksOutputPerPrimaryKey() throws Exception {
        String suffix = Inputs.suffix("fk");
        String stockOut = "fk-out" + suffix + "-stock";
        String shardOut = "fk-out" + suffix + "-ss";
        List<String> inputs = List.of("fk-orders" + suffix, "fk-products" + suffix);
        List<String> topics = new ArrayList<>(inputs);
        topics.addAll(List.of(stockOut, shardOut));
        OrderProducer.createTopics(BOOTSTRAP, CoverageCatalog.PARTITIONS, topics);

        Slow stockSlow = new Slow();
        Slow shardSlow = new Slow();
        Properties ps = MatrixRun.config(BOOTSTRAP, "fk" + suffix + "-stock", false);
        Properties pss = MatrixRun.config(BOOTSTRAP, "fk" + suffix + "-ss", true);
        Seen probe = new Seen();
        seen = probe;
        ps.put("dsl.store.suppliers.class", BuiltInDslStoreSuppliers.InMemoryDslStoreSuppliers.class.getName());
        pss.put("dsl.store.suppliers.class", ProbeStores.class.getName());
        // Every record of the streamshard run to the workers, even the cheap ones.
        pss.put("streamshard.inline.below.us", "0");
        List<StoreRef> stores = List.of(new StoreRef("fk-store", StoreKind.KV));
        MatrixRun.Snapshot stockSnap;
        MatrixRun.Snapshot shardSnap;
        try (App stock = new App(topology(suffix, stockOut, stockSlow), ps);
                App shard = new App(topology(suffix, shardOut, shardSlow), pss)) {
            long ts = Feeds.base();
            for (Phase phase : PHASES) {
                long at = ts;
                String topic = "fk-" + phase.table() + suffix;
                List<ProducerRecord<String, String>> records = new ArrayList<>();
                for (int i = 0; i < phase.keys(); i++) {
                    String v = phase.value().apply(i);
                    if (!Phase.SKIP.equals(v)) {
                        records.add(new ProducerRecord<>(topic, null, at + i, phase.key(i), v));
                    }
                }
                Inputs.produce(BOOTSTRAP, records.size(), records::get);
                ts += 10_000;
                MatrixRun.awaitAll(
                        BOOTSTRAP,
                        PHASE_TIMEOUT,
                        List.of(
                                stock.completion(inputs, List.of(stockOut)),
                                shard.completion(inputs, List.of(shardOut))));
            }
            stockSnap = stock.snapshot(stores, new MatrixRun.Violations());
            shardSnap = shard.snapshot(stores, new MatrixRun.Violations());
            assertThat(StreamShard.explain(shard.streams))
                    .as("every task of the streamshard run")
                    .isNotEmpty()
                    .allSatisfy((task, d) -> assertThat(d).as(task).isEqualTo(Explain.PARALLEL));
        }

        List<Rec> stockRecs = OutputCompare.read(BOOTSTRAP, stockOut, false);
        List<Rec> shardRecs = OutputCompare.read(BOOTSTRAP, shardOut, false);
        assertThat(stockRecs).as("stock output").hasSizeGreaterThan(ORDERS);
        assertThat(stockRecs.stream().filter(r -> r.value() == null))
                .as("stock output has tombstones")
                .isNotEmpty();
        assertThat(stockRecs.stream().filter(r -> r.value() != null && r.value().endsWith("|null")))
                .as("stock output has rows without a product")
                .isNotEmpty();
        assertThat(OutputCompare.compare(Mode.PARALLEL, stockRecs, shardRecs))
                .as("per partition the same records, per primary key the same order")
                .isEmpty();
        assertThat(OutputCompare.compareStores(
                        "fk-store",
                        stockSnap.stores().get("fk-store"),
                        shardSnap.stores().get("fk-store")))
                .isEmpty();

        assertThat(probe.violations).as("foreign keys on two threads at once").isEmpty();
        assertThat(probe.writesOnWorkers.get())
                .as("subscription receiver on workers")
                .isPositive();
        assertThat(probe.scansOnWorkers.get())
                .as("foreign-table joiner on workers")
                .isPositive();
        assertThat(shardSlow.onWorkers.get())
                .as("slow steps on workers (%d elsewhere)", shardSlow.elsewhere.get())
                .isGreaterThan(shardSlow.elsewhere.get());
        assertThat(stockSlow.onWorkers.get()).isZero();
        System.out.printf(
                "fk: %d output records; probe: %d subscription writes and %d scans on workers, %d elsewhere; "
                        + "slow steps %d on workers, %d elsewhere%n",
                shardRecs.size(),
                seen.writesOnWorkers.get(),
                seen.scansOnWorkers.get(),
                seen.elsewhere.get(),
                shardSlow.onWorkers.get(),
                shardSlow.elsewhere.get());
        Set.of(stockSnap, shardSnap).forEach(s -> assertThat(s.violations()).isEmpty());
    }
}
