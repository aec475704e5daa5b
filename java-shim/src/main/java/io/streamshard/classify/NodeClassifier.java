package io.streamshard.classify;

import io.streamshard.classify.NodeDecision.Region;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Decides, per node of a task, whether it runs on the parallel path or in the task's serial
 * region. Pure: it sees only {@link NodeInfo} and {@link StoreInfo} values.
 *
 * <p>A node is parallel if it is parallel-safe by itself (see {@link #ownVerdict}) and every node
 * above it is parallel. A store used by a serial node makes every other node using it serial too:
 * otherwise the serial node would see the store written ahead of the order it runs in. Everything
 * below a serial node is serial. If nothing but the sources is left parallel, the task runs stock.
 * Why each DSL processor is or is not parallel-safe: docs/parallel-safety.md.
 */
public final class NodeClassifier {
    private static final String DSL = "org.apache.kafka.streams.kstream.internals.";
    /** Kafka Streams 3.x keeps ForeachProcessor outside the internals package (4.0 moved it there). */
    private static final String FOREACH_3X = "org.apache.kafka.streams.kstream.ForeachProcessor";

    /** Stateless, or state read and written only under the record's key (docs/parallel-safety.md). */
    private static final Set<String> SAFE_DSL = Set.of(
            // stateless
            "KStreamFilter",
            "KStreamMapValues",
            "KStreamMap",
            "KStreamFlatMap",
            "KStreamFlatMapValues",
            "KStreamPeek",
            "ForeachProcessor",
            "KStreamPrint",
            "KStreamBranch",
            "PassThrough",
            "KTablePassThrough",
            // key-value state under the record's key
            "KStreamAggregate",
            "KStreamReduce",
            "KTableSource",
            "KTableFilter",
            "KTableMapValues",
            "KTableTransformValues",
            "KTableAggregate",
            "KTableReduce",
            "KTableRepartitionMap",
            // joins: the other side's store is read under the same key (or a global store)
            "KStreamKTableJoinProcessor",
            "KTableKTableInnerJoin",
            "KTableKTableLeftJoin",
            "KTableKTableOuterJoin",
            "KTableKTableRightJoin",
            "KTableKTableJoinMerger");

    private static final String FK = DSL + "foreignkeyjoin.";

    /**
     * The foreign-key join's processors (exact class names, the same in 3.9 to 4.4). Each reads and
     * writes state only under its record's key, or under a store key whose prefix is that key's
     * bytes; which inputs share their stores is checked by the key-format rule like any other
     * join's. The subscription sender's per-record memo is kept per thread by the agent
     * (StreamShardForeignKeys). Why, line by line: docs/parallel-safety.md.
     */
    private static final Set<String> SAFE_FK = Set.of(
            // left side, under the primary key: forwards subscriptions, no store
            "SubscriptionSendProcessorSupplier$UnbindChangeProcessor",
            // right side, under the foreign key: the subscription store under CombinedKey(FK, PK)
            "SubscriptionReceiveProcessorSupplier$1",
            // right side: reads the foreign table under the foreign key
            "SubscriptionJoinProcessorSupplier$1",
            // right side: a foreign-table update scans the subscription store for its FK prefix
            "ForeignTableJoinProcessorSupplier$KTableKTableJoinProcessor",
            // left side again: reads the left table under the primary key
            "ResponseJoinProcessorSupplier$1");

    /** DSL processors that must stay serial, with the reason shown to the user. */
    private static final Map<String, String> SERIAL_DSL = Map.ofEntries(
            Map.entry("KStreamKStreamJoin", "stream-stream join (window stores, shared stream time)"),
            Map.entry("KStreamKStreamJoinLeftSide", "stream-stream join (window stores, shared stream time)"),
            Map.entry("KStreamKStreamJoinRightSide", "stream-stream join (window stores, shared stream time)"),
            Map.entry("KStreamKStreamSelfJoin", "stream-stream self join (window store, stream time)"),
            Map.entry("KStreamJoinWindow", "stream-stream join window (window store)"),
            Map.entry("KStreamWindowAggregate", "windowed aggregation (window store, observed stream time)"),
            Map.entry(
                    "KStreamSlidingWindowAggregate", "sliding-window aggregation (window store, observed stream time)"),
            Map.entry(
                    "KStreamSessionWindowAggregate",
                    "session-window aggregation (session store, observed stream time)"));

    private static final String SERIALIZATION = "org.apache.kafka.common.serialization.";

    /** Key formats whose bytes depend only on the key (no schema id or other per-topic prefix). */
    private static final Set<String> STABLE_KEY_FORMATS;

    static {
        Set<String> formats = new HashSet<>();
        for (String t : List.of(
                "String",
                "Long",
                "Integer",
                "Short",
                "Double",
                "Float",
                "UUID",
                "ByteArray",
                "Bytes",
                "ByteBuffer",
                "Boolean",
                "Void")) {
            formats.add(SERIALIZATION + t + "Deserializer");
        }
        STABLE_KEY_FORMATS = Set.copyOf(formats);
    }

    private NodeClassifier() {}

    /**
     * @param nodes every node of the task (sources, processors, sinks) in topology order
     * @param stores the task's state stores (global stores are not among them)
     * @param optedIn node names and processor class names the user declared parallel-safe
     * @param forcedSerial node names and processor class names the user wants serial (wins over optedIn)
     */
    public static Classification classify(
            Collection<NodeInfo> nodes,
            Collection<StoreInfo> stores,
            Collection<String> optedIn,
            Collection<String> forcedSerial) {
        Map<String, NodeInfo> byName = new LinkedHashMap<>();
        nodes.forEach(n -> byName.put(n.name(), n));
        Map<String, StoreInfo> storeByName = new HashMap<>();
        stores.forEach(s -> storeByName.put(s.name(), s));
        Map<String, List<String>> parents = new HashMap<>();
        for (NodeInfo n : nodes) {
            for (String c : n.children()) {
                parents.computeIfAbsent(c, k -> new ArrayList<>()).add(n.name());
            }
        }

        Map<String, String> keyProblems = keyFormatProblems(nodes, byName);
        Map<String, NodeDecision> decided = new LinkedHashMap<>();
        for (NodeInfo n : nodes) {
            String why = named(n, forcedSerial)
                    ? "listed in streamshard.serial.processors"
                    : ownVerdict(n, storeByName, optedIn);
            for (String store : n.stores()) {
                if (why == null) {
                    why = keyProblems.get(store);
                }
            }
            decided.put(
                    n.name(),
                    why == null ? new NodeDecision(Region.PARALLEL, null) : new NodeDecision(Region.SERIAL, why));
        }
        // Fixpoint: serial flows down the edges and across shared stores.
        boolean changed = true;
        while (changed) {
            changed = false;
            for (NodeInfo n : nodes) {
                if (!decided.get(n.name()).parallel()) {
                    continue;
                }
                String why = inheritedReason(n, parents, decided, byName);
                if (why != null) {
                    decided.put(n.name(), new NodeDecision(Region.SERIAL, why));
                    changed = true;
                }
            }
        }

        List<String> roots = new ArrayList<>();
        boolean anyParallelBeyondSources = false;
        boolean anySerial = false;
        String firstReason = null;
        for (NodeInfo n : nodes) {
            NodeDecision d = decided.get(n.name());
            if (d.parallel()) {
                anyParallelBeyondSources |= n.kind() != NodeInfo.Kind.SOURCE;
                continue;
            }
            anySerial = true;
            List<String> ps = parents.getOrDefault(n.name(), List.of());
            if (ps.stream().anyMatch(p -> decided.get(p).parallel())) {
                roots.add(n.name());
                if (firstReason == null) {
                    firstReason = n.name() + ": " + d.reason();
                }
            }
        }
        if (!anySerial) {
            return new Classification(decided, roots, Classification.Mode.PARALLEL, null);
        }
        if (!anyParallelBeyondSources) {
            // The whole task runs stock: its sources too.
            decided.replaceAll((n, d) -> d.parallel()
                    ? new NodeDecision(Region.SERIAL, "the task runs stock: nothing but its sources would run parallel")
                    : d);
            return new Classification(
                    decided,
                    roots,
                    Classification.Mode.STOCK,
                    "nothing but the sources would run parallel (" + firstReason + ")");
        }
        return new Classification(decided, roots, Classification.Mode.SPLIT, null);
    }

    /**
     * streamshard orders records by their key bytes. A store that records of several inputs reach
     * (a stream-table join's table, a cogroup's or a merge's aggregate) is read and written in the
     * right order for a key only if those inputs encode equal keys to equal bytes: the same
     * deserializer, of a kind without per-topic prefixes (a schema-registry serde writes a schema
     * id per topic). Per store that fails this, why; a store reached from one input is always fine.
     */
    static Map<String, String> keyFormatProblems(Collection<NodeInfo> nodes, Map<String, NodeInfo> byName) {
        Map<String, Set<String>> reachedBy = new HashMap<>();
        for (NodeInfo source : nodes) {
            if (source.kind() != NodeInfo.Kind.SOURCE) {
                continue;
            }
            ArrayDeque<String> todo = new ArrayDeque<>(List.of(source.name()));
            while (!todo.isEmpty()) {
                String n = todo.poll();
                if (reachedBy.computeIfAbsent(n, k -> new HashSet<>()).add(source.name())) {
                    NodeInfo info = byName.get(n);
                    if (info != null) {
                        todo.addAll(info.children());
                    }
                }
            }
        }
        Map<String, Set<String>> storeSources = new HashMap<>();
        for (NodeInfo n : nodes) {
            for (String store : n.stores()) {
                storeSources
                        .computeIfAbsent(store, k -> new TreeSet<>())
                        .addAll(reachedBy.getOrDefault(n.name(), Set.of()));
            }
        }
        Map<String, String> problems = new HashMap<>();
        storeSources.forEach((store, sources) -> {
            if (sources.size() < 2) {
                return;
            }
            Set<String> formats = new TreeSet<>();
            sources.forEach(src -> formats.add(normalized(byName.get(src).keyFormat())));
            if (formats.size() != 1
                    || !STABLE_KEY_FORMATS.contains(formats.iterator().next())) {
                problems.put(
                        store,
                        "inputs " + String.join(", ", sources) + " share store " + store
                                + " with key formats that may encode equal keys to different bytes ("
                                + String.join(", ", formats) + "); streamshard orders records by key bytes");
            }
        });
        return problems;
    }

    /** A serde's class name as the deserializer it stands for (Serdes$StringSerde → StringDeserializer). */
    public static String normalized(String keyFormat) {
        if (keyFormat == null) {
            return "unknown";
        }
        String serdes = SERIALIZATION + "Serdes$";
        if (keyFormat.startsWith(serdes) && keyFormat.endsWith("Serde")) {
            return SERIALIZATION + keyFormat.substring(serdes.length(), keyFormat.length() - "Serde".length())
                    + "Deserializer";
        }
        return keyFormat;
    }

    /** Null if the node is parallel-safe by itself, else why not. */
    static String ownVerdict(NodeInfo n, Map<String, StoreInfo> stores, Collection<String> optedIn) {
        for (String s : n.stores()) {
            StoreInfo store = stores.get(s);
            String why = store == null ? null : storeReason(store);
            if (why != null) {
                return why;
            }
        }
        if (n.kind() != NodeInfo.Kind.PROCESSOR) {
            return null;
        }
        if (named(n, optedIn)) {
            return null;
        }
        String c = n.processorClass();
        if (c == null) {
            return "no processor to inspect";
        }
        if (c.equals(FOREACH_3X)) {
            return null;
        }
        if (c.startsWith(FK)) {
            return SAFE_FK.contains(c.substring(FK.length()))
                    ? null
                    : "foreign-key join processor " + c.substring(FK.length()) + " is not known to be parallel-safe";
        }
        if (c.startsWith(DSL + "suppress.")) {
            return "suppress (time-ordered buffer, observed stream time)";
        }
        if (c.startsWith(DSL) && c.indexOf('.', DSL.length()) < 0) {
            String simple = c.substring(DSL.length());
            int dollar = simple.indexOf('$');
            String outer = dollar < 0 ? simple : simple.substring(0, dollar);
            String serial = SERIAL_DSL.get(outer);
            if (serial != null) {
                return serial;
            }
            if (SAFE_DSL.contains(outer)) {
                if (n.buffered()) {
                    return "stream-table join with a grace period (time-ordered buffer)";
                }
                if (n.userStores()) {
                    return "user code with state stores of its own (" + String.join(", ", n.stores()) + ")";
                }
                return null;
            }
        }
        return "processor " + c + " is not known to be parallel-safe"
                + (c.startsWith(DSL)
                        ? ""
                        : "; list it in streamshard.parallel.processors if it is thread-safe and writes state "
                                + "only under the record's key");
    }

    /** Whether {@code names} lists the node by name or its processor by class name ($ or . for nested). */
    private static boolean named(NodeInfo n, Collection<String> names) {
        String c = n.processorClass();
        return names.contains(n.name()) || c != null && (names.contains(c) || names.contains(c.replace('$', '.')));
    }

    private static String storeReason(StoreInfo s) {
        switch (s.kind()) {
            case KEY_VALUE:
                return null;
            case VERSIONED:
                return "versioned store " + s.name();
            case WINDOW:
                return "window store " + s.name();
            case SESSION:
                return "session store " + s.name();
            case BUFFER:
                return "time-ordered buffer " + s.name();
            case CACHED:
                return "store " + s.name() + " has a caching layer";
            default:
                return "store " + s.name() + " is of a type streamshard does not know";
        }
    }

    private static String inheritedReason(
            NodeInfo n,
            Map<String, List<String>> parents,
            Map<String, NodeDecision> decided,
            Map<String, NodeInfo> byName) {
        for (String p : parents.getOrDefault(n.name(), List.of())) {
            if (!decided.get(p).parallel()) {
                return "below serial node " + p;
            }
        }
        for (String s : n.stores()) {
            for (NodeInfo other : byName.values()) {
                if (other != n
                        && other.stores().contains(s)
                        && !decided.get(other.name()).parallel()) {
                    return "shares store " + s + " with serial node " + other.name();
                }
            }
        }
        return null;
    }
}
