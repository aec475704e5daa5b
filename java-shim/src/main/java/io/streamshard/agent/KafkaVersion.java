package io.streamshard.agent;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Properties;

/** The Kafka Streams version of a class loader, and which versions streamshard is tested on. */
public final class KafkaVersion {
    private KafkaVersion() {}

    /** Minor versions the test suite runs on; another whose checks all pass installs with a WARN. */
    static final List<String> TESTED = List.of("3.9", "4.0", "4.1", "4.2", "4.3", "4.4");

    /**
     * The Kafka Streams version {@code loader} has, from the jar's version resource (no class is
     * loaded); the clients version is named too when it differs.
     */
    public static String of(ClassLoader loader) {
        String streams = property(loader, "kafka/kafka-streams-version.properties");
        String clients = property(loader, "kafka/kafka-version.properties");
        if (streams == null) {
            return "(version unknown)";
        }
        return clients == null || clients.equals(streams) ? streams : streams + " (with kafka-clients " + clients + ")";
    }

    private static String property(ClassLoader loader, String resource) {
        try (InputStream in = loader.getResourceAsStream(resource)) {
            if (in == null) {
                return null;
            }
            Properties p = new Properties();
            p.load(in);
            String v = p.getProperty("version");
            return v == null ? null : v.trim();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** "4.3" of "4.3.1" (or of "4.3.1 (with kafka-clients ...)"). */
    static String minor(String version) {
        String[] parts = version.split("[.\\s-]");
        return parts.length < 2 ? version : parts[0] + "." + parts[1];
    }

    /** Whether {@code version} ("3.7.2", "4.4.0 (with …)") is older than {@code minor} ("3.9"); false if unknown. */
    static boolean older(String version, String minor) {
        try {
            String[] v = minor(version).split("\\.");
            String[] m = minor.split("\\.");
            int major = Integer.parseInt(v[0]) - Integer.parseInt(m[0]);
            return major < 0 || major == 0 && Integer.parseInt(v[1]) < Integer.parseInt(m[1]);
        } catch (RuntimeException e) {
            return false;
        }
    }
}
