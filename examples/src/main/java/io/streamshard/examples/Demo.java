package io.streamshard.examples;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The demo: the enrichment app (slow call → leftJoin the customers table → count and sum per
 * customer), unmodified, run stock and then with the streamshard agent, each in its own JVM on its
 * own copy of the input on the local broker. Prints records/s for each next to the ideal line
 * ({@code workers / call time}) and checks that both produced exactly the expected counts, totals,
 * tiers and per-customer order.
 *
 * <p>Customers are uniform over 100,000, so per-customer order is not what limits the run. The
 * app runs with Kafka Streams' default commit interval (30 s), as applications do. Stock gets a
 * hundredth of the orders (it runs at about 1 / call time and would take most of an hour for the
 * full input); both rates are steady-state rates: the output written between the moments it
 * passed 10% and 90% of the input, over the time between (JVM start, group join, restoration, a
 * JIT-cold start and the tail are excluded).
 *
 * <p>{@code Demo <bootstrap> <agent-jar or "-"> [records] [call-ms] [workers]}
 */
public final class Demo {
    private Demo() {}

    static final int CUSTOMERS = 100_000;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String agent = args.length > 1 ? args[1] : "-";
        int records = args.length > 2 ? Integer.parseInt(args[2]) : 600_000;
        long callMs = args.length > 3 ? Long.parseLong(args[3]) : 5;
        int workers = args.length > 4 ? Integer.parseInt(args[4]) : 64;
        String run = Long.toString(System.currentTimeMillis(), 36);

