package io.streamshard;

import io.streamshard.agent.StreamShardAgent;
import java.lang.instrument.Instrumentation;
import java.util.Map;
import net.bytebuddy.agent.ByteBuddyAgent;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.processor.internals.StreamShardInstances;
import org.slf4j.LoggerFactory;

/** What streamshard does with a {@code KafkaStreams} instance. */
public final class StreamShard {
    private StreamShard() {}

    /**
     * Per task id ("0_1"), for the tasks this instance has created so far: {@code parallel}
     * (every node), {@code parallel, serial region: A, B} (the nodes where the task's ordered
     * serial region begins) or {@code serial: reason} (the whole task runs stock). Empty if
     * streamshard does not run this instance.
     */
    public static Map<String, String> explain(KafkaStreams streams) {
        return StreamShardInstances.explain(streams);
    }

    /**
     * Per task id, per node name (topology order): {@code parallel} or
     * {@code serial region: reason}. Empty if streamshard does not run this instance.
     */
    public static Map<String, Map<String, String>> explainNodes(KafkaStreams streams) {
        return StreamShardInstances.explainNodes(streams);
    }

    /**
     * The {@code streamshard.*} settings the instance was given, each as its value and where it
     * came from: {@code "0 (agent argument)"}, {@code "16 (application)"}, {@code "8 (system
     * property)"}; a key not listed has its default. Empty if streamshard does not run this instance.
     */
    public static Map<String, String> settings(KafkaStreams streams) {
        return StreamShardInstances.settings(streams);
    }

    /**
     * Installs the agent into the running JVM, for applications that cannot add
     * {@code -javaagent:}. Call it before the first {@code KafkaStreams} is created. It attaches
     * to the JVM itself, which needs {@code -Djdk.attach.allowAttachSelf=true} (or an external
     * attach helper, which fails when the JVM runs as root) and, on JDK 21+,
     * {@code -XX:+EnableDynamicAgentLoading} to avoid a warning; prefer {@code -javaagent:}.
     *
     * @return true if the agent is installed; false (with an ERROR logged) if it could not attach
     *     or this Kafka Streams version cannot be instrumented (the application then runs stock)
     */
    public static boolean install() {
        if (StreamShardAgent.installed()) {
            return StreamShardAgent.prepared(StreamShard.class.getClassLoader());
        }
        Instrumentation inst;
        try {
            inst = ByteBuddyAgent.install();
        } catch (RuntimeException e) {
            LoggerFactory.getLogger("io.streamshard")
                    .error(
                            "streamshard: cannot attach to this JVM ({}); start it with -javaagent:streamshard.jar or "
                                    + "-Djdk.attach.allowAttachSelf=true; the application runs stock",
                            e.toString());
            return false;
        }
        return StreamShardAgent.install(inst, StreamShard.class.getClassLoader());
    }

    /**
     * host:port of the instance's read-only status listener ({@code streamshard.status.listener}),
     * the real port when 0 was asked for; null when it has none (off, not started, or the
     * instance is not run by streamshard).
     */
    public static String statusAddress(KafkaStreams streams) {
        return StreamShardInstances.statusAddress(streams);
    }

    /** Whether streamshard runs this instance (agent installed, enabled, supported settings). */
    public static boolean active(KafkaStreams streams) {
        return StreamShardInstances.active(streams);
    }
}
