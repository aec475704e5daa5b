package io.streamshard.examples;

import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The enrichment app: orders keyed by customer, a slow "remote call" per order
 * ({@code mapValues} that blocks for a few milliseconds, standing for a fraud-score service), then
 * a {@code leftJoin} with the customers table for the customer's tier, then a count and a sum of
 * amounts per customer. Plain Kafka Streams: nothing in it knows about streamshard.
 *
 * <p>Order values are {@code "<seq>,<amount>"}, {@code seq} counting the customer's orders from 1;
 * customer values are the tier. Outputs: {@code enriched} ({@code "<seq>,<amount>,<score>,<tier>"},
 * tier {@code new} for a customer not in the table), {@code counts} (long), and {@code totals}
 * (long sum of amounts).
 */
public final class EnrichmentApp {
    public static final String INPUT = "orders";
    public static final String CUSTOMERS = "customers";
    public static final String ENRICHED = "enriched";
    public static final String COUNTS = "counts";
    public static final String TOTALS = "totals";

    private EnrichmentApp() {}

    /** Every topic of the app, {@code suffix} appended. */
    public static List<String> topics(String suffix) {
        return List.of(INPUT + suffix, CUSTOMERS + suffix, ENRICHED + suffix, COUNTS + suffix, TOTALS + suffix);
    }

    /** Creates the topics and fills the customers table (customer-0 .. customer-(customers - 1)). */
    public static void prepare(String bootstrap, String suffix, int partitions, int customers) throws Exception {
        OrderProducer.createTopics(bootstrap, partitions, topics(suffix));
        OrderProducer.produceCustomers(bootstrap, CUSTOMERS + suffix, customers);
    }

    /** The topology; {@code suffix} is appended to every topic name (empty for the plain names). */
    public static Topology topology(long callMillis, String suffix) {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> orders = b.stream(INPUT + suffix, Consumed.with(Serdes.String(), Serdes.String()));
        KTable<String, String> customers = b.table(
                CUSTOMERS + suffix, Consumed.with(Serdes.String(), Serdes.String()), Materialized.as("customers"));
        KStream<String, String> enriched = orders.mapValues((key, value) -> {
                    String score = remoteScore(key, slowCall(value) ? SLOW_MS : callMillis);
                    failFirstCall(value);
                    return value + "," + score;
                })
                .leftJoin(customers, (order, tier) -> order + "," + (tier == null ? "new" : tier));
        enriched.to(ENRICHED + suffix, Produced.with(Serdes.String(), Serdes.String()));
        enriched.groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("order-counts"))
                .toStream()
                .to(COUNTS + suffix, Produced.with(Serdes.String(), Serdes.Long()));
        enriched.groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .aggregate(
                        () -> 0L,
                        (key, value, total) -> total + Long.parseLong(value.split(",")[1]),
                        Materialized.with(Serdes.String(), Serdes.Long()))
                .toStream()
                .to(TOTALS + suffix, Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    /** Tests: one record in this many (by its value) fails its first call in this JVM; 0: none. */
    private static final int FLAKY_ONE_IN = Integer.getInteger("streamshard.it.flaky.one.in", 0);

    private static final Set<String> FAILED_ONCE = ConcurrentHashMap.newKeySet();

    /** The flaky service of the crash test with retries ({@code -Dstreamshard.it.flaky.one.in=N}). */
    private static void failFirstCall(String value) {
        if (FLAKY_ONE_IN > 0 && Math.floorMod(value.hashCode(), FLAKY_ONE_IN) == 0 && FAILED_ONCE.add(value)) {
            throw new IllegalStateException("503 Service Unavailable (first call for this record)");
        }
    }

    /** Tests: one record in this many (by its value) takes {@link #SLOW_MS} instead of the call's time; 0: none. */
    private static final int SLOW_ONE_IN = Integer.getInteger("streamshard.it.slow.one.in", 0);

    private static final long SLOW_MS = Long.getLong("streamshard.it.slow.ms", 1_000);

    /** The slow calls of the crash test whose commits wait for none ({@code -Dstreamshard.it.slow.one.in=N}). */
    private static boolean slowCall(String value) {
        return SLOW_ONE_IN > 0 && Math.floorMod(value.hashCode() * 31 + 7, SLOW_ONE_IN) == 0;
    }

    /** Stands for a call to another service: blocks, then answers from the key. */
    static String remoteScore(String customer, long callMillis) {
        if (callMillis > 0) {
            try {
                Thread.sleep(callMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted during the remote call", e);
            }
        }
        return Integer.toString(Math.floorMod(customer.hashCode(), 100));
    }

    public static Properties config(String bootstrap, String applicationId) {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put("auto.offset.reset", "earliest");
        return p;
    }

    /** {@code EnrichmentApp <bootstrap> <application-id> [call-ms]}: runs until stopped. */
    public static void main(String[] args) throws Exception {
        String bootstrap = args.length > 0 ? args[0] : "127.0.0.1:9092";
        String app = args.length > 1 ? args[1] : "enrichment";
        long callMillis = args.length > 2 ? Long.parseLong(args[2]) : 5;
        KafkaStreams streams = new KafkaStreams(topology(callMillis, ""), config(bootstrap, app));
        Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
        streams.start();
        Thread.currentThread().join();
    }
}
