package org.apache.kafka.streams.processor.internals;

import io.streamshard.classify.Classification;
import io.streamshard.classify.NodeClassifier;
import io.streamshard.classify.NodeDecision;
import io.streamshard.classify.NodeInfo;
import io.streamshard.classify.StoreInfo;
import io.streamshard.status.Json;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.CachingKeyValueStore;
import org.apache.kafka.streams.state.internals.TimeOrderedKeyValueBuffer;
import org.apache.kafka.streams.state.internals.WrappedStateStore;

/**
 * Reads a built {@link ProcessorTopology} into the classifier's values ({@link NodeInfo},
 * {@link StoreInfo}). Runs when a task is created; reflection only here, never per record.
 */
public final class TopologyInspector {
    private TopologyInspector() {}

    /**
     * Classifies every node of {@code topology}.
     *
     * @param defaultKeySerde the application's {@code default.key.serde} class name, or null
     */
    public static Classification classify(
            ProcessorTopology topology,
            Collection<String> optedIn,
            Collection<String> forcedSerial,
            String defaultKeySerde) {
        return NodeClassifier.classify(nodes(topology, defaultKeySerde), stores(topology), optedIn, forcedSerial);
    }

    /** The topology's processor nodes named in {@code names}, as an identity set (the record path's lookups). */
    static Set<ProcessorNode<?, ?, ?, ?>> nodesNamed(ProcessorTopology topology, Set<String> names) {
        Set<ProcessorNode<?, ?, ?, ?>> nodes = Collections.newSetFromMap(new IdentityHashMap<>());
        for (ProcessorNode<?, ?, ?, ?> n : topology.processors()) {
            if (names.contains(n.name())) {
                nodes.add(n);
            }
        }
        return nodes;
    }

    /**
     * The sub-topology as the status listener shows it: {@code {"id":…,"nodes":[{name, kind,
     * class, children, region, reason, topics, stores}]}}, regions from {@code c}.
     */
    public static String graphJson(int subtopology, ProcessorTopology topology, Classification c) {
        Map<String, List<String>> topics = new HashMap<>();
        for (String t : topology.sourceTopics()) {
            SourceNode<?, ?> n = topology.source(t);
            if (n != null) {
                topics.computeIfAbsent(n.name(), k -> new ArrayList<>()).add(t);
            }
        }
        for (String t : topology.sinkTopics()) {
            SinkNode<?, ?> n = topology.sink(t);
            if (n != null) {
                topics.computeIfAbsent(n.name(), k -> new ArrayList<>()).add(t);
            }
        }
        Json j = new Json().object().field("id", subtopology).key("nodes").array();
        for (NodeInfo n : nodes(topology, null)) {
            NodeDecision d = c.nodes().get(n.name());
            boolean stock = c.mode() == Classification.Mode.STOCK;
            String region = stock ? "stock" : d != null && !d.parallel() ? "serial" : "parallel";
            String reason = stock ? c.stockReason() : d == null ? "" : d.reason();
            String cls = n.processorClass() == null
                    ? (n.kind() == NodeInfo.Kind.SOURCE ? "SourceNode" : "SinkNode")
                    : n.processorClass().substring(n.processorClass().lastIndexOf('.') + 1);
            j.object()
                    .field("name", n.name())
                    .field("kind", n.kind().name().toLowerCase(Locale.ROOT))
                    .field("class", cls)
                    .field("children", n.children())
                    .field("region", region)
                    .field("reason", reason == null ? "" : reason)
                    .field("topics", topics.getOrDefault(n.name(), List.of()))
                    .field("stores", new TreeSet<>(n.stores()))
                    .end();
        }
        return j.endArray().end().toString();
    }

