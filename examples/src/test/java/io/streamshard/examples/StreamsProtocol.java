package io.streamshard.examples;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import org.junit.jupiter.api.Assumptions;

/** Whether the Kafka Streams under test has the streams rebalance protocol as a supported feature (4.2+). */
final class StreamsProtocol {
    private StreamsProtocol() {}

    static String version() {
        try (InputStream in =
                StreamsProtocol.class.getClassLoader().getResourceAsStream("kafka/kafka-streams-version.properties")) {
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version").trim();
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot read the Kafka Streams version", e);
        }
    }

    static boolean supported() {
        String[] v = version().split("\\.");
        int major = Integer.parseInt(v[0]);
        int minor = Integer.parseInt(v[1]);
        return major > 4 || major == 4 && minor >= 2;
    }

    static void assumeSupported() {
        Assumptions.assumeTrue(
                supported(), "group.protocol=streams is supported from Kafka Streams 4.2; this is " + version());
    }
}
