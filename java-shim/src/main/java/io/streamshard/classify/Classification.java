package io.streamshard.classify;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The decision for one task: a {@link NodeDecision} per node, and from them the task's mode.
 *
 * @param nodes every node of the task in topology order, with its decision
 * @param serialRoots the serial nodes whose parents are all parallel: where records enter the serial region
 */
public record Classification(Map<String, NodeDecision> nodes, List<String> serialRoots, Mode mode,
        String stockReason) {
    public enum Mode {
        /** Every node parallel. */
        PARALLEL,
        /** A parallel part and an ordered serial region below it. */
        SPLIT,
        /** Nothing but the sources would be parallel: the task runs stock. */
        STOCK
    }

    public Classification {
        nodes = Collections.unmodifiableMap(new LinkedHashMap<>(nodes));
        serialRoots = List.copyOf(serialRoots);
    }

    /** Names of the serial-region nodes. */
    public Set<String> serialNodes() {
        Set<String> out = new java.util.LinkedHashSet<>();
        nodes.forEach((n, d) -> {
            if (!d.parallel()) {
                out.add(n);
            }
        });
        return out;
    }

    /** One line for the task: {@code parallel}, {@code parallel, serial region: A, B} or {@code serial: why}. */
    public String summary() {
        return switch (mode) {
            case PARALLEL -> "parallel";
            case SPLIT -> "parallel, serial region: " + String.join(", ", serialRoots);
            case STOCK -> "serial: " + stockReason;
        };
    }

    /** One line per node, {@code NAME: parallel} or {@code NAME: serial region: why}. */
    public List<String> lines() {
        List<String> out = new ArrayList<>();
        nodes.forEach((n, d) -> out.add(n + ": " + d));
        return out;
    }
}
