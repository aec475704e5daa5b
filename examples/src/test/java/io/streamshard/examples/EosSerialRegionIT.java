package io.streamshard.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.examples.CoverageCatalog.Case;
import io.streamshard.examples.CoverageCatalog.Names;
import io.streamshard.examples.CoverageCatalog.Out;
import io.streamshard.examples.MatrixRun.App;
import io.streamshard.examples.OutputCompare.Rec;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;

/**
 * Exactly-once v2 with a serial region, through a hard crash: a catalog case runs stock in this
 * JVM, and with streamshard in a child JVM (with the agent) that is killed ({@code destroyForcibly})
 * mid-stream and restarted on the same state directory. Its committed output (read_committed)
 * must equal the stock run's exactly: the serial-region outputs record for record, windowed counts
 * once per window with the stock count, parallel-region outputs as the same multiset with the
 * same per-key order — nothing missing, nothing twice.
 */
class EosSerialRegionIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    /**
     * The child's slow step and workers: slow enough (4 workers at 8 ms: ~500 records/s, about five
     * seconds of input) that the kill lands while records are in flight. The child's per-task cap
     * is small, so that the commits (which cover what the serial region has run, with the region
     * paused) come all through the input, with records in flight and held sends at each: with the
     * default (1,000) the whole input would be in flight at once.
     */
    private static final int CHILD_SLOW_MS = 8;

    private static final int CHILD_WORKERS = 4;
    private static final int CHILD_MAX_INFLIGHT_PER_TASK = 40;
    /** c04's grace ({@code TimeWindows.ofSizeAndGrace(1 s, 300 ms)}). */
    private static final long C04_GRACE_MS = 300;

    @Test
    void windowedCountWithSuppressSurvivesACrashExactly() throws Exception {
        Case c04 = CoverageCatalog.byId("c04");
        // No record later than the grace here (c04's own feed has some 2.5 s late, which stock drops).
        // Kafka Streams keeps a window aggregate's stream time in the processor, not in a store: after
        // any restart it starts again from the first record read, so a record stock drops as late is
        // counted when it happens to be the first after the restart, with or without streamshard.
        // CoverageMatrixIT checks the late drops without a crash.
        c04 = c04.withFeeds(c04.feeds().stream()
                .map(f -> f.jitter(i -> Math.min(f.jitter().applyAsLong(i), C04_GRACE_MS - 50)))
                .toList());
        Map<String, List<Rec>>[] outs = crashAndCompare(c04);
        // Suppress: one final count per window, the stock count.
        Map<String, String> stockFinal = perWindow(outs[0].get("c04-final"));
        Map<String, String> shardFinal = perWindow(outs[1].get("c04-final"));
        assertThat(shardFinal).as("final count per window").isEqualTo(stockFinal);
    }

    @Test
    void streamTableJoinAndAggregateSurviveACrashExactly() throws Exception {
        crashAndCompare(CoverageCatalog.byId("c01"));
    }

    /**
     * A foreign-key left join on the workers (c14: rows moving between foreign keys, deletes, rows
     * without one, deleted products, then a groupBy count): its table and the counts end as stock's.
     */
    @Test
    void foreignKeyJoinAndCountSurviveACrashExactly() throws Exception {
        crashAndCompare(CoverageCatalog.byId("c14"));
    }

    /** key@window → count, failing on a window emitted twice. */
    private static Map<String, String> perWindow(List<Rec> recs) {
        Map<String, String> m = new TreeMap<>();
        List<String> twice = new ArrayList<>();
        for (Rec r : recs) {
            String window = r.value().substring(0, r.value().indexOf(':'));
            if (m.put(r.key() + "@" + window, r.value().substring(r.value().indexOf(':') + 1)) != null) {
                twice.add(r.key() + "@" + window);
            }
        }
        assertThat(twice).as("windows emitted twice by suppress").isEmpty();
        return m;
    }

    private static Process start(String appId, String suffix, String caseId, File stateDir, File log) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-javaagent:" + System.getProperty("streamshard.agent.jar"));
        cmd.add("-Dstreamshard.it.eos=true");
        cmd.add("-Dstreamshard.it.state.dir=" + stateDir);
        cmd.add("-Dmatrix.slow.ms=" + CHILD_SLOW_MS);
        cmd.add("-Dstreamshard.it.workers=" + CHILD_WORKERS);
        cmd.add("-Dstreamshard.it.max.inflight.per.task=" + CHILD_MAX_INFLIGHT_PER_TASK);
        cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        cmd.add("-Dorg.slf4j.simpleLogger.log.io.streamshard=info");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(CatalogApp.class.getName());
        cmd.addAll(List.of(BOOTSTRAP, appId, suffix, "-ss", caseId));
        return new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log))
                .start();
    }

    /** Returns {stock outputs, streamshard outputs} by output name, after asserting them equal. */
    @SuppressWarnings("unchecked")
    private static Map<String, List<Rec>>[] crashAndCompare(Case c) throws Exception {
        String suffix = Inputs.suffix("eos" + c.id());
        Names stockNames = new Names(suffix, "-stock", new MatrixRun.Violations());
        Names shardNames = new Names(suffix, "-ss", new MatrixRun.Violations());
        MatrixRun.prepare(BOOTSTRAP, c, suffix, stockNames, shardNames);
        List<String> inputs = c.groupInputs(suffix);
        long inputRecords;
        Properties admin = new Properties();
        admin.put("bootstrap.servers", BOOTSTRAP);
        try (Admin a = Admin.create(admin)) {
            inputRecords = MatrixRun.endOffsets(a, inputs).values().stream()
                    .mapToLong(Long::longValue)
                    .sum();
        }

        // Stock, exactly-once, in this JVM (no crash: the reference).
        Properties ps = MatrixRun.config(BOOTSTRAP, "it" + suffix + "-stock", false);
        ps.put("processing.guarantee", "exactly_once_v2");
        List<String> stockOutputs =
                c.outputs().stream().map(o -> stockNames.out(o.name())).toList();
        try (App stock = new App(c.topology().apply(stockNames), ps)) {
            stock.awaitDone(BOOTSTRAP, inputs, stockOutputs, Duration.ofMinutes(3));
        }

        // streamshard in a child JVM: killed mid-stream, restarted.
        String appId = "it" + suffix + "-ss";
        File state = Files.createTempDirectory("streamshard-eos-matrix").toFile();
        File log = Files.createTempFile("streamshard-eos-" + c.id(), ".log").toFile();
        List<String> shardOutputs =
                c.outputs().stream().map(o -> shardNames.out(o.name())).toList();
        Process first = start(appId, suffix, c.id(), state, log);
        long atKill;
        try (Admin a = Admin.create(admin);
                Children.Killer killer = new Children.Killer(first)) {
            long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
            while (MatrixRun.committed(a, appId, inputs) < inputRecords / 5) {
                assertThat(first.isAlive()).as("first run alive; log %s", log).isTrue();
                assertThat(System.nanoTime())
                        .as("first run made progress; log %s", log)
                        .isLessThan(deadline);
                Thread.sleep(10);
            }
            first.destroyForcibly().waitFor();
            atKill = MatrixRun.committed(a, appId, inputs);
        }
        assertThat(atKill)
                .as("killed mid-stream (committed %d of %d); log %s", atKill, inputRecords, log)
                .isLessThan(inputRecords);
        Process second = start(appId, suffix, c.id(), state, log);
        try {
            MatrixRun.awaitDone(
                    BOOTSTRAP,
                    appId,
                    inputs,
                    shardOutputs,
                    Duration.ofMinutes(3),
                    () -> assertThat(second.isAlive())
                            .as("second run alive; log %s", log)
                            .isTrue());
        } finally {
            second.destroy();
            second.waitFor();
        }
        assertThat(Files.readString(log.toPath()))
                .as("the child ran with streamshard active; log %s", log)
                .contains("CatalogApp: running; active true");
        Children.assertWorkerKind(log);
        System.out.printf(
                "eos %s: killed at %d of %d input records committed; child log %s%n",
                c.id(), atKill, inputRecords, log);

        Map<String, List<Rec>> stockOut = new TreeMap<>();
        Map<String, List<Rec>> shardOut = new TreeMap<>();
        SoftAssertions soft = new SoftAssertions();
        for (Out o : c.outputs()) {
            List<Rec> s = OutputCompare.read(BOOTSTRAP, stockNames.out(o.name()), o.longValues());
            List<Rec> t = OutputCompare.read(BOOTSTRAP, shardNames.out(o.name()), o.longValues());
            stockOut.put(o.name(), s);
            shardOut.put(o.name(), t);
            soft.assertThat(s).as("%s: stock output", o.name()).isNotEmpty();
            soft.assertThat(OutputCompare.compare(o.mode(), s, t))
                    .as("%s (%s) after the crash; log %s", o.name(), o.mode(), log)
                    .isEmpty();
        }
        soft.assertAll();
        return new Map[] {stockOut, shardOut};
    }
}