    static List<NodeInfo> nodes(ProcessorTopology topology, String defaultKeySerde) {
        List<NodeInfo> out = new ArrayList<>();
        for (ProcessorNode<?, ?, ?, ?> node : topology.processors()) {
            List<String> children = new ArrayList<>();
            for (ProcessorNode<?, ?, ?, ?> c : node.children()) {
                children.add(c.name());
            }
            Set<String> stores = node.stateStores == null ? Set.of() : node.stateStores;
            NodeInfo.Kind kind = node instanceof SourceNode
                    ? NodeInfo.Kind.SOURCE
                    : node instanceof SinkNode ? NodeInfo.Kind.SINK : NodeInfo.Kind.PROCESSOR;
            Object processor = kind == NodeInfo.Kind.PROCESSOR ? processorOf(node) : null;
            String processorClass =
                    processor == null ? null : processor.getClass().getName();
            boolean buffered = processor != null && Boolean.TRUE.equals(field(processor, "useBuffer"));
            boolean userStores = false;
            if (processorClass != null
                    && processorClass.endsWith(".KTableTransformValues$KTableTransformValuesProcessor")) {
                Object own = field(field(processor, "this$0"), "queryableName");
                Set<String> other = new HashSet<>(stores);
                other.remove(own);
                userStores = !other.isEmpty();
            }
            String keyFormat = null;
            if (node instanceof SourceNode<?, ?>) {
                SourceNode<?, ?> source = (SourceNode<?, ?>) node;
                Object d = fieldOf(SourceNode.class, source, "keyDeserializer");
                keyFormat = d != null ? d.getClass().getName() : defaultKeySerde;
            }
            out.add(new NodeInfo(node.name(), kind, processorClass, children, stores, buffered, userStores, keyFormat));
        }
        return out;
    }

    static List<StoreInfo> stores(ProcessorTopology topology) {
        List<StoreInfo> out = new ArrayList<>();
        for (StateStore store : topology.stateStores()) {
            out.add(new StoreInfo(store.name(), kindOf(store)));
        }
        return out;
    }

    /** The store's kind, looking through every wrapping layer. */
    static StoreInfo.Kind kindOf(StateStore store) {
        StoreInfo.Kind kind = StoreInfo.Kind.OTHER;
        for (StateStore layer = store; layer != null; ) {
            // A key-value store's caching layer writes through on the workers (StreamShardStores);
            // any other caching layer (window, session, or one streamshard does not know) makes it CACHED.
            // (4.3's headers variant is a subclass that changes only its queries.)
            if (layer.getClass().getSimpleName().startsWith("Caching") && !(layer instanceof CachingKeyValueStore)) {
                return StoreInfo.Kind.CACHED;
            }
            if (layer instanceof VersionedKeyValueStore<?, ?>) {
                return StoreInfo.Kind.VERSIONED;
            }
            if (layer instanceof WindowStore<?, ?>) {
                return StoreInfo.Kind.WINDOW;
            }
            if (layer instanceof SessionStore<?, ?>) {
                return StoreInfo.Kind.SESSION;
            }
            if (layer instanceof TimeOrderedKeyValueBuffer<?, ?, ?>) {
                return StoreInfo.Kind.BUFFER;
            }
            if (layer instanceof KeyValueStore<?, ?>) {
                kind = StoreInfo.Kind.KEY_VALUE;
            }
            layer = layer instanceof WrappedStateStore<?, ?, ?> ? ((WrappedStateStore<?, ?, ?>) layer).wrapped() : null;
        }
        return kind;
    }

    private static Object processorOf(ProcessorNode<?, ?, ?, ?> node) {
        for (String name : new String[] {"processor", "fixedKeyProcessor"}) {
            Object p = fieldOf(ProcessorNode.class, node, name);
            if (p != null) {
                return p;
            }
        }
        return null;
    }

    /** A declared field of {@code target}'s class or a superclass, or null. */
    private static Object field(Object target, String name) {
        if (target == null) {
            return null;
        }
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            Object v = fieldOf(c, target, name);
            if (v != null) {
                return v;
            }
        }
        return null;
    }

    private static Object fieldOf(Class<?> c, Object target, String name) {
        try {
            Field f = c.getDeclaredField(name);
            f.setAccessible(true);
            return f.get(target);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }
}
