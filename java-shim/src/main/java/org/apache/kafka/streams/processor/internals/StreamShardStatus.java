package org.apache.kafka.streams.processor.internals;

import io.streamshard.agent.KafkaVersion;
import io.streamshard.classify.Classification;
import io.streamshard.config.StreamShardConfig;
import io.streamshard.runtime.AdaptiveLimit;
import io.streamshard.scheduler.NativeLog;
import io.streamshard.scheduler.SchedulerException;
import io.streamshard.status.Json;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.SortedMap;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;

/**
 * Feeds one instance's status listener ({@code streamshard.status.listener}): a daemon thread
 * builds Java's view of the instance every {@link #PUSH_MS} (identity, {@code streamshard.*}
 * settings, threads, sub-topology graphs with regions, tasks with mode, serial backlog, drain
 * times, committed and end offsets) and pushes it to the native listener, which adds the
 * scheduler's live counters when asked. Nothing here runs on a record's path; it reads only
 * public metadata ({@link KafkaStreams#metadataForLocalThreads()}), the decisions made when tasks
 * were created, and the volatile counters of streamshard's tasks.
 */
final class StreamShardStatus {
    static final long PUSH_MS = 250;

    private final StreamShardInstances.Instance instance;
    private final String clientId;
    private final String applicationId;
    private final String address;
    private final Thread thread;
    /** The instance's {@code streamshard.*} settings as given (they never change). */
    private final SortedMap<String, String> shown;

    private volatile boolean stopped;
    private boolean pushFailed;

    private StreamShardStatus(
            StreamShardInstances.Instance instance, String clientId, String applicationId, String address) {
        this.instance = instance;
        this.clientId = clientId;
        this.applicationId = applicationId;
        this.address = address;
        this.shown = instance.config.shown();
        this.thread = new Thread(this::run, "streamshard-status-" + clientId);
        thread.setDaemon(true);
    }

    /**
     * Starts the listener if the instance asks for one. A listener that cannot start (address in
     * use, say) is one WARN: the application runs on without it.
     *
     * @return the running status feed, or null
     */
    static StreamShardStatus start(StreamShardInstances.Instance instance, String clientId, String applicationId) {
        String[] hostPort = instance.config.statusListener();
        if (hostPort == null) {
            return null;
        }
        String given =
                instance.config.getString(StreamShardConfig.STATUS_LISTENER).trim();
        NativeLog.useLoader(KafkaStreams.class.getClassLoader());
        String bound;
        try {
            bound = instance.executor.scheduler().statusStart(given, instance.config.statusAllowRemote());
        } catch (RuntimeException | LinkageError e) {
            // A refused or busy address (SchedulerException), or anything else: never the app's failure.
            StreamShardInstances.LOG.warn(
                    "streamshard: the status listener ({}={}) did not start: {}; {} runs on " + "without it",
                    StreamShardConfig.STATUS_LISTENER,
                    given,
                    e instanceof SchedulerException ? e.getMessage() : e.toString(),
                    clientId);
            return null;
        }
        StreamShardStatus s = new StreamShardStatus(instance, clientId, applicationId, bound);
        s.push();
        s.thread.start();
        StreamShardInstances.LOG.info(
                "streamshard: status of {} on http://{}/ (page), /api/status (JSON) and gRPC "
                        + "streamshard.v1.Status at the same address",
                clientId,
                bound);
        return s;
    }

    /** host:port the listener is bound to. */
    String address() {
        return address;
    }

    void stop() {
        stopped = true;
        thread.interrupt();
        try {
            instance.executor.scheduler().statusStop();
        } catch (SchedulerException e) {
            // the scheduler is closed already: so is its listener
        }
    }

    private void run() {
        while (!stopped) {
            try {
                Thread.sleep(PUSH_MS);
            } catch (InterruptedException e) {
                return;
            }
            push();
        }
    }

    private void push() {
        try {
            instance.executor.scheduler().statusPush(view());
        } catch (RuntimeException e) {
            // Never the application's problem: say it once, keep trying.
            if (!pushFailed && !stopped) {
                pushFailed = true;
                StreamShardInstances.LOG.warn(
                        "streamshard: the status view of {} could not be built ({}); the "
                                + "status listener shows the last good one",
                        clientId,
                        e.toString());
            }
        }
    }

