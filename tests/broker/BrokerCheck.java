import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Client-side checks against the local broker, run by broker.sh (readiness) and smoke.sh.
 * Compiled once by `broker.sh fetch` against the fetched kafka-clients jar.
 *
 * <pre>
 *   BrokerCheck ready     BOOTSTRAP TIMEOUT_MS        wait until a metadata request lists a live broker
 *   BrokerCheck roundtrip BOOTSTRAP TOPIC PARTITIONS N produce N records, consume them back in a group
 *   BrokerCheck txn       BOOTSTRAP TOPIC             committed + aborted transactions, read_committed
 * </pre>
 *
 * Exit status: 0 ok, 1 check failed, 2 usage error.
 */
public final class BrokerCheck {
    private static final Duration STEP_TIMEOUT = Duration.ofSeconds(60);

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            usage();
        }
        String bootstrap = args[1];
        try {
            switch (args[0]) {
                case "ready":
                    need(args, 3);
                    ready(bootstrap, Long.parseLong(args[2]));
                    break;
                case "roundtrip":
                    need(args, 5);
                    roundtrip(bootstrap, args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
                    break;
                case "txn":
                    need(args, 3);
                    transactions(bootstrap, args[2]);
                    break;
                default:
                    usage();
            }
        } catch (CheckFailed e) {
            System.err.println("FAILED: " + e.getMessage());
            System.exit(1);
        } catch (ExecutionException e) {
            System.err.println("FAILED: " + e.getCause());
            System.exit(1);
        }
    }

    private static void usage() {
        System.err.println("usage: BrokerCheck ready BOOTSTRAP TIMEOUT_MS");
        System.err.println("       BrokerCheck roundtrip BOOTSTRAP TOPIC PARTITIONS RECORDS");
        System.err.println("       BrokerCheck txn BOOTSTRAP TOPIC");
        System.exit(2);
    }

    private static void need(String[] args, int n) {
        if (args.length != n) {
            usage();
        }
    }

    static final class CheckFailed extends Exception {
        private static final long serialVersionUID = 1L;

        CheckFailed(String message) {
            super(message);
        }
    }

    private static void check(boolean ok, String message) throws CheckFailed {
        if (!ok) {
            throw new CheckFailed(message);
        }
    }

    private static Properties common(String bootstrap, String clientId) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, clientId);
        return p;
    }

    /** Polls DescribeCluster (a metadata request) until it lists at least one live (unfenced) broker. */
    static void ready(String bootstrap, long timeoutMs) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        Properties p = common(bootstrap, "streamshard-broker-ready");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "3000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "3000");
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, "50");
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "200");
        String last = "no answer yet";
        try (Admin admin = Admin.create(p)) {
            while (System.nanoTime() < deadline) {
                try {
                    DescribeClusterResult cluster = admin.describeCluster();
                    Collection<Node> nodes = cluster.nodes().get(3, TimeUnit.SECONDS);
                    String clusterId = cluster.clusterId().get(3, TimeUnit.SECONDS);
                    if (!nodes.isEmpty()) {
                        System.out.println("ready: cluster " + clusterId + ", live brokers " + nodes);
                        return;
                    }
                    last = "metadata lists no live broker yet";
                } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                    last = String.valueOf(e.getCause() != null ? e.getCause() : e);
                }
                Thread.sleep(100);
            }
        }
        throw new CheckFailed("broker at " + bootstrap + " not ready after " + timeoutMs + " ms: " + last);
    }

    private static void createTopic(String bootstrap, String topic, int partitions) throws Exception {
        try (Admin admin = Admin.create(common(bootstrap, "streamshard-smoke-admin"))) {
            try {
                admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1)))
                        .all().get(STEP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw e;
                }
            }
        }
    }

    private static KafkaProducer<String, String> producer(String bootstrap, String transactionalId) {
        Properties p = common(bootstrap, "streamshard-smoke-producer");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(STEP_TIMEOUT.toMillis()));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(STEP_TIMEOUT.toMillis()));
        if (transactionalId != null) {
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
            p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
        }
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    private static KafkaConsumer<String, String> consumer(String bootstrap, String groupId, String isolation) {
        Properties p = common(bootstrap, "streamshard-smoke-consumer");
        if (groupId != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        }
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    /**
     * Produces {@code n} keyed records (20 keys, idempotent, acks=all), then consumes them back as
     * a consumer group (subscribe + commitSync, so the group coordinator and __consumer_offsets
     * are exercised) and checks: every record exactly once, per-key order, same partition per key.
     */
    static void roundtrip(String bootstrap, String topic, int partitions, int n) throws Exception {
        Map<String, Integer> partitionOfKey = new HashMap<>();
        Set<Integer> partitionsUsed = new HashSet<>();
        try (KafkaProducer<String, String> producer = producer(bootstrap, null)) {
            List<PartitionInfo> infos = producer.partitionsFor(topic);
            check(infos.size() == partitions,
                    "topic " + topic + " has " + infos.size() + " partitions, expected " + partitions);
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, "key-" + (i % 20), Integer.toString(i))));
            }
            producer.flush();
            for (int i = 0; i < n; i++) {
                RecordMetadata md = sent.get(i).get(STEP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                partitionOfKey.put("key-" + (i % 20), md.partition());
                partitionsUsed.add(md.partition());
            }
        }
        check(partitionsUsed.size() > 1, "all records went to one partition: " + partitionsUsed);

        Map<String, Integer> lastValueOfKey = new HashMap<>();
        Set<Integer> seen = new HashSet<>();
        long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        String group = "streamshard-smoke-" + topic;
        try (KafkaConsumer<String, String> consumer = consumer(bootstrap, group, "read_uncommitted")) {
            consumer.subscribe(List.of(topic));
            while (seen.size() < n && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    int v = Integer.parseInt(r.value());
                    check(seen.add(v), "record " + v + " consumed twice");
                    check(r.key().equals("key-" + (v % 20)), "record " + v + " has key " + r.key());
                    check(r.partition() == partitionOfKey.get(r.key()),
                            "record " + v + " read from partition " + r.partition()
                                    + ", produced to " + partitionOfKey.get(r.key()));
                    Integer prev = lastValueOfKey.put(r.key(), v);
                    check(prev == null || prev < v, "key " + r.key() + ": " + v + " after " + prev);
                }
            }
            check(seen.size() == n, "consumed " + seen.size() + " of " + n + " records within "
                    + STEP_TIMEOUT.toSeconds() + " s");
            consumer.commitSync(STEP_TIMEOUT);
        }
        System.out.println("roundtrip: produced " + n + " records to partitions " + partitionsUsed
                + " of " + topic + ", consumed all back in per-key order, group " + group + " committed");
    }

    /**
     * Exactly-once building blocks: initTransactions, a committed transaction that also commits a
     * consumer-group offset (sendOffsetsToTransaction, as Kafka Streams does), an aborted
     * transaction; then read_committed must see only the committed records and read_uncommitted
     * all of them, and the group offset must be visible.
     */
    static void transactions(String bootstrap, String topic) throws Exception {
        int partitions = 4;
        int committed = 10;
        int aborted = 5;
        String group = "streamshard-smoke-txn-group";
        createTopic(bootstrap, topic, partitions);
        TopicPartition sourcePartition = new TopicPartition(topic, 0);
        try (KafkaProducer<String, String> producer = producer(bootstrap, "streamshard-smoke-txn");
                KafkaConsumer<String, String> groupMember = consumer(bootstrap, group, "read_committed")) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < committed; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "committed-" + i));
            }
            producer.sendOffsetsToTransaction(Map.of(sourcePartition, new OffsetAndMetadata(7)),
                    groupMember.groupMetadata());
            producer.commitTransaction();

            producer.beginTransaction();
            for (int i = 0; i < aborted; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "aborted-" + i));
            }
            producer.flush();
            producer.abortTransaction();
        }

        List<String> readCommitted = readAll(bootstrap, topic, "read_committed");
        List<String> readUncommitted = readAll(bootstrap, topic, "read_uncommitted");
        long seenCommitted = readCommitted.stream().filter(v -> v.startsWith("committed-")).count();
        long seenAborted = readCommitted.stream().filter(v -> v.startsWith("aborted-")).count();
        check(seenCommitted == committed && seenAborted == 0 && readCommitted.size() == committed,
                "read_committed saw " + readCommitted.size() + " records (" + seenCommitted
                        + " committed, " + seenAborted + " aborted), expected exactly " + committed
                        + " committed");
        check(readUncommitted.size() == committed + aborted,
                "read_uncommitted saw " + readUncommitted.size() + " records, expected "
                        + (committed + aborted));

        try (Admin admin = Admin.create(common(bootstrap, "streamshard-smoke-admin"))) {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(STEP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            OffsetAndMetadata om = offsets.get(sourcePartition);
            check(om != null && om.offset() == 7,
                    "transactional offset commit for " + group + " not visible: " + offsets);
        }
        System.out.println("txn: committed " + committed + " records + a group offset, aborted "
                + aborted + "; read_committed saw exactly the committed ones, read_uncommitted all "
                + (committed + aborted));
    }

    /** Reads every partition of the topic from the beginning up to its end offset (LSO for read_committed). */
    private static List<String> readAll(String bootstrap, String topic, String isolation) throws Exception {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = consumer(bootstrap, null, isolation)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic, STEP_TIMEOUT)) {
                tps.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps, STEP_TIMEOUT);
            long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
            while (System.nanoTime() < deadline) {
                boolean done = true;
                for (TopicPartition tp : tps) {
                    if (consumer.position(tp, STEP_TIMEOUT) < end.get(tp)) {
                        done = false;
                    }
                }
                if (done) {
                    return values;
                }
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    values.add(r.value());
                }
            }
        }
        throw new CheckFailed(isolation + " consumer did not reach the end of " + topic + " within "
                + STEP_TIMEOUT.toSeconds() + " s (read " + values.size() + ")");
    }
}
