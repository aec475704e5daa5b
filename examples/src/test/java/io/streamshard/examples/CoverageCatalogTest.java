package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.examples.CoverageCatalog.Case;
import io.streamshard.examples.CoverageCatalog.Names;
import io.streamshard.examples.CoverageCatalog.Out;
import io.streamshard.examples.Explain.NodeRule;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.kafka.streams.TopologyDescription;
import org.junit.jupiter.api.Test;

/**
 * The catalog and the explain checks without a broker: every node rule, serial-region top and
 * output of a case exists in its topology, the rules agree with the topology's shape (nothing
 * declared parallel below a node declared serial), and the explain checks accept an
 * explainNodes answer that follows the contract and reject ones that break it.
 */
class CoverageCatalogTest {

    private static TopologyDescription describe(Case c) {
        return c.topology()
                .apply(new Names("-x", "-ss", new MatrixRun.Violations()))
                .describe();
    }

    @Test
    void atLeastTwelveCasesWithDistinctIds() {
        List<Case> cases = CoverageCatalog.cases();
        assertThat(cases).hasSizeGreaterThanOrEqualTo(12);
        assertThat(cases.stream().map(Case::id).collect(Collectors.toSet())).hasSize(cases.size());
    }

    @Test
    void everyRuleTopAndOutputNamesSomethingInItsTopology() {
        for (Case c : CoverageCatalog.cases()) {
            TopologyDescription d = describe(c);
            Map<String, TopologyDescription.Node> nodes = Explain.nodesByName(d);
            for (NodeRule rule : c.rules()) {
                assertThat(Explain.resolve(d, rule))
                        .as("%s rule %s in %s", c.id(), rule, d)
                        .isNotEmpty();
            }
            assertThat(nodes.keySet()).as("%s serial-region tops", c.id()).containsAll(c.topSerial());
            Set<String> sinks = nodes.values().stream()
                    .filter(n -> n instanceof TopologyDescription.Sink)
                    .map(n -> ((TopologyDescription.Sink) n).topic())
                    .collect(Collectors.toSet());
            for (Out o : c.outputs()) {
                assertThat(sinks).as("%s output", c.id()).contains(o.name() + "-x-ss");
            }
            assertThat(c.allParallel() && !c.topSerial().isEmpty())
                    .as("%s: all parallel with a serial top", c.id())
                    .isFalse();
        }
    }

    /**
     * explainNodes as the contract gives it, from the case's rules: the nodes the rules call
     * serial and everything below them are in the serial region, every other node is parallel.
     */
    private static Map<String, Map<String, String>> modelNodes(Case c, TopologyDescription d) {
        Set<String> serial = new HashSet<>();
        Deque<TopologyDescription.Node> todo = new ArrayDeque<>();
        Map<String, TopologyDescription.Node> byName = Explain.nodesByName(d);
        for (NodeRule rule : c.rules()) {
            if (!rule.parallel()) {
                Explain.resolve(d, rule).forEach(n -> todo.add(byName.get(n)));
            }
        }
        while (!todo.isEmpty()) {
            TopologyDescription.Node n = todo.pop();
            if (serial.add(n.name())) {
                todo.addAll(n.successors());
            }
        }
        Map<String, Map<String, String>> tasks = new TreeMap<>();
        for (TopologyDescription.Subtopology s : d.subtopologies()) {
            for (int p = 0; p < CoverageCatalog.PARTITIONS; p++) {
                Map<String, String> m = new LinkedHashMap<>();
                for (TopologyDescription.Node n : s.nodes()) {
                    m.put(n.name(), serial.contains(n.name()) ? Explain.SERIAL_REGION + "model" : Explain.PARALLEL);
                }
                tasks.put(s.id() + "_" + p, m);
            }
        }
        return tasks;
    }

    /** explain as the contract derives it from explainNodes. */
    private static Map<String, String> modelExplain(TopologyDescription d, Map<String, Map<String, String>> nodes) {
        Map<String, String> explain = new TreeMap<>();
        Map<String, TopologyDescription.Node> byName = Explain.nodesByName(d);
        nodes.forEach((task, m) -> {
            Set<String> top = new TreeSet<>();
            m.forEach((name, decision) -> {
                if (Explain.isSerial(decision)
                        && byName.get(name).predecessors().stream().noneMatch(p -> Explain.isSerial(m.get(p.name())))) {
                    top.add(name);
                }
            });
            explain.put(task, top.isEmpty() ? Explain.PARALLEL : Explain.MIXED + String.join(", ", top));
        });
        return explain;
    }

    @Test
    void theRulesAgreeWithTheTopologyShape() {
        for (Case c : CoverageCatalog.cases()) {
            TopologyDescription d = describe(c);
            Map<String, Map<String, String>> nodes = modelNodes(c, d);
            Map<String, String> explain = modelExplain(d, nodes);
            // A parallel rule on a node below a serial one fails here.
            assertThat(Explain.checkRules(d, nodes, c.rules()))
                    .as("%s rules vs the model; %s", c.id(), d)
                    .isEmpty();
            assertThat(Explain.checkConsistency(d, explain, nodes))
                    .as("%s", c.id())
                    .isEmpty();
            for (String top : c.topSerial()) {
                assertThat(explain.values().stream()
                                .anyMatch(e -> Explain.listedTop(e).contains(top)))
                        .as("%s: %s a top of the serial region in %s", c.id(), top, explain)
                        .isTrue();
            }
            if (c.allParallel()) {
                assertThat(explain.values()).as(c.id()).containsOnly(Explain.PARALLEL);
            }
        }
    }

    @Test
    void theChecksRejectAnswersThatBreakTheContract() {
        Case c = CoverageCatalog.byId("c04");
        TopologyDescription d = describe(c);
        Map<String, Map<String, String>> nodes = modelNodes(c, d);
        Map<String, String> explain = modelExplain(d, nodes);

        // A node below the serial region's top reported parallel.
        Map<String, Map<String, String>> broken = copy(nodes);
        broken.get("0_0").put("c04-final-fmt", Explain.PARALLEL);
        assertThat(Explain.checkRules(d, broken, c.rules())).isNotEmpty();
        assertThat(Explain.checkConsistency(d, explain, broken)).anyMatch(p -> p.contains("below serial"));

        // The slow step reported serial.
        broken = copy(nodes);
        broken.get("0_1").put("c04-slow", Explain.SERIAL_REGION + "x");
        assertThat(Explain.checkRules(d, broken, c.rules())).anyMatch(p -> p.contains("c04-slow"));

        // explain naming the wrong top.
        Map<String, String> wrong = new TreeMap<>(explain);
        wrong.put("0_2", Explain.MIXED + "c04-suppress");
        assertThat(Explain.checkConsistency(d, wrong, nodes)).anyMatch(p -> p.contains("0_2"));

        // A node missing from explainNodes.
        broken = copy(nodes);
        broken.get("0_3").remove("c04-count");
        assertThat(Explain.checkConsistency(d, explain, broken)).anyMatch(p -> p.contains("0_3"));
    }

    private static Map<String, Map<String, String>> copy(Map<String, Map<String, String>> nodes) {
        Map<String, Map<String, String>> m = new TreeMap<>();
        nodes.forEach((t, n) -> m.put(t, new LinkedHashMap<>(n)));
        return m;
    }
}