    /** Java's view of the instance (the JSON the native listener's model reads). */
    String view() {
        Json j = new Json().object();
        KafkaStreams streams = instance.streams;
        j.key("instance")
                .object()
                .field("application_id", applicationId)
                .field("client_id", clientId)
                .field("state", streams.state().name())
                .field("kafka_streams_version", KAFKA_STREAMS_VERSION)
                .field("streamshard_version", VERSION)
                .field("workers", instance.config.workers())
                .field("max_inflight", instance.config.maxInflight());
        AdaptiveLimit limit = instance.executor.adaptiveLimit();
        if (limit != null) {
            j.field("workers_limit", limit.limit()).field("workers_limit_change", limit.lastChange());
        }
        j.key("config").object();
        shown.forEach(j::field);
        j.end();
        j.key("config_source").object();
        instance.config.sources().forEach((k, v) -> j.field(k, v.toString()));
        j.end().end();

        Map<String, ShardedTask> sharded = new HashMap<>();
        for (ShardedTask s : StreamShardInstances.tasksOf(instance)) {
            sharded.put(s.task.id().toString(), s);
        }
        Collection<ThreadMetadata> threads;
        try {
            threads = streams.metadataForLocalThreads();
        } catch (RuntimeException e) {
            threads = List.of(); // not started yet, or stopping
        }
        j.key("threads").array();
        for (ThreadMetadata t : threads) {
            j.object()
                    .field("name", t.threadName())
                    .field("state", t.threadState())
                    .key("active_tasks")
                    .array();
            for (TaskMetadata tm : t.activeTasks()) {
                j.value(tm.taskId().toString());
            }
            j.endArray().end();
        }
        j.endArray();
        j.key("subtopologies").array();
        synchronized (instance.graphs) {
            instance.graphs.values().forEach(j::raw);
        }
        j.endArray();
        j.key("tasks").array();
        for (ThreadMetadata t : threads) {
            for (TaskMetadata tm : t.activeTasks()) {
                task(j, t.threadName(), tm, sharded.get(tm.taskId().toString()));
            }
        }
        return j.endArray().end().toString();
    }

    private void task(Json j, String thread, TaskMetadata tm, ShardedTask s) {
        String id = tm.taskId().toString();
        Classification c = instance.decisions.get(id);
        j.object()
                .field("id", id)
                .field("subtopology", tm.taskId().subtopology())
                .field("partition", tm.taskId().partition())
                .field("thread", thread)
                .field("mode", s != null ? s.mode() : "stock")
                .field("summary", c == null ? "" : c.summary())
                .field("sharded", s != null);
        if (s != null) {
            j.field("serial_backlog", s.serialBacklog())
                    .field("commit_backlog", s.commitBacklog())
                    .field("held_bytes", s.heldBytes())
                    .field("drain_total", s.drains().count())
                    .field("drain_time_total_ns", s.drains().nanosTotal())
                    .field("drain_time_max_ns", s.drains().nanosMax());
        }
        j.key("partitions").array();
        List<TopicPartition> parts = new ArrayList<>(tm.topicPartitions());
        parts.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        for (TopicPartition tp : parts) {
            j.object()
                    .field("index", s == null ? null : toLong(s.partitions.get(tp)))
                    .field("topic", tp.topic())
                    .field("partition", tp.partition())
                    .field("committed", offset(tm.committedOffsets(), tp))
                    .field("end_offset", offset(tm.endOffsets(), tp))
                    .end();
        }
        j.endArray().end();
    }

    private static Long toLong(Integer v) {
        return v == null ? null : v.longValue();
    }

    /** A task's offset for {@code tp}, or null when it has none yet (Kafka Streams keeps -1 then). */
    private static Long offset(Map<TopicPartition, Long> offsets, TopicPartition tp) {
        try {
            Long v = offsets.get(tp);
            return v == null || v < 0 ? null : v;
        } catch (RuntimeException e) {
            return null; // the thread replaced the map while we read it
        }
    }

    static final String VERSION = version();
    /** As the agent read it when it installed (the jar's version resource; AppInfoParser moved in 4.4). */
    static final String KAFKA_STREAMS_VERSION = KafkaVersion.of(KafkaStreams.class.getClassLoader());

    private static String version() {
        try (InputStream in =
                StreamShardStatus.class.getResourceAsStream("/io/streamshard/status/version.properties")) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                return p.getProperty("version", "unknown");
            }
        } catch (IOException | RuntimeException e) {
            // fall through
        }
        return "unknown";
    }
}
