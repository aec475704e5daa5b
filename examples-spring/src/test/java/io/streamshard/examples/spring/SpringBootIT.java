package io.streamshard.examples.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;

/**
 * The Spring Boot example as users run it: {@code java -javaagent:streamshard-agent.jar -jar app.jar}
 * (Boot's nested-jar class loader, Kafka Streams only inside the fat jar), on the test broker.
 * Every task runs parallel, per the application's own {@code StreamShard.explain} call, and every
 * customer's final count and total are exact.
 */
class SpringBootIT {
    private static final String BOOTSTRAP = System.getProperty("streamshard.it.bootstrap", "127.0.0.1:9092");
    private static final int RECORDS = 3000;
    private static final int CUSTOMERS = 300;
    private static final int PARTITIONS = 4;

    @Test
    void theFatJarRunsEveryTaskParallelWithExactResults() throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        runsEveryTaskParallelWithExactResults(
                List.of(
                        java.toString(),
                        "-javaagent:" + System.getProperty("streamshard.agent.jar"),
                        "-jar",
                        System.getProperty("streamshard.app.jar")),
                Map.of());
    }

    /**
     * Produces the orders, starts the app with {@code command} (then the app's own arguments) and
     * {@code env} on the test broker, and checks that every task ran parallel and every total is
     * exact. Returns the app's log.
     */
    static String runsEveryTaskParallelWithExactResults(List<String> command, Map<String, String> env)
            throws Exception {
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        String input = "spring-orders-" + suffix;
        String output = "spring-totals-" + suffix;
        Properties common = new Properties();
        common.put("bootstrap.servers", BOOTSTRAP);
        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(
                            new NewTopic(input, PARTITIONS, (short) 1), new NewTopic(output, PARTITIONS, (short) 1)))
                    .all()
                    .get();
            awaitLeaders(admin, List.of(input, output));
        }
        Map<String, long[]> expected = new HashMap<>();
        Properties pp = new Properties();
        pp.putAll(common);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            for (int i = 0; i < RECORDS; i++) {
                String customer = "c-" + (i * 7919 % CUSTOMERS);
                int amount = i % 10 + 1;
                long[] e = expected.computeIfAbsent(customer, k -> new long[2]);
                e[0]++;
                e[1] += amount;
                sent.add(p.send(new ProducerRecord<>(input, customer, Integer.toString(amount))));
            }
            p.flush();
        }
        for (Future<RecordMetadata> f : sent) {
            f.get(); // a record that was not written fails the test here, with the producer's reason
        }

        File log = Files.createTempFile("streamshard-spring", ".log").toFile();
        List<String> cmd = new ArrayList<>(command);
        cmd.addAll(List.of(
                "--spring.kafka.bootstrap-servers=" + BOOTSTRAP,
                "--spring.kafka.streams.application-id=it-spring-" + suffix,
                "--spring.kafka.streams.properties.state.dir=" + Files.createTempDirectory("spring-state"),
                "--app.input=" + input,
                "--app.output=" + output));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log);
        pb.environment().putAll(env);
        Process app = pb.start();
        String text;
        String diagnosis = "";
        Map<String, String> latest = new HashMap<>();
        try {
            Properties cp = new Properties();
            cp.putAll(common);
            cp.put("group.id", "it-spring-reader-" + suffix);
            cp.put("auto.offset.reset", "earliest");
            cp.put("key.deserializer", StringDeserializer.class.getName());
            cp.put("value.deserializer", StringDeserializer.class.getName());
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
                c.subscribe(List.of(output));
                long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
                while (!done(expected, latest) && System.nanoTime() < deadline) {
                    assertThat(app.isAlive())
                            .as("the app is alive; log %s", log)
                            .isTrue();
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                        latest.put(r.key(), r.value());
                    }
                }
                if (!done(expected, latest)) {
                    diagnosis = diagnose(app, log, expected, latest, c);
                }
            }
            text = waitFor(log, "streamshard explain: ");
            assertThat(text)
                    .as("log %s", log)
                    .contains("streamshard: agent installed on Kafka Streams 4.1")
                    .doesNotContain("cannot instrument")
                    .doesNotContain("could not start");
            String explain = text.lines()
                    .filter(l -> l.startsWith("streamshard explain: "))
                    .findFirst()
                    .orElseThrow();
            for (int p = 0; p < PARTITIONS; p++) {
                assertThat(explain).as("log %s", log).contains("0_" + p + "=parallel");
            }
            assertThat(explain).doesNotContain("serial");
        } finally {
            app.destroy();
            app.waitFor();
        }
        for (Map.Entry<String, long[]> e : expected.entrySet()) {
            assertThat(latest.get(e.getKey()))
                    .as("customer %s; log %s%s", e.getKey(), log, diagnosis)
                    .isEqualTo(e.getValue()[0] + ":" + e.getValue()[1]);
        }
        return text;
    }

    /**
     * Waits until every partition of {@code topics} has a leader. A first send to a partition that
     * has none yet fails with NOT_LEADER_OR_FOLLOWER, after which the idempotent producer of
     * kafka-clients 4.1.2 (Spring Boot's) can retry its next batches with OUT_OF_ORDER_SEQUENCE_NUMBER
     * until {@code delivery.timeout.ms} expires them: two minutes, then partitions without input
     * (CI, 2026-12-05; reproduced here on a busy machine).
     */
    private static void awaitLeaders(Admin admin, List<String> topics) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            try {
                if (admin.describeTopics(topics).allTopicNames().get().values().stream()
                        .flatMap(d -> d.partitions().stream())
                        .allMatch(pi -> pi.leader() != null && !pi.leader().isEmpty())) {
                    return;
                }
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                    throw e;
                }
            }
            assertThat(System.nanoTime())
                    .as("leaders for %s within 30 s", topics)
                    .isLessThan(deadline);
            Thread.sleep(100);
        }
    }

    private static boolean done(Map<String, long[]> expected, Map<String, String> latest) {
        return incomplete(expected, latest).isEmpty();
    }

    /** The customers whose latest output is not yet their expected count and total. */
    private static List<String> incomplete(Map<String, long[]> expected, Map<String, String> latest) {
        return expected.entrySet().stream()
                .filter(e -> !(e.getValue()[0] + ":" + e.getValue()[1]).equals(latest.get(e.getKey())))
                .map(Map.Entry::getKey)
                .collect(Collectors.toList());
    }

    /**
     * What a timed-out run leaves behind for the reader of a CI log: which partitions' customers
     * are incomplete, whether the app wrote their output or the reader missed it, the app's warnings
     * and errors, and a thread dump of the app (by {@code jcmd}, in a file beside its log).
     */
    private static String diagnose(
            Process app,
            File log,
            Map<String, long[]> expected,
            Map<String, String> latest,
            KafkaConsumer<String, String> reader)
            throws Exception {
        Map<Integer, Long> ends = new TreeMap<>();
        Map<Integer, Long> read = new TreeMap<>();
        reader.endOffsets(reader.assignment()).forEach((tp, end) -> {
            ends.put(tp.partition(), end);
            read.put(tp.partition(), reader.position(tp));
        });
        Map<Integer, Integer> byPartition = new TreeMap<>();
        for (String customer : incomplete(expected, latest)) {
            int partition = Utils.toPositive(Utils.murmur2(customer.getBytes(StandardCharsets.UTF_8))) % PARTITIONS;
            byPartition.merge(partition, 1, Integer::sum);
        }
        File threads = new File(log.getPath() + ".threads");
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        new ProcessBuilder(jcmd.toString(), Long.toString(app.pid()), "Thread.print")
                .redirectErrorStream(true)
                .redirectOutput(threads)
                .start()
                .waitFor(30, TimeUnit.SECONDS);
        List<String> notable = Files.readAllLines(log.toPath()).stream()
                .filter(l -> l.contains(" WARN ") || l.contains(" ERROR ") || l.startsWith("streamshard"))
                .collect(Collectors.toList());
        return "\nincomplete customers by partition " + byPartition + " (of " + expected.size()
                + "); output end offsets " + ends + ", read up to " + read
                + "; the app's thread dump " + threads + "; its warnings and errors:\n"
                + String.join("\n", notable.subList(Math.max(0, notable.size() - 30), notable.size()));
    }

    private static String waitFor(File log, String text) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        String s = Files.readString(log.toPath());
        while (!s.contains(text) && System.nanoTime() < deadline) {
            Thread.sleep(200);
            s = Files.readString(log.toPath());
        }
        return s;
    }
}
