package io.streamshard.examples.spring;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.EnableKafkaStreams;
import org.springframework.kafka.config.StreamsBuilderFactoryBean;

/**
 * A plain Spring Boot Kafka Streams application, nothing streamshard-specific in its topology:
 * orders (key customer, value amount) through a slow "remote call" (5 ms), counted and summed per
 * customer. Configured the Spring way ({@code spring.kafka.*}, {@code spring.kafka.streams.properties.*}).
 * Once running it logs streamshard's decision for each task, taken from the application context.
 */
@SpringBootApplication
@EnableKafkaStreams
public class SpringEnrichmentApp {

    public static void main(String[] args) {
        SpringApplication.run(SpringEnrichmentApp.class, args);
    }

    @Bean
    KStream<String, String> orders(
            StreamsBuilder builder,
            @Value("${app.input}") String input,
            @Value("${app.output}") String output,
            @Value("${app.slow.ms:5}") long slowMs) {
        KStream<String, String> orders = builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()));
        orders.mapValues(v -> {
                    LockSupport.parkNanos(Duration.ofMillis(slowMs).toNanos()); // the remote call
                    return v;
                })
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .aggregate(
                        () -> "0:0",
                        (k, v, agg) -> {
                            String[] p = agg.split(":");
                            return (Long.parseLong(p[0]) + 1) + ":" + (Long.parseLong(p[1]) + Long.parseLong(v));
                        },
                        Materialized.with(Serdes.String(), Serdes.String()))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.String()));
        return orders;
    }

    /** Logs {@code StreamShard.explain} once the instance runs (the IT reads this line). */
    @Bean
    ApplicationRunner explainWhenRunning(StreamsBuilderFactoryBean factory) {
        return args -> new Thread(
                        () -> {
                            long deadline =
                                    System.nanoTime() + Duration.ofMinutes(2).toNanos();
                            while (System.nanoTime() < deadline) {
                                KafkaStreams streams = factory.getKafkaStreams();
                                if (streams != null && streams.state() == KafkaStreams.State.RUNNING) {
                                    Map<String, String> tasks = Explain.tasks(streams);
                                    if (!tasks.isEmpty()) {
                                        System.out.println("streamshard explain: " + tasks);
                                        return;
                                    }
                                }
                                LockSupport.parkNanos(Duration.ofMillis(200).toNanos());
                            }
                            System.out.println("streamshard explain: (not running)");
                        },
                        "explain")
                .start();
    }
}
