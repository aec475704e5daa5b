package io.streamshard.examples;

import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;

/** Orders per customer per minute: a windowed count, which streamshard must leave serial. */
public final class WindowedCountApp {
    public static final String OUTPUT = "windowed-counts";

    private WindowedCountApp() {}

    public static Topology topology() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(EnrichmentApp.INPUT, Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                .count()
                .toStream((windowed, count) ->
                        windowed.key() + "@" + windowed.window().start())
                .to(OUTPUT, Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args.length > 0 ? args[0] : "127.0.0.1:9092";
        Properties p = EnrichmentApp.config(bootstrap, args.length > 1 ? args[1] : "windowed-count");
        KafkaStreams streams = new KafkaStreams(topology(), p);
        Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
        streams.start();
        Thread.currentThread().join();
    }
}
