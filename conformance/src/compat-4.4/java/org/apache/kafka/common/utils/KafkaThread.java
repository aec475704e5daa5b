package org.apache.kafka.common.utils;

/**
 * For running Kafka 4.3's published test classes on Kafka 4.4 and later, where this class moved to
 * {@code org.apache.kafka.common.utils.internals.KafkaThread} (Kafka's smoke-test client starts its
 * threads with it): the members 4.3 has, on the class where it lives now. Only on the conformance
 * suite's class path, and only for those runtimes (see {@link Exit}).
 */
public class KafkaThread extends org.apache.kafka.common.utils.internals.KafkaThread {
    public KafkaThread(String name, boolean daemon) {
        super(name, daemon);
    }

    public KafkaThread(String name, Runnable runnable, boolean daemon) {
        super(name, runnable, daemon);
    }

    public static KafkaThread daemon(String name, Runnable runnable) {
        return new KafkaThread(name, runnable, true);
    }

    public static KafkaThread nonDaemon(String name, Runnable runnable) {
        return new KafkaThread(name, runnable, false);
    }
}
