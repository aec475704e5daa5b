package org.apache.kafka.streams.processor.internals;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.classify.Classification;
import io.streamshard.classify.Classification.Mode;
import io.streamshard.classify.NodeClassifier;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
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
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.ValueTransformerWithKey;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.Test;

/**
 * The classifier on topologies built with {@link StreamsBuilder} (no broker): every rule, with
 * its reason, on the real {@code ProcessorTopology} Kafka Streams builds for a task.
 */
class TopologyInspectorTest {
    private static final Consumed<String, String> STRINGS = Consumed.with(Serdes.String(), Serdes.String());

    /** Builds sub-topology {@code id} the way a task gets it (caching off, as the agent sets it). */
    static Classification classify(Topology topology, int id, boolean caching, String... optedIn) throws Exception {
        return classify(topology, id, caching, List.of(optedIn), List.of());
    }

    static Classification classify(
            Topology topology, int id, boolean caching, List<String> optedIn, List<String> serial) throws Exception {
        Field f = Topology.class.getDeclaredField("internalTopologyBuilder");
        f.setAccessible(true);
        InternalTopologyBuilder builder = (InternalTopologyBuilder) f.get(topology);
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "classify");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1");
        if (!caching) {
            p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        }
        builder.rewriteTopology(new StreamsConfig(p));
        return TopologyInspector.classify(builder.buildSubtopology(id), optedIn, serial, null);
    }

    static Classification classify(Topology topology, int id, String... optedIn) throws Exception {
        return classify(topology, id, false, optedIn);
    }

    private static KStream<String, String> slowStep(StreamsBuilder b) {
        return b.stream("orders", STRINGS).mapValues(v -> v + "!", Named.as("slow"));
    }

    @Test
    void streamTableEnrichmentJoinAndAggregateAreAllParallel() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> customers = b.table("customers", STRINGS);
        slowStep(b)
                .leftJoin(customers, (o, c) -> o + "," + c, Joined.as("join"))
                .groupByKey()
                .count(Materialized.as("counts"))
                .toStream()
                .to("out");
        Classification c = classify(b.build(), 0);
        assertThat(c.mode()).isEqualTo(Mode.PARALLEL);
        assertThat(c.summary()).isEqualTo("parallel");
        assertThat(c.nodes())
                .allSatisfy((n, d) -> assertThat(d.parallel()).as(n).isTrue());
    }

    @Test
    void windowedCountAndSuppressAfterASlowStepAreTheSerialRegion() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        slowStep(b)
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                .count(Named.as("wcount"))
                .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())
                        .withName("suppress"))
                .toStream(Named.as("tostream"))
                .to("out", Produced.as("sink"));
        Classification c = classify(b.build(), 0);
        assertThat(c.mode()).isEqualTo(Mode.SPLIT);
        assertThat(c.nodes().get("slow").toString()).isEqualTo("parallel");
        assertThat(c.nodes().get("wcount").toString()).startsWith("serial region: window store");
        assertThat(c.nodes().get("suppress").toString()).startsWith("serial region: ");
        assertThat(c.nodes().get("sink").toString()).isEqualTo("serial region: below serial node tostream");
        assertThat(c.serialRoots()).containsExactly("wcount");
        assertThat(c.summary()).isEqualTo("parallel, serial region: wcount");
    }

    @Test
    void streamStreamJoinIsSerial() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> other = b.stream("payments", STRINGS);
        slowStep(b)
                .join(other, (x, y) -> x + y, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(1)))
                .to("out");
        Classification c = classify(b.build(), 0);
        assertThat(c.mode()).isEqualTo(Mode.SPLIT);
        assertThat(c.nodes().get("slow").parallel()).isTrue();
        assertThat(c.serialNodes())
                .isNotEmpty()
                .allSatisfy(n -> assertThat(c.nodes().get(n).reason())
                        .containsAnyOf("stream-stream join", "window store", "below serial node", "shares store"));
    }

    @Test
    void sessionWindowsAreSerial() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        slowStep(b)
                .groupByKey()
                .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMinutes(1)))
                .count(Named.as("scount"))
                .toStream()
                .to("out");
        Classification c = classify(b.build(), 0);
        assertThat(c.nodes().get("scount").toString()).startsWith("serial region: session store");
    }

    static final class Unknown implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(Record<String, String> record) {
            context.forward(record);
        }
    }

    @Test
    void unknownProcessorAfterASlowStepIsSerialWithAHint() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        slowStep(b).process(Unknown::new, Named.as("unknown")).to("out");
        Classification c = classify(b.build(), 0);
        assertThat(c.mode()).isEqualTo(Mode.SPLIT);
        assertThat(c.nodes().get("unknown").reason())
                .contains(Unknown.class.getName())
                .contains("is not known to be parallel-safe")
                .contains("streamshard.parallel.processors");
    }

    @Test
    void processorsAreOptedInByClassNameOrNodeName() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(
                Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("kv"), Serdes.String(), Serdes.String()));
        slowStep(b).process(Unknown::new, Named.as("unknown"), "kv").to("out");
        Topology t = b.build();
        assertThat(classify(t, 0, Unknown.class.getName()).mode()).isEqualTo(Mode.PARALLEL);
        assertThat(classify(t, 0, "unknown").mode()).isEqualTo(Mode.PARALLEL);
        assertThat(classify(t, 0, "com.example.Other").mode()).isEqualTo(Mode.SPLIT);
    }

    @Test
    void aNodeListedSerialIsSerialWithEverythingBelowIt() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(
                Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("kv"), Serdes.String(), Serdes.String()));
        slowStep(b)
                .mapValues(v -> v, Named.as("stateful-lambda"))
                .process(Unknown::new, Named.as("unknown"), "kv")
                .to("out", Produced.as("sink"));
        Topology t = b.build();
        Classification c = classify(t, 0, false, List.of("unknown"), List.of("stateful-lambda"));
        assertThat(c.nodes().get("slow").parallel()).isTrue();
        assertThat(c.nodes().get("stateful-lambda").reason()).isEqualTo("listed in streamshard.serial.processors");
        assertThat(c.nodes().get("unknown").reason()).isEqualTo("below serial node stateful-lambda");
        assertThat(c.nodes().get("sink").parallel()).isFalse();
        // By class name, and over an opt-in.
        Classification byClass =
                classify(t, 0, false, List.of(Unknown.class.getName()), List.of(Unknown.class.getName()));
        assertThat(byClass.nodes().get("unknown").reason()).isEqualTo("listed in streamshard.serial.processors");
        assertThat(byClass.nodes().get("stateful-lambda").parallel()).isTrue();
    }

    @Test
    void aTaskWithOnlyItsSourcesParallelRunsStock() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("orders", STRINGS)
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                .count()
                .toStream()
                .to("out");
        Classification c = classify(b.build(), 0);
        assertThat(c.mode()).isEqualTo(Mode.STOCK);
        assertThat(c.summary())
                .startsWith("serial: nothing but the sources would run parallel")
                .contains("window store");
        assertThat(c.nodes())
                .allSatisfy((n, d) -> assertThat(d.parallel()).as(n).isFalse());
    }

    /** The FK join's processors by their node names under {@code TableJoined.as(name)}, with their classes. */
    private static final Map<String, String> FK_NODES = Map.of(
            "-subscription-registration-processor", "SubscriptionSendProcessorSupplier$UnbindChangeProcessor",
            "-subscription-receive", "SubscriptionReceiveProcessorSupplier$1",
            "-subscription-join-foreign", "SubscriptionJoinProcessorSupplier$1",
            "-foreign-join-subscription", "ForeignTableJoinProcessorSupplier$KTableKTableJoinProcessor",
            "-subscription-response-resolver", "ResponseJoinProcessorSupplier$1");

    /** Every node of every sub-topology of {@code t}: its decision. */
    private static Map<String, io.streamshard.classify.NodeDecision> allNodes(Topology t) throws Exception {
        Map<String, io.streamshard.classify.NodeDecision> all = new java.util.TreeMap<>();
        for (int id : internal(t).nodeGroups().keySet()) {
            all.putAll(classify(t, id).nodes());
        }
        return all;
    }

    /** The processor class of each node of {@code t} (sources and sinks have none). */
    private static Map<String, String> processorClasses(Topology t) throws Exception {
        Map<String, String> out = new java.util.TreeMap<>();
        InternalTopologyBuilder builder = internal(t);
        for (int id : builder.nodeGroups().keySet()) {
            for (var n : TopologyInspector.nodes(builder.buildSubtopology(id), null)) {
                if (n.processorClass() != null) {
                    out.put(n.name(), n.processorClass());
                }
            }
        }
        return out;
    }

    /** {@code orders} joined with {@code products} by foreign key (TableJoined "fk"), to "out". */
    private static <KO> void joinByForeignKey(
            KTable<String, String> orders,
            KTable<KO, String> products,
            java.util.function.Function<String, KO> foreignKey) {
        orders.join(products, foreignKey, (o, p) -> o + p, org.apache.kafka.streams.kstream.TableJoined.as("fk"))
                .toStream()
                .to("out");
    }

    @Test
    void foreignKeyJoinRunsParallelWithTheSlowStepAboveIt() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> orders = b.table("orders", STRINGS, Materialized.as("orders-store"));
        KTable<String, String> products = b.table("products", STRINGS, Materialized.as("products-store"));
        orders.mapValues(v -> v + "!", Named.as("slow"))
                .join(
                        products,
                        v -> v.split(",")[0],
                        (o, p) -> o + p,
                        org.apache.kafka.streams.kstream.TableJoined.as("fk"),
                        Materialized.as("fk-store"))
                .groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), v), Grouped.as("regroup"))
                .count(Named.as("count"), Materialized.as("counts"))
                .toStream()
                .to("out");
        Topology t = b.build();
        for (int id : internal(t).nodeGroups().keySet()) {
            Classification c = classify(t, id);
            assertThat(c.mode()).as("sub-topology %d: %s", id, c.nodes()).isEqualTo(Mode.PARALLEL);
        }
        // (after classify: it completes the topology's optimization)
        Map<String, String> classes = processorClasses(t);
        FK_NODES.forEach((suffix, cls) -> assertThat(classes.get("fk" + suffix))
                .as("fk" + suffix)
                .isEqualTo("org.apache.kafka.streams.kstream.internals.foreignkeyjoin." + cls));
        Map<String, io.streamshard.classify.NodeDecision> all = allNodes(t);
        assertThat(all.get("slow").parallel()).isTrue();
        assertThat(all.get("fk-result").parallel()).isTrue();
        FK_NODES.keySet()
                .forEach(s ->
                        assertThat(all.get("fk" + s).parallel()).as("fk" + s).isTrue());
    }

    @Test
    void foreignKeyLeftJoinRunsParallel() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> orders = b.table("orders", STRINGS);
        KTable<String, String> products = b.table("products", STRINGS);
        orders.leftJoin(
                        products,
                        v -> v.isEmpty() ? null : v.split(",")[0],
                        (o, p) -> o + p,
                        org.apache.kafka.streams.kstream.TableJoined.as("fk"))
                .toStream()
                .to("out");
        Topology t = b.build();
        Map<String, io.streamshard.classify.NodeDecision> all = allNodes(t);
        FK_NODES.keySet()
                .forEach(s -> assertThat(all.get("fk" + s).parallel())
                        .as("fk%s: %s", s, all.get("fk" + s))
                        .isTrue());
    }

    @Test
    void aForeignKeyJoinOnARepartitionedOrLongKeyedRightTableIsParallel() throws Exception {
        // The right table reads its topic's keys as raw bytes, then re-keys them as strings: the
        // repartition gives its table a source with the String serde, the subscriptions' format.
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> orders = b.table("orders", STRINGS);
        KTable<String, String> products = b.stream("products", Consumed.with(Serdes.ByteArray(), Serdes.String()))
                .selectKey((k, v) -> new String(k, java.nio.charset.StandardCharsets.UTF_8), Named.as("rekey"))
                .toTable(Named.as("products-table"), Materialized.with(Serdes.String(), Serdes.String()));
        joinByForeignKey(orders, products, v -> v.split(",")[0]);
        Topology t = b.build();
        Map<String, io.streamshard.classify.NodeDecision> all = allNodes(t);
        assertThat(all.get("fk-foreign-join-subscription").parallel())
                .as("%s", all)
                .isTrue();

        StreamsBuilder b2 = new StreamsBuilder();
        KTable<String, String> orders2 = b2.table("orders", STRINGS);
        KTable<Long, String> products2 = b2.table("products", Consumed.with(Serdes.Long(), Serdes.String()));
        joinByForeignKey(orders2, products2, v -> Long.parseLong(v.split(",")[0]));
        Map<String, io.streamshard.classify.NodeDecision> all2 = allNodes(b2.build());
        assertThat(all2.get("fk-foreign-join-subscription").parallel()).isTrue();
        assertThat(all2.get("fk-subscription-receive").parallel()).isTrue();
    }

    @Test
    void aForeignKeyJoinWithASerdeOfUnknownBytesIsSerialOnItsRightSide() throws Exception {
        // A foreign-key serde streamshard does not know to be byte-stable (a schema-registry serde
        // writes a schema id per subject): the subscription store's key prefix, the subscription
        // topic's key and the right table's key may differ for one foreign key.
        org.apache.kafka.common.serialization.Serde<String> custom =
                Serdes.serdeFrom(new StringSerializer() {}, new StringDeserializer() {});
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> orders = b.table("orders", STRINGS);
        KTable<String, String> products = b.table("products", Consumed.with(custom, Serdes.String()));
        joinByForeignKey(orders, products, v -> v.split(",")[0]);
        Map<String, io.streamshard.classify.NodeDecision> all = allNodes(b.build());
        for (String s : List.of("-subscription-receive", "-foreign-join-subscription", "-subscription-join-foreign")) {
            assertThat(all.get("fk" + s).parallel()).as("fk" + s).isFalse();
        }
        assertThat(all.get("fk-subscription-receive").reason())
                .contains("share store fk-subscription-store")
                .contains("may encode equal keys to different bytes");
        // The left side does not depend on it.
        assertThat(all.get("fk-subscription-registration-processor").parallel()).isTrue();
        assertThat(all.get("fk-subscription-response-resolver").parallel()).isTrue();
    }

    @Test
    void aForeignKeyJoinOnAVersionedRightTableIsSerialOnItsRightSide() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> orders = b.table("orders", STRINGS);
        KTable<String, String> products = b.table(
                "products",
                STRINGS,
                Materialized.as(Stores.persistentVersionedKeyValueStore("products-v", Duration.ofMinutes(5))));
        joinByForeignKey(orders, products, v -> v.split(",")[0]);
        Map<String, io.streamshard.classify.NodeDecision> all = allNodes(b.build());
        assertThat(all.get("fk-subscription-join-foreign").reason()).contains("versioned store products-v");
        assertThat(all.get("fk-foreign-join-subscription").parallel()).isFalse();
        assertThat(all.get("fk-subscription-registration-processor").parallel()).isTrue();
    }

    @Test
    void aForeignKeyJoinProcessorStreamshardDoesNotKnowIsSerial() {
        var source = new io.streamshard.classify.NodeInfo(
                "src",
                io.streamshard.classify.NodeInfo.Kind.SOURCE,
                null,
                List.of("x"),
                Set.of(),
                false,
                false,
                "org.apache.kafka.common.serialization.StringDeserializer");
        var unknown = new io.streamshard.classify.NodeInfo(
                "x",
                io.streamshard.classify.NodeInfo.Kind.PROCESSOR,
                "org.apache.kafka.streams.kstream.internals.foreignkeyjoin.SubscriptionReceiveProcessorSupplier$2",
                List.of(),
                Set.of(),
                false,
                false,
                null);
        Classification c = NodeClassifier.classify(List.of(source, unknown), List.of(), List.of(), List.of());
        assertThat(c.nodes().get("x").reason())
                .isEqualTo("foreign-key join processor SubscriptionReceiveProcessorSupplier$2 is not known to be "
                        + "parallel-safe");
    }

    private static InternalTopologyBuilder internal(Topology t) throws Exception {
        Field f = Topology.class.getDeclaredField("internalTopologyBuilder");
        f.setAccessible(true);
        return (InternalTopologyBuilder) f.get(t);
    }

    @Test
    void groupByWithAKeyChangeIsParallelOnBothSidesOfTheRepartition() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        slowStep(b)
                .selectKey((k, v) -> v.substring(0, 1), Named.as("rekey"))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .aggregate(() -> "", (k, v, a) -> a + v, Named.as("agg"), Materialized.as("agg-store"))
                .toStream()
                .to("out");
        Topology t = b.build();
        assertThat(classify(t, 0).mode()).isEqualTo(Mode.PARALLEL);
        assertThat(classify(t, 1).mode()).isEqualTo(Mode.PARALLEL);
    }

    @Test
    void tableGroupByAggregateIsParallel() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        b.table("orders", STRINGS, Materialized.as("orders-store"))
                .groupBy((k, v) -> KeyValue.pair(v, k), Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("per-value"))
                .toStream()
                .to("out");
        Topology t = b.build();
        assertThat(classify(t, 0).mode()).isEqualTo(Mode.PARALLEL);
        assertThat(classify(t, 1).mode()).isEqualTo(Mode.PARALLEL);
    }

    @Test
    void tableTableJoinsAndGlobalTableJoinsAreParallel() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> a = b.table("a", STRINGS, Materialized.as("a-store"));
        KTable<String, String> c = b.table("c", STRINGS, Materialized.as("c-store"));
        a.join(c, (x, y) -> x + y).toStream().to("inner");
        a.leftJoin(c, (x, y) -> x + y).toStream().to("left");
        a.outerJoin(c, (x, y) -> x + y).toStream().to("outer");
        GlobalKTable<String, String> g = b.globalTable("g", STRINGS);
        b.stream("s", STRINGS).join(g, (k, v) -> k, (v, gv) -> v + gv).to("sg");
        b.stream("s2", STRINGS).leftJoin(g, (k, v) -> k, (v, gv) -> v + gv).to("sg2");
        Topology t = b.build();
        for (int id : internal(t).nodeGroups().keySet()) {
            Classification cl = classify(t, id);
            assertThat(cl.mode()).as("sub-topology %s: %s", id, cl.lines()).isEqualTo(Mode.PARALLEL);
        }
    }

    @Test
    void toTableAndTableMapValuesAreParallel() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        slowStep(b)
                .toTable(Materialized.as("tt"))
                .mapValues(v -> v + "?")
                .filter((k, v) -> true)
                .toStream()
                .to("out");
        assertThat(classify(b.build(), 0).mode()).isEqualTo(Mode.PARALLEL);
    }

    @Test
    void streamTableJoinWithAGracePeriodIsSerial() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> customers = b.table(
                "customers",
                STRINGS,
                Materialized.<String, String>as(
                                Stores.persistentVersionedKeyValueStore("versioned", Duration.ofMinutes(5)))
                        .withKeySerde(Serdes.String())
                        .withValueSerde(Serdes.String()));
        slowStep(b)
                .join(
                        customers,
                        (o, c) -> o + c,
                        Joined.<String, String, String>with(Serdes.String(), Serdes.String(), Serdes.String())
                                .withName("gjoin")
                                .withGracePeriod(Duration.ofMinutes(1)))
                .to("out");
        Classification c = classify(b.build(), 0);
        assertThat(c.mode()).isEqualTo(Mode.SPLIT);
        assertThat(c.nodes().get("slow").parallel()).isTrue();
        assertThat(c.nodes().get("gjoin").parallel()).isFalse();
    }

    static final class Identity implements ValueTransformerWithKey<String, String, String> {
        @Override
        public void init(org.apache.kafka.streams.processor.ProcessorContext context) {}

        @Override
        public String transform(String key, String value) {
            return value;
        }

        @Override
        public void close() {}
    }

    @Test
    void tableTransformValuesWithItsOwnStoresIsSerial() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(
                Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("side"), Serdes.String(), Serdes.String()));
        KTable<String, String> t = b.table("t", STRINGS, Materialized.as("t-store"));
        t.transformValues(Identity::new, Named.as("tv"), "side").toStream().to("out");
        Classification c = classify(b.build(), 0);
        assertThat(c.nodes().get("tv").reason()).startsWith("user code with state stores of its own");
        StreamsBuilder b2 = new StreamsBuilder();
        b2.table("t", STRINGS, Materialized.as("t-store"))
                .transformValues(
                        Identity::new,
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("tv-store"),
                        Named.as("tv"))
                .toStream()
                .to("out");
        assertThat(classify(b2.build(), 0).mode()).isEqualTo(Mode.PARALLEL);
    }

    @Test
    void aBranchWithOneWindowedArmKeepsTheOtherArmParallel() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        Map<String, KStream<String, String>> arms = slowStep(b)
                .split(Named.as("arm-"))
                .branch((k, v) -> v.startsWith("a"), Branched.as("w"))
                .defaultBranch(Branched.as("plain"));
        arms.get("arm-w")
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                .count(Named.as("wcount"))
                .toStream()
                .to("windowed");
        arms.get("arm-plain").mapValues(v -> v, Named.as("plain-map")).to("plain", Produced.as("plain-sink"));
        Classification c = classify(b.build(), 0);
        assertThat(c.mode()).isEqualTo(Mode.SPLIT);
        assertThat(c.nodes().get("plain-map").parallel()).isTrue();
        assertThat(c.nodes().get("plain-sink").parallel()).isTrue();
        assertThat(c.nodes().get("wcount").parallel()).isFalse();
    }

    @Test
    void aJoinWhoseSidesMayEncodeKeysDifferentlyIsSerial() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> customers = b.table("customers", Consumed.with(new OtherKeys(), Serdes.String()));
        slowStep(b)
                .leftJoin(customers, (o, c) -> o + "," + c, Joined.as("join"))
                .to("out");
        Classification c = classify(b.build(), 0);
        assertThat(c.nodes().get("slow").parallel()).isTrue();
        assertThat(c.nodes().get("join").reason())
                .contains("with key formats that may encode equal keys to " + "different bytes")
                .contains("TopologyInspectorTest$OtherKeys$1");
        // The table source shares that store: serial too; the slow step above the join is not.
        assertThat(c.nodes().values()).filteredOn(d -> !d.parallel()).hasSizeGreaterThanOrEqualTo(2);
    }

    @Test
    void aMergedAggregateOfTwoInputsNeedsOneKeyFormat() throws Exception {
        StreamsBuilder same = new StreamsBuilder();
        same.stream("a", STRINGS)
                .merge(same.stream("b", Consumed.with(Serdes.String(), Serdes.String())))
                .groupByKey()
                .count(Named.as("count"))
                .toStream()
                .to("out");
        assertThat(classify(same.build(), 0).mode()).isEqualTo(Mode.PARALLEL);
        StreamsBuilder differ = new StreamsBuilder();
        differ.stream("a", STRINGS)
                .merge(differ.stream("b", Consumed.with(new OtherKeys(), Serdes.String())))
                .groupByKey()
                .count(Named.as("count"))
                .toStream()
                .to("out");
        Classification c = classify(differ.build(), 0);
        assertThat(c.nodes().get("count").reason()).contains("share store").contains("OtherKeys$1");
        // A store reached from one input only is fine whatever its key format.
        StreamsBuilder one = new StreamsBuilder();
        one.stream("a", Consumed.with(new OtherKeys(), Serdes.String()))
                .groupByKey()
                .count(Named.as("count"))
                .toStream()
                .to("out");
        assertThat(classify(one.build(), 0).mode()).isEqualTo(Mode.PARALLEL);
    }

    @Test
    void theDefaultStringSerdeAndAStringDeserializerAreOneFormat() {
        assertThat(NodeClassifier.normalized("org.apache.kafka.common.serialization.Serdes$StringSerde"))
                .isEqualTo("org.apache.kafka.common.serialization.StringDeserializer");
    }

    /** A key serde streamshard does not know (think of a schema-registry serde). */
    static final class OtherKeys extends Serdes.WrapperSerde<String> {
        OtherKeys() {
            super(new StringSerializer(), new StringDeserializer() {});
        }
    }

    @Test
    void aKeyValueCachingLayerKeepsItsNodesParallel() throws Exception {
        // The layer writes through on the workers (StreamShardStores), so it is no reason to be serial.
        StreamsBuilder b = new StreamsBuilder();
        slowStep(b)
                .groupByKey()
                .count(Named.as("count"), Materialized.as("counts"))
                .toStream()
                .to("out");
        Classification c = classify(b.build(), 0, true);
        assertThat(c.mode()).isEqualTo(Mode.PARALLEL);
        assertThat(c.nodes().get("count").parallel()).isTrue();
    }

    @Test
    void aCachedWindowStoreStaysSerial() throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        slowStep(b)
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                .count(Named.as("count"), Materialized.as("counts"))
                .toStream()
                .to("out");
        Classification c = classify(b.build(), 0, true);
        assertThat(c.nodes().get("count").parallel()).isFalse();
        assertThat(c.nodes().get("count").reason()).isEqualTo("window store counts");
    }
}
