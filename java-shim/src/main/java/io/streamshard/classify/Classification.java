package io.streamshard.classify;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The decision for one task: a {@link NodeDecision} per node, and from them the task's mode.
 *
 * @param nodes every node of the task in topology order, with its decision
 * @param serialRoots the serial nodes whose parents are all parallel: where records enter the serial region
 */
public final class Classification {
    private final Map<String, NodeDecision> nodes;
    private final List<String> serialRoots;
    private final Mode mode;
    private final String stockReason;

    public Classification(Map<String, NodeDecision> nodes, List<String> serialRoots, Mode mode, String stockReason) {
        nodes = Collections.unmodifiableMap(new LinkedHashMap<>(nodes));
        serialRoots = List.copyOf(serialRoots);
        this.nodes = nodes;
        this.serialRoots = serialRoots;
        this.mode = mode;
        this.stockReason = stockReason;
    }

    public Map<String, NodeDecision> nodes() {
        return nodes;
    }

    public List<String> serialRoots() {
        return serialRoots;
    }

    public Mode mode() {
        return mode;
    }

    public String stockReason() {
        return stockReason;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof Classification)) {
            return false;
        }
        Classification other = (Classification) o;
        return Objects.equals(nodes, other.nodes)
                && Objects.equals(serialRoots, other.serialRoots)
                && Objects.equals(mode, other.mode)
                && Objects.equals(stockReason, other.stockReason);
    }

    @Override
    public int hashCode() {
        return Objects.hash(nodes, serialRoots, mode, stockReason);
    }

    @Override
    public String toString() {
        return "Classification[nodes=" + nodes + ", serialRoots=" + serialRoots + ", mode=" + mode + ", stockReason="
                + stockReason + "]";
    }

    public enum Mode {
        /** Every node parallel. */
        PARALLEL,
        /** A parallel part and an ordered serial region below it. */
        SPLIT,
        /** Nothing but the sources would be parallel: the task runs stock. */
        STOCK
    }

    /** Names of the serial-region nodes. */
    public Set<String> serialNodes() {
        Set<String> out = new LinkedHashSet<>();
        nodes.forEach((n, d) -> {
            if (!d.parallel()) {
                out.add(n);
            }
        });
        return out;
    }

    /** One line for the task: {@code parallel}, {@code parallel, serial region: A, B} or {@code serial: why}. */
    public String summary() {
        switch (mode) {
            case PARALLEL:
                return "parallel";
            case SPLIT:
                return "parallel, serial region: " + String.join(", ", serialRoots);
            default:
                return "serial: " + stockReason;
        }
    }

    /** One line per node, {@code NAME: parallel} or {@code NAME: serial region: why}. */
    public List<String> lines() {
        List<String> out = new ArrayList<>();
        nodes.forEach((n, d) -> out.add(n + ": " + d));
        return out;
    }
}
