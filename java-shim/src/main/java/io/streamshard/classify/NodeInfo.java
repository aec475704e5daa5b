package io.streamshard.classify;

import java.util.List;
import java.util.Set;

/**
 * What the classifier knows about one node of a task's topology: read once from the built
 * {@code ProcessorTopology} (see {@code TopologyInspector}), nothing live.
 *
 * @param name the node name ({@code KSTREAM-MAPVALUES-0000000003} or the user's {@code Named})
 * @param kind source, processor or sink
 * @param processorClass the processor's class name (null for sources and sinks, or when unknown)
 * @param children names of the nodes this one forwards to
 * @param stores names of the state stores connected to this node
 * @param buffered a stream-table join with a grace period (its records wait in a time-ordered buffer)
 * @param userStores a DSL node whose user code is given state stores of its own (KTable
 *     {@code transformValues} with store names): that code may read or write any key
 * @param keyFormat sources only: the class that deserializes the record keys (the key deserializer,
 *     or the default key serde when the source has none of its own); null if unknown
 */
public record NodeInfo(String name, Kind kind, String processorClass, List<String> children, Set<String> stores,
        boolean buffered, boolean userStores, String keyFormat) {
    public enum Kind { SOURCE, PROCESSOR, SINK }

    public NodeInfo {
        children = List.copyOf(children);
        stores = Set.copyOf(stores);
    }
}
