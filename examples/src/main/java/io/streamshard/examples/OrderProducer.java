package io.streamshard.examples;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Creates the topics and produces the input: {@code records} orders, customers Zipf(s)
 * distributed over {@code customers}, value {@code "<seq>,<amount>"}. Returns the expected
 * count and total per customer.
 */
public final class OrderProducer {
    private OrderProducer() {}

    /** Expected results per customer: number of orders and sum of amounts. */
    public record Expected(Map<String, Long> counts, Map<String, Long> totals) {}

    public static void createTopics(String bootstrap, int partitions, List<String> topics) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(p)) {
            Set<String> existing = admin.listTopics().names().get();
            List<NewTopic> missing = topics.stream()
                    .filter(t -> !existing.contains(t))
                    .map(t -> new NewTopic(t, partitions, (short) 1))
                    .toList();
            admin.createTopics(missing).all().get();
            // New partitions take a moment to get a leader; producing before that makes the
            // client retry against a moving target.
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (true) {
                boolean ready;
                try {
                    ready = admin.describeTopics(topics).allTopicNames().get().values().stream()
                            .allMatch(d -> d.partitions().size() == partitions
                                    && d.partitions().stream()
                                            .allMatch(pi -> pi.leader() != null
                                                    && !pi.leader().isEmpty()));
                } catch (ExecutionException e) {
                    // A topic created a moment ago may not be in the metadata yet.
                    if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                        throw e;
                    }
                    ready = false;
                }
                if (ready) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("topics " + topics + " got no leaders within 30 s");
                }
                Thread.sleep(100);
            }
        }
    }

    /** The tier the customers table holds for a customer. */
    public static String tierOf(String customer) {
        return switch (Math.floorMod(customer.hashCode(), 3)) {
            case 0 -> "gold";
            case 1 -> "silver";
            default -> "standard";
        };
    }

    /** Writes the customers table: customer-0 .. customer-(customers - 1), each with its tier. */
    public static void produceCustomers(String bootstrap, String topic, int customers) throws Exception {
        AtomicReference<Exception> failed = new AtomicReference<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(stringProducer(bootstrap, 20))) {
            for (int i = 0; i < customers; i++) {
                String customer = "customer-" + i;
                producer.send(new ProducerRecord<>(topic, customer, tierOf(customer)), (md, e) -> {
                    if (e != null) {
                        failed.compareAndSet(null, e);
                    }
                });
            }
            producer.flush();
        }
        if (failed.get() != null) {
            throw new IllegalStateException("writing the customers table to " + topic + " failed", failed.get());
        }
    }

    /**
     * A String producer that waits for every replica (acks=all). One request in flight keeps
     * per-key order without the idempotent producer, which was seen to fail with
     * OutOfOrderSequenceException, and to let batches expire unsent, on partitions created a
     * moment before.
     */
    private static Properties stringProducer(String bootstrap, int lingerMs) {
        Properties p = new Properties();
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, lingerMs);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        return p;
    }

    public static Expected produce(String bootstrap, String topic, int records, int customers, double s, long seed)
            throws Exception {
        Properties p = stringProducer(bootstrap, 5);
        Zipf zipf = new Zipf(customers, s, seed);
        Random amounts = new Random(seed + 1);
        Map<String, Long> counts = new HashMap<>();
        Map<String, Long> totals = new HashMap<>();
        AtomicReference<Exception> failed = new AtomicReference<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < records; i++) {
                String customer = "customer-" + zipf.next();
                long seq = counts.merge(customer, 1L, Long::sum);
                long amount = 1 + amounts.nextInt(1000);
                totals.merge(customer, amount, Long::sum);
                producer.send(new ProducerRecord<>(topic, customer, seq + "," + amount), (md, e) -> {
                    if (e != null) {
                        failed.compareAndSet(null, e);
                    }
                });
            }
            producer.flush();
        }
        if (failed.get() != null) {
            throw new IllegalStateException("producing the input failed", failed.get());
        }
        return new Expected(counts, totals);
    }
}
