package io.streamshard.examples;

import io.streamshard.StreamShard;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.TopologyDescription;

/**
 * Checks of {@code StreamShard.explain} / {@code explainNodes} against a topology description.
 * Contract: per task id, node name → {@code "parallel"} or {@code "serial region: <reason>"}; a node
 * is parallel only if every node above it is; everything below a serial node is serial; explain
 * says {@code "parallel"} (no serial node) or {@code "parallel, serial region: A, B"} (the top-most
 * serial nodes) or {@code "serial: <reason>"} (the whole task stock).
 */
final class Explain {
    private Explain() {}

    static final String PARALLEL = "parallel";
    static final String SERIAL_REGION = "serial region: ";
    static final String MIXED = "parallel, serial region: ";

    static Map<String, Map<String, String>> nodes(KafkaStreams streams) {
        return StreamShard.explainNodes(streams);
    }

    /** An expectation: the node {@code name} (or every processor whose name starts with it) is parallel or serial. */
    record NodeRule(String name, boolean prefix, boolean parallel) {
        @Override
        public String toString() {
            return (prefix ? name + "*" : name) + " " + (parallel ? "parallel" : "serial region");
        }
    }

    static boolean isSerial(String decision) {
        return decision != null && decision.startsWith(SERIAL_REGION);
    }

    /** Node name → node, over all sub-topologies. */
    static Map<String, TopologyDescription.Node> nodesByName(TopologyDescription d) {
        Map<String, TopologyDescription.Node> m = new HashMap<>();
        for (TopologyDescription.Subtopology s : d.subtopologies()) {
            for (TopologyDescription.Node n : s.nodes()) {
                m.put(n.name(), n);
            }
        }
        return m;
    }

    static Map<Integer, TopologyDescription.Subtopology> subtopologies(TopologyDescription d) {
        Map<Integer, TopologyDescription.Subtopology> m = new HashMap<>();
        for (TopologyDescription.Subtopology s : d.subtopologies()) {
            m.put(s.id(), s);
        }
        return m;
    }

    static int subtopologyOf(String taskId) {
        return Integer.parseInt(taskId.substring(0, taskId.indexOf('_')));
    }

    /** The concrete node names a rule stands for (a prefix rule: processors only). */
    static List<String> resolve(TopologyDescription d, NodeRule rule) {
        List<String> names = new ArrayList<>();
        for (TopologyDescription.Node n : nodesByName(d).values()) {
            if (rule.prefix()
                    ? n.name().startsWith(rule.name()) && n instanceof TopologyDescription.Processor
                    : n.name().equals(rule.name())) {
                names.add(n.name());
            }
        }
        names.sort(null);
        return names;
    }

    /** Problems with the named nodes' regions; empty if every rule holds in every task that has the node. */
    static List<String> checkRules(
            TopologyDescription d, Map<String, Map<String, String>> nodes, List<NodeRule> rules) {
        List<String> problems = new ArrayList<>();
        for (NodeRule rule : rules) {
            List<String> names = resolve(d, rule);
            if (names.isEmpty()) {
                problems.add("rule " + rule + " matches no node of the topology (catalog error)");
            }
            for (String name : names) {
                int tasks = 0;
                for (Map.Entry<String, Map<String, String>> t : nodes.entrySet()) {
                    String decision = t.getValue().get(name);
                    if (decision == null) {
                        continue;
                    }
                    tasks++;
                    boolean ok = rule.parallel() ? decision.equals(PARALLEL) : isSerial(decision);
                    if (!ok) {
                        problems.add("task " + t.getKey() + " node " + name + ": expected "
                                + (rule.parallel() ? "parallel" : "serial region: ...") + ", got \"" + decision + "\"");
                    }
                }
                if (tasks == 0) {
                    problems.add("node " + name + " is in no task of explainNodes " + nodes.keySet());
                }
            }
        }
        return problems;
    }

    /**
     * The structural contract per task: every node of its sub-topology is listed with a
     * well-formed decision, the successors of a serial node are serial, and explain's summary
     * names exactly the top-most serial nodes.
     */
    static List<String> checkConsistency(
            TopologyDescription d, Map<String, String> explain, Map<String, Map<String, String>> nodes) {
        List<String> problems = new ArrayList<>();
        Map<Integer, TopologyDescription.Subtopology> subs = subtopologies(d);
        if (!new TreeSet<>(explain.keySet()).equals(new TreeSet<>(nodes.keySet()))) {
            problems.add("explain has tasks " + new TreeSet<>(explain.keySet()) + ", explainNodes "
                    + new TreeSet<>(nodes.keySet()));
        }
        for (Map.Entry<String, Map<String, String>> t : nodes.entrySet()) {
            String task = t.getKey();
            Map<String, String> decisions = t.getValue();
            TopologyDescription.Subtopology sub = subs.get(subtopologyOf(task));
            if (sub == null) {
                problems.add("task " + task + ": no such sub-topology");
                continue;
            }
            Set<String> expectedNames = sub.nodes().stream()
                    .map(TopologyDescription.Node::name)
                    .collect(Collectors.toCollection(TreeSet::new));
            if (!expectedNames.equals(new TreeSet<>(decisions.keySet()))) {
                problems.add("task " + task + ": explainNodes lists " + new TreeSet<>(decisions.keySet())
                        + ", the sub-topology has " + expectedNames);
            }
            Set<String> top = new TreeSet<>();
            boolean anySerial = false;
            boolean allSerial = true;
            for (TopologyDescription.Node n : sub.nodes()) {
                String decision = decisions.get(n.name());
                if (decision == null) {
                    continue;
                }
                if (!decision.equals(PARALLEL) && !isSerial(decision)) {
                    problems.add("task " + task + " node " + n.name() + ": malformed decision \"" + decision + "\"");
                    continue;
                }
                if (isSerial(decision)) {
                    anySerial = true;
                    for (TopologyDescription.Node s : n.successors()) {
                        if (!isSerial(decisions.get(s.name()))) {
                            problems.add("task " + task + ": " + s.name() + " is \"" + decisions.get(s.name())
                                    + "\" below serial " + n.name());
                        }
                    }
                    if (n.predecessors().stream().noneMatch(p -> isSerial(decisions.get(p.name())))) {
                        top.add(n.name());
                    }
                } else {
                    allSerial = false;
                }
            }
            String summary = explain.get(task);
            if (summary == null) {
                continue;
            }
            if (!anySerial) {
                if (!summary.equals(PARALLEL)) {
                    problems.add("task " + task + ": every node parallel but explain says \"" + summary + "\"");
                }
            } else if (summary.startsWith(MIXED)) {
                Set<String> listed =
                        new TreeSet<>(List.of(summary.substring(MIXED.length()).split(", ")));
                if (!listed.equals(top)) {
                    problems.add("task " + task + ": explain names " + listed + " as the serial region's top, "
                            + "explainNodes gives " + top);
                }
            } else if (!(allSerial && summary.startsWith("serial: "))) {
                problems.add("task " + task + ": explain \"" + summary + "\" does not match explainNodes (top serial "
                        + top + ")");
            }
        }
        return problems;
    }

    /** Top-most serial node names of a task as explain lists them (empty for "parallel"). */
    static Set<String> listedTop(String summary) {
        if (summary == null || !summary.startsWith(MIXED)) {
            return Set.of();
        }
        return new TreeSet<>(List.of(summary.substring(MIXED.length()).split(", ")));
    }
}
