package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import io.streamshard.examples.CoverageCatalog.Case;
import io.streamshard.examples.CoverageCatalog.Names;
import io.streamshard.examples.CoverageCatalog.Out;
import io.streamshard.examples.MatrixRun.App;
import io.streamshard.examples.MatrixRun.Snapshot;
import io.streamshard.examples.MatrixRun.Violations;
import io.streamshard.examples.OutputCompare.Rec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.TestFactory;

/**
 * The coverage matrix: every topology of {@link CoverageCatalog} runs stock
 * ({@code streamshard.enabled=false}) and with streamshard, at the same time, on the same input
 * topics (own application ids, state directories and output topics), and the outputs, store
 * contents and explanations are checked:
 * <ul>
 *   <li>each output as its case declares: EXACT (serial region: per partition the same records in
 *       the same order), PARALLEL (same multiset per partition, same values per key in order),
 *       PARALLEL_NO_TS, FINAL (same last value per key);</li>
 *   <li>every queryable store has the same content in both runs (interactive queries before close);</li>
 *   <li>streamshard is active in the streamshard run only;</li>
 *   <li>explainNodes puts the named nodes in the expected region, and explain agrees with it.</li>
 * </ul>
 * Each case is one container of dynamic tests, so a failing explain check does not hide the
 * output comparison. {@code -Dmatrix.cases=c04,c05} runs a subset.
 */
class CoverageMatrixIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final Duration RUN_TIMEOUT = Duration.ofMinutes(3);

    /** Both runs of one case, filled by its first dynamic test. */
    static final class Result {
        Case c;
        TopologyDescription description;
        Snapshot stock;
        Snapshot shard;
        Names stockNames;
        Names shardNames;
        final Map<String, List<Rec>> stockOut = new LinkedHashMap<>();
        final Map<String, List<Rec>> shardOut = new LinkedHashMap<>();
        Throwable failed;

        void require() {
            assertThat(failed).as("the runs of this case failed").isNull();
            assertThat(stock).as("the runs of this case did not complete").isNotNull();
        }
    }

    @TestFactory
    Stream<DynamicContainer> matrix() {
        Set<String> only = Set.of(System.getProperty("matrix.cases", "").split(",")).stream()
                .filter(s -> !s.isBlank())
                .collect(Collectors.toSet());
        return CoverageCatalog.cases().stream()
                .filter(c -> only.isEmpty() || only.contains(c.id()))
                .map(CoverageMatrixIT::container);
    }

    private static DynamicContainer container(Case c) {
        Result r = new Result();
        r.c = c;
        String modes = c.outputs().stream().map(o -> o.name() + " " + o.mode()).collect(Collectors.joining(", "));
        return dynamicContainer(
                c.toString(),
                Stream.of(
                        dynamicTest("stock and streamshard run to the end", () -> {
                            try {
                                run(r);
                            } catch (Throwable t) {
                                r.failed = t;
                                throw t;
                            }
                        }),
                        dynamicTest("outputs equal stock: " + modes, () -> {
                            r.require();
                            List<String> problems = new ArrayList<>();
                            for (Out o : c.outputs()) {
                                List<Rec> stock = r.stockOut.get(o.name());
                                if (stock.isEmpty()) {
                                    problems.add(o.name() + ": the stock run wrote nothing (catalog error)");
                                }
                                for (String p : OutputCompare.compare(o.mode(), stock, r.shardOut.get(o.name()))) {
                                    problems.add(o.name() + " (" + o.mode() + "): " + p);
                                }
                            }
                            assertThat(problems).as("output differences").isEmpty();
                        }),
                        dynamicTest("store contents equal stock: " + c.stores(), () -> {
                            r.require();
                            List<String> problems = new ArrayList<>();
                            for (var s : c.stores()) {
                                if (r.stock.stores().get(s.name()).isEmpty()) {
                                    problems.add(s.name() + ": empty in the stock run (catalog error)");
                                }
                                problems.addAll(OutputCompare.compareStores(
                                        s.name(),
                                        r.stock.stores().get(s.name()),
                                        r.shard.stores().get(s.name())));
                            }
                            assertThat(problems).as("store differences").isEmpty();
                        }),
                        dynamicTest("processors saw no violations", () -> {
                            r.require();
                            assertThat(r.stock.violations()).as("stock").isEmpty();
                            assertThat(r.shard.violations()).as("streamshard").isEmpty();
                        }),
                        dynamicTest(
                                slowParallel(c)
                                        ? "the slow step ran on streamshard workers"
                                        : "the slow step is in the serial region (its thread is not checked)",
                                () -> {
                                    r.require();
                                    assertThat(r.stockNames.slowOnWorkers.get())
                                            .as("stock: slow step on workers")
                                            .isZero();
                                    long workers = r.shardNames.slowOnWorkers.get();
                                    long elsewhere = r.shardNames.slowElsewhere.get();
                                    if (slowParallel(c)) {
                                        // Records too cheap for a worker run on the StreamThread; these sleep.
                                        assertThat(workers)
                                                .as(
                                                        "streamshard: slow step records on workers (%d elsewhere)",
                                                        elsewhere)
                                                .isGreaterThan(elsewhere);
                                    }
                                }),
                        dynamicTest("StreamShard.active in the streamshard run only", () -> {
                            r.require();
                            assertThat(r.stock.active()).as("stock run active").isFalse();
                            assertThat(r.stock.explain())
                                    .as("stock run explain")
                                    .isEmpty();
                            assertThat(r.shard.active())
                                    .as("streamshard run active")
                                    .isTrue();
                        }),
                        dynamicTest("explainNodes: " + c.rules(), () -> {
                            r.require();
                            assertThat(r.shard.explainNodesMissing())
                                    .as("explainNodes")
                                    .isNull();
                            assertThat(r.shard.explainNodes())
                                    .as("explainNodes")
                                    .isNotEmpty();
                            assertThat(Explain.checkRules(r.description, r.shard.explainNodes(), c.rules()))
                                    .as(
                                            "region of the named nodes; explainNodes %s; topology %s",
                                            r.shard.explainNodes(), r.description)
                                    .isEmpty();
                        }),
                        dynamicTest(
                                "explain agrees with explainNodes"
                                        + (c.allParallel()
                                                ? ", every task parallel"
                                                : ", serial region top " + c.topSerial()),
                                () -> {
                                    r.require();
                                    Map<String, String> explain = r.shard.explain();
                                    assertThat(explain).as("explain").isNotEmpty();
                                    List<String> problems = new ArrayList<>();
                                    if (c.allParallel()) {
                                        explain.forEach((task, d) -> {
                                            if (!d.equals(Explain.PARALLEL)) {
                                                problems.add("task " + task + ": \"" + d + "\"");
                                            }
                                        });
                                    }
                                    for (String top : c.topSerial()) {
                                        boolean listedSomewhere = false;
                                        for (Map.Entry<String, String> t : explain.entrySet()) {
                                            TopologyDescription.Subtopology sub = Explain.subtopologies(r.description)
                                                    .get(Explain.subtopologyOf(t.getKey()));
                                            boolean has = sub != null
                                                    && sub.nodes().stream()
                                                            .anyMatch(n ->
                                                                    n.name().equals(top));
                                            if (has) {
                                                listedSomewhere = true;
                                                if (!Explain.listedTop(t.getValue())
                                                        .contains(top)) {
                                                    problems.add("task " + t.getKey() + ": \"" + t.getValue()
                                                            + "\" does not name " + top
                                                            + " as the top of its serial region");
                                                }
                                            }
                                        }
                                        if (!listedSomewhere) {
                                            problems.add(
                                                    "no task has node " + top + " (tasks " + explain.keySet() + ")");
                                        }
                                    }
                                    if (r.shard.explainNodes() != null) {
                                        problems.addAll(Explain.checkConsistency(
                                                r.description, explain, r.shard.explainNodes()));
                                    } else {
                                        problems.add(r.shard.explainNodesMissing());
                                    }
                                    assertThat(problems)
                                            .as("explain %s", explain)
                                            .isEmpty();
                                })));
    }

    /** Whether the case declares its slow step parallel. */
    private static boolean slowParallel(Case c) {
        return c.rules().stream()
                .anyMatch(rule -> rule.parallel() && rule.name().endsWith("-slow"));
    }

    /** {@code -Dmatrix.sequential=true}: stock first, then streamshard, instead of both at once. */
    private static final boolean SEQUENTIAL = Boolean.getBoolean("matrix.sequential");

    private static void run(Result r) throws Exception {
        Case c = r.c;
        String suffix = Inputs.suffix(c.id());
        Names stockNames = new Names(suffix, "-stock", new Violations());
        Names shardNames = new Names(suffix, "-ss", new Violations());
        r.stockNames = stockNames;
        r.shardNames = shardNames;
        MatrixRun.prepare(BOOTSTRAP, c, suffix, stockNames, shardNames);

        Topology stockTopology = c.topology().apply(stockNames);
        Topology shardTopology = c.topology().apply(shardNames);
        r.description = shardTopology.describe();
        Properties ps = MatrixRun.config(BOOTSTRAP, "mx" + suffix + "-stock", false);
        Properties pss = MatrixRun.config(BOOTSTRAP, "mx" + suffix + "-ss", true);
        if (!c.parallelProcessors().isEmpty()) {
            ps.put("streamshard.parallel.processors", c.parallelProcessors());
            pss.put("streamshard.parallel.processors", c.parallelProcessors());
        }
        List<String> stockOutputs =
                c.outputs().stream().map(o -> stockNames.out(o.name())).toList();
        List<String> shardOutputs =
                c.outputs().stream().map(o -> shardNames.out(o.name())).toList();
        long t0 = System.nanoTime();
        if (SEQUENTIAL) {
            // One after the other, so their times compare (docs/benchmarks.md, coverage table).
            try (App stock = new App(stockTopology, ps)) {
                MatrixRun.Completion stockDone = stock.completion(c.groupInputs(suffix), stockOutputs);
                MatrixRun.awaitAll(BOOTSTRAP, RUN_TIMEOUT, List.of(stockDone));
                stock.done(stockDone);
                r.stock = stock.snapshot(c.stores(), stockNames.violations);
            }
            try (App shard = new App(shardTopology, pss)) {
                MatrixRun.Completion shardDone = shard.completion(c.groupInputs(suffix), shardOutputs);
                MatrixRun.awaitAll(BOOTSTRAP, RUN_TIMEOUT, List.of(shardDone));
                shard.done(shardDone);
                r.shard = shard.snapshot(c.stores(), shardNames.violations);
            }
        } else {
            try (App stock = new App(stockTopology, ps);
                    App shard = new App(shardTopology, pss)) {
                MatrixRun.Completion stockDone = stock.completion(c.groupInputs(suffix), stockOutputs);
                MatrixRun.Completion shardDone = shard.completion(c.groupInputs(suffix), shardOutputs);
                MatrixRun.awaitAll(BOOTSTRAP, RUN_TIMEOUT, List.of(stockDone, shardDone));
                stock.done(stockDone);
                shard.done(shardDone);
                r.stock = stock.snapshot(c.stores(), stockNames.violations);
                r.shard = shard.snapshot(c.stores(), shardNames.violations);
            }
        }
        for (Out o : c.outputs()) {
            r.stockOut.put(o.name(), OutputCompare.read(BOOTSTRAP, stockNames.out(o.name()), o.longValues()));
            r.shardOut.put(o.name(), OutputCompare.read(BOOTSTRAP, shardNames.out(o.name()), o.longValues()));
        }
        System.out.printf(
                "matrix %s: slow step %.0f/s stock, %.0f/s streamshard (%.1fx); stock %d ms, streamshard %d "
                        + "ms (slow step %d on workers, %d elsewhere), %d s in all; outputs %s; explain %s%n",
                c.id(),
                stockNames.slowRate(),
                shardNames.slowRate(),
                shardNames.slowRate() / Math.max(1e-9, stockNames.slowRate()),
                r.stock.millis(),
                r.shard.millis(),
                shardNames.slowOnWorkers.get(),
                shardNames.slowElsewhere.get(),
                (System.nanoTime() - t0) / 1_000_000_000L,
                r.stockOut.entrySet().stream()
                        .map(e -> e.getKey() + "=" + e.getValue().size() + "/"
                                + r.shardOut.get(e.getKey()).size())
                        .collect(Collectors.joining(", ")),
                r.shard.explain());
    }
}