        List<Result> results = new ArrayList<>();
        boolean ok = true;
        for (String mode : agent.equals("-") ? List.of("stock") : List.of("stock", "streamshard")) {
            String suffix = "-" + mode + "-" + run;
            int n = mode.equals("stock") ? Math.max(500, records / 100) : records;
            EnrichmentApp.prepare(bootstrap, suffix, 4, CUSTOMERS);
            OrderProducer.Expected expected =
                    OrderProducer.produce(bootstrap, EnrichmentApp.INPUT + suffix, n, CUSTOMERS, 0.0, 42);
            Result r = runApp(bootstrap, mode, agent, suffix, n, callMs, workers);
            String problems = verify(bootstrap, suffix, expected);
            r = new Result(r.mode, n, r.seconds, r.recordsPerSecond, problems);
            results.add(r);
            ok &= problems.isEmpty();
        }
        double ideal = workers * 1000.0 / callMs;
        System.out.printf(
                "%nOrders over 4 partitions, customers uniform over %,d, a %d ms remote call per order, then a "
                        + "leftJoin with the customers table and a count and a sum per customer; one stream thread (the default)%n",
                CUSTOMERS, callMs);
        for (Result r : results) {
            System.out.printf(
                    "  %-12s %,8.0f records/s  (%,d orders; %.1f s from 10%% to 90%% of the output)  %s%n",
                    r.mode,
                    r.recordsPerSecond,
                    r.records,
                    r.seconds,
                    r.problems.isEmpty() ? "output verified" : "FAILED: " + r.problems);
        }
        System.out.printf(
                "  %-12s %,8.0f records/s  (%d workers / %d ms; stock's line is 1 / %d ms = %,.0f)%n",
                "ideal", ideal, workers, callMs, callMs, 1000.0 / callMs);
        if (results.size() == 2) {
            double shard = results.get(1).recordsPerSecond;
            System.out.printf(
                    "  streamshard / stock = %.1fx, streamshard / ideal = %.2f%n",
                    shard / results.get(0).recordsPerSecond, shard / ideal);
        }
        System.exit(ok ? 0 : 1);
    }

    record Result(String mode, int records, double seconds, double recordsPerSecond, String problems) {}

    /**
     * Runs the app in a child JVM until its group has committed the whole input. The rate is the
     * enriched output written between the moments it passed 10% and 90% of the input, over the
     * time between: the steady-state processing rate (every order gives one enriched record, sent
     * as it is processed; commits, every 30 s, would measure little).
     */
    static Result runApp(
            String bootstrap, String mode, String agent, String suffix, int records, long callMs, int workers)
            throws Exception {
        String appId = "enrichment" + suffix;
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx1g");
        cmd.add("-Dstreamshard.demo.default.commit=true");
        String status = null;
        if (mode.equals("streamshard")) {
            cmd.add("-javaagent:" + agent);
            try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                status = "127.0.0.1:" + free.getLocalPort();
            }
            cmd.add("-Dstreamshard.demo.status=" + status);
            System.out.printf(
                    "streamshard's live status while it runs: http://%s/  (or %s %s --watch)%n", status, CLI, status);
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(DemoApp.class.getName());
        cmd.addAll(List.of(bootstrap, appId, suffix, Long.toString(callMs), Integer.toString(workers)));
        File log =
                Files.createTempFile("streamshard-demo-" + mode + "-", ".log").toFile();
        Process p = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(log)
                .start();
        String watched = status;
        boolean[] shown = {watched == null};
        // [nanoTime, output] when the output first reached 10% and 90% of the input
        long[] at10 = null;
        long[] at90 = null;
        try (OutputProgress output = new OutputProgress(bootstrap, EnrichmentApp.ENRICHED + suffix)) {
            long[][] marks = new long[2][];
            waitForCommitted(
                    bootstrap,
                    appId,
                    EnrichmentApp.INPUT + suffix,
                    records,
                    Duration.ofMinutes(15),
                    () -> {
                        if (!p.isAlive()) {
                            throw new IllegalStateException("the app exited early; its log: " + log);
                        }
                    },
                    committed -> {
                        long written = output.written();
                        long now = System.nanoTime();
                        if (marks[0] == null && written >= records / 10) {
                            marks[0] = new long[] {now, written};
                        }
                        if (marks[1] == null && written >= records * 9L / 10) {
                            marks[1] = new long[] {now, written};
                        }
                        if (!shown[0] && written >= records / 3) {
                            shown[0] = true;
                            showStatus(watched);
                        }
                    });
            at10 = marks[0];
            at90 = marks[1];
        } finally {
            p.destroy();
            p.waitFor();
        }
        if (at10 == null || at90 == null || at90[0] <= at10[0]) {
            throw new IllegalStateException(
                    "the output passed 10% and 90% of the input at the same poll; more records needed");
        }
        double seconds = (at90[0] - at10[0]) / 1e9;
        return new Result(mode, records, seconds, (at90[1] - at10[1]) / seconds, "");
    }

    /** How many records a topic holds (the sum of its partitions' end offsets), read as it grows. */
    static final class OutputProgress implements AutoCloseable {
        private final KafkaConsumer<byte[], byte[]> consumer;
        private final List<TopicPartition> partitions = new ArrayList<>();

        OutputProgress(String bootstrap, String topic) {
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("key.deserializer", ByteArrayDeserializer.class.getName());
            p.put("value.deserializer", ByteArrayDeserializer.class.getName());
            consumer = new KafkaConsumer<>(p);
            consumer.partitionsFor(topic).forEach(i -> partitions.add(new TopicPartition(topic, i.partition())));
        }

        long written() {
            return consumer.endOffsets(partitions).values().stream()
                    .mapToLong(Long::longValue)
                    .sum();
        }

        @Override
        public void close() {
            consumer.close();
        }
    }

    /**
     * Waits until {@code group} has committed {@code records} offsets of {@code topic}; {@code check}
     * may throw. Returns {@code [nanoTime of the first commit, records committed by then, nanoTime
     * of the last]}.
     */
    public static long[] waitForCommitted(
            String bootstrap, String group, String topic, long records, Duration timeout, Runnable check)
            throws Exception {
        return waitForCommitted(bootstrap, group, topic, records, timeout, check, committed -> {});
    }

    /** The status client, as the demo script builds it. */
    static final String CLI = System.getProperty("streamshard.status.cli", "target/release/streamshard-status");

    /** Prints what the status listener at {@code addr} shows now (the streamshard-status table), if the client is built. */
    static void showStatus(String addr) {
        if (!Files.isExecutable(Path.of(CLI))) {
            return;
        }
        try {
            Process c = new ProcessBuilder(CLI, addr).redirectErrorStream(true).start();
            String out = new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (c.waitFor(10, TimeUnit.SECONDS) && c.exitValue() == 0) {
                System.out.println("a third of the way through, " + CLI + " " + addr + " shows:");
                out.lines().forEach(l -> System.out.println("  | " + l));
            }
        } catch (IOException | InterruptedException e) {
            // the demo goes on without it
        }
    }

    /** As above; {@code onProgress} gets the committed count at every poll. */
    public static long[] waitForCommitted(
            String bootstrap,
            String group,
            String topic,
            long records,
            Duration timeout,
            Runnable check,
            LongConsumer onProgress)
            throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        long deadline = System.nanoTime() + timeout.toNanos();
        long firstAt = 0;
        long firstCount = 0;
        Map<TopicPartition, OffsetAndMetadata> committed = Map.of();
        try (Admin admin = Admin.create(p)) {
            while (System.nanoTime() < deadline) {
                check.run();
                committed = admin.listConsumerGroupOffsets(group)
                        .partitionsToOffsetAndMetadata()
                        .get();
                long sum = committed.entrySet().stream()
                        .filter(e -> e.getKey().topic().equals(topic) && e.getValue() != null)
                        .mapToLong(e -> e.getValue().offset())
                        .sum();
                long now = System.nanoTime();
                onProgress.accept(sum);
                if (sum > 0 && firstAt == 0) {
                    firstAt = now;
                    firstCount = sum;
                }
                if (sum >= records) {
                    return new long[] {firstAt, firstCount, now};
                }
                Thread.sleep(50);
            }
            throw new IllegalStateException(
                    "the app did not commit " + records + " records of " + topic + " within " + timeout
                            + "; committed/end offset per partition (a log start above 0: records deleted, by retention?): "
                            + progress(admin, topic, committed));
        }
    }

    /**
     * "p0 12/300 (log start 0), p1 -/300 (log start 0)": what {@code committed} holds for each
     * partition of {@code topic}, its end, and its log start (above 0 once records were deleted).
     */
    private static String progress(Admin admin, String topic, Map<TopicPartition, OffsetAndMetadata> committed) {
        try {
            List<TopicPartition> partitions = new ArrayList<>();
            admin.describeTopics(List.of(topic))
                    .allTopicNames()
                    .get()
                    .get(topic)
                    .partitions()
                    .forEach(i -> partitions.add(new TopicPartition(topic, i.partition())));
            partitions.sort(Comparator.comparingInt(TopicPartition::partition));
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> starts = offsets(admin, partitions, true);
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends = offsets(admin, partitions, false);
            return partitions.stream()
                    .map(tp -> {
                        OffsetAndMetadata c = committed.get(tp);
                        return "p" + tp.partition() + " " + (c == null ? "-" : Long.toString(c.offset())) + "/"
                                + ends.get(tp).offset() + " (log start "
                                + starts.get(tp).offset() + ")";
                    })
                    .collect(Collectors.joining(", "));
        } catch (Exception e) {
            return "unknown (" + e + ")";
        }
    }

    /** The partitions' log start ({@code earliest}) or end offsets. */
    private static Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> offsets(
            Admin admin, List<TopicPartition> partitions, boolean earliest) throws Exception {
        Map<TopicPartition, OffsetSpec> spec = new HashMap<>();
        partitions.forEach(tp -> spec.put(tp, earliest ? OffsetSpec.earliest() : OffsetSpec.latest()));
        return admin.listOffsets(spec).all().get();
    }

    /** Reads the outputs and compares them with the input; returns "" or what is wrong. */
    public static String verify(String bootstrap, String suffix, OrderProducer.Expected expected) throws Exception {
        List<String> problems = new ArrayList<>();
        Map<String, Long> counts = lastValues(bootstrap, EnrichmentApp.COUNTS + suffix);
        Map<String, Long> totals = lastValues(bootstrap, EnrichmentApp.TOTALS + suffix);
        if (!counts.equals(expected.counts())) {
            problems.add(differences("count", expected.counts(), counts));
        }
        if (!totals.equals(expected.totals())) {
            problems.add(differences("total", expected.totals(), totals));
        }
        // Per-customer order in the enriched stream: sequence numbers 1, 2, 3, ... per key. The
        // tier is the customer's own (or "new" if the order overtook the table's first load).
        Map<String, Long> lastSeq = new HashMap<>();
        long outOfOrder = 0;
        long seen = 0;
        long wrongTier = 0;
        for (ConsumerRecord<String, String> r :
                readAll(bootstrap, EnrichmentApp.ENRICHED + suffix, new StringDeserializer())) {
            String[] fields = r.value().split(",");
            long seq = Long.parseLong(fields[0]);
            String tier = fields[fields.length - 1];
            if (!tier.equals("new") && !tier.equals(OrderProducer.tierOf(r.key()))) {
                wrongTier++;
            }
            long prev = lastSeq.getOrDefault(r.key(), 0L);
            if (seq != prev + 1) {
                outOfOrder++;
            }
            lastSeq.put(r.key(), seq);
            seen++;
        }
        long expectedRecords =
                expected.counts().values().stream().mapToLong(Long::longValue).sum();
        if (seen != expectedRecords) {
            problems.add("enriched has " + seen + " records, expected " + expectedRecords);
        }
        if (outOfOrder > 0) {
            problems.add(outOfOrder + " enriched records out of per-customer order");
        }
        if (wrongTier > 0) {
            problems.add(wrongTier + " enriched records with another customer's tier");
        }
        return String.join("; ", problems);
    }

    private static String differences(String what, Map<String, Long> expected, Map<String, Long> actual) {
        List<String> diffs = expected.keySet().stream()
                .filter(k -> !expected.get(k).equals(actual.get(k)))
                .limit(5)
                .map(k -> k + " expected " + expected.get(k) + " got " + actual.get(k))
                .collect(Collectors.toList());
        return what + " mismatch for "
                + expected.keySet().stream()
                        .filter(k -> !expected.get(k).equals(actual.get(k)))
                        .count() + " customers (" + String.join(", ", diffs) + ")";
    }

    static Map<String, Long> lastValues(String bootstrap, String topic) throws Exception {
        Map<String, Long> last = new HashMap<>();
        for (ConsumerRecord<String, Long> r : readAll(bootstrap, topic, new LongDeserializer())) {
            last.put(r.key(), r.value());
        }
        return last;
    }

    /** Every record of a topic, in partition order (read-committed). */
    public static <V> List<ConsumerRecord<String, V>> readAll(String bootstrap, String topic, Deserializer<V> values)
            throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("isolation.level", "read_committed");
        List<ConsumerRecord<String, V>> out = new ArrayList<>();
        try (Admin admin = Admin.create(p);
                KafkaConsumer<String, V> c = new KafkaConsumer<>(p, new StringDeserializer(), values)) {
            List<TopicPartition> parts =
                    admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().stream()
                            .map(i -> new TopicPartition(topic, i.partition()))
                            .toList();
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            parts.forEach(tp -> latest.put(tp, OffsetSpec.latest()));
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends =
                    admin.listOffsets(latest).all().get();
            c.assign(parts);
            c.seekToBeginning(parts);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (parts.stream().anyMatch(tp -> c.position(tp) < ends.get(tp).offset())) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("could not read " + topic + " to its end");
                }
                c.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
        return out;
    }
}
