package io.streamshard.examples;

import io.streamshard.StreamShard;
import java.nio.file.Files;
import java.util.Properties;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;

/**
 * Builds a small topology and a KafkaStreams (never started: no broker needed) with the settings
 * given as {@code key=value} arguments, prints whether streamshard runs it and the settings it
 * was given, and closes it.
 */
public final class CreateOnlyMain {
    private CreateOnlyMain() {}

    public static void main(String[] args) throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("create-only-in").mapValues(v -> v).to("create-only-out");
        Properties p = new Properties();
        p.put("application.id", "create-only");
        p.put("bootstrap.servers", "127.0.0.1:1");
        p.put("streamshard.workers", "2");
        p.put("state.dir", Files.createTempDirectory("create-only").toString());
        for (String a : args) {
            p.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        }
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            System.out.println("streamshard active: " + StreamShard.active(streams));
            System.out.println("streamshard settings: " + StreamShard.settings(streams));
        }
    }
}
