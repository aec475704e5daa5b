package io.streamshard.classify;

import java.util.List;
import java.util.Objects;
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
public final class NodeInfo {
    private final String name;
    private final Kind kind;
    private final String processorClass;
    private final List<String> children;
    private final Set<String> stores;
    private final boolean buffered;
    private final boolean userStores;
    private final String keyFormat;

    public NodeInfo(
            String name,
            Kind kind,
            String processorClass,
            List<String> children,
            Set<String> stores,
            boolean buffered,
            boolean userStores,
            String keyFormat) {
        children = List.copyOf(children);
        stores = Set.copyOf(stores);
        this.name = name;
        this.kind = kind;
        this.processorClass = processorClass;
        this.children = children;
        this.stores = stores;
        this.buffered = buffered;
        this.userStores = userStores;
        this.keyFormat = keyFormat;
    }

    public String name() {
        return name;
    }

    public Kind kind() {
        return kind;
    }

    public String processorClass() {
        return processorClass;
    }

    public List<String> children() {
        return children;
    }

    public Set<String> stores() {
        return stores;
    }

    public boolean buffered() {
        return buffered;
    }

    public boolean userStores() {
        return userStores;
    }

    public String keyFormat() {
        return keyFormat;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof NodeInfo)) {
            return false;
        }
        NodeInfo other = (NodeInfo) o;
        return Objects.equals(name, other.name)
                && Objects.equals(kind, other.kind)
                && Objects.equals(processorClass, other.processorClass)
                && Objects.equals(children, other.children)
                && Objects.equals(stores, other.stores)
                && Objects.equals(buffered, other.buffered)
                && Objects.equals(userStores, other.userStores)
                && Objects.equals(keyFormat, other.keyFormat);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, kind, processorClass, children, stores, buffered, userStores, keyFormat);
    }

    @Override
    public String toString() {
        return "NodeInfo[name=" + name + ", kind=" + kind + ", processorClass=" + processorClass + ", children="
                + children + ", stores=" + stores + ", buffered=" + buffered + ", userStores=" + userStores
                + ", keyFormat=" + keyFormat + "]";
    }

    public enum Kind {
        SOURCE,
        PROCESSOR,
        SINK
    }
}
