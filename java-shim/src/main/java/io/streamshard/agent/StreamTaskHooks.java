package io.streamshard.agent;

import static io.streamshard.agent.StreamShardAgent.P;

import java.util.List;

/**
 * Where the agent hooks into StreamTask: one row per advised method (exact parameters, the fields
 * the advice reads, the versions it applies to); the advice classes, named after the methods, are
 * {@code org.apache.kafka.streams.processor.internals.StreamTaskAdvice} (the record path and the
 * commit) and {@code StreamTaskBarrierAdvice} (suspend, punctuation, close).
 *
 * <p>Version differences: {@code prepareCommit(boolean)} from 4.1 ({@code prepareCommit()} before,
 * with {@link TaskManagerHooks} telling a dirty close's call from a commit); the terminal-node
 * latency accumulator of 4.2 and 4.4.
 */
final class StreamTaskHooks {
    private StreamTaskHooks() {}

    static final String TYPE = P + "StreamTask";
    private static final String ADVICE = P + "StreamTaskAdvice$";
    private static final String BARRIER = P + "StreamTaskBarrierAdvice$";
    /** Present from Kafka Streams 4.1. */
    static final List<String> PREPARE_COMMIT_41 = List.of("boolean");

    static final List<Hook> HOOKS = List.of(
            new Hook(
                    TYPE,
                    Hook.CONSTRUCTOR,
                    List.of(
                            "org.apache.kafka.streams.processor.TaskId",
                            "java.util.Set",
                            P + "ProcessorTopology",
                            "org.apache.kafka.clients.consumer.Consumer",
                            "org.apache.kafka.streams.TopologyConfig$TaskConfig",
                            P + "metrics.StreamsMetricsImpl",
                            P + "StateDirectory",
                            "org.apache.kafka.streams.state.internals.ThreadCache",
                            "org.apache.kafka.common.utils.Time",
                            P + "ProcessorStateManager",
                            P + "RecordCollector",
                            P + "InternalProcessorContext",
                            "org.apache.kafka.common.utils.LogContext|org.apache.kafka.common.utils.internals.LogContext",
                            "boolean"),
                    ADVICE + "Constructor",
                    List.of("streamsMetrics", "processLatencySensor")),
            new Hook(TYPE, "doProcess", List.of("long"), ADVICE + "DoProcess", List.of("record", "recordInfo")),
            new Hook(TYPE, "isProcessable", List.of("long"), ADVICE + "IsProcessable", List.of()),
            new Hook(
                    TYPE,
                    "committableOffsetsAndMetadata",
                    List.of(),
                    ADVICE + "CommittableOffsetsAndMetadata",
                    List.of()),
            new Hook(TYPE, "postCommit", List.of("boolean"), ADVICE + "PostCommit", List.of("commitNeeded")),
            new Hook(TYPE, "prepareCommit", PREPARE_COMMIT_41, ADVICE + "PrepareCommit", List.of())
                    .onlyIf(TYPE, "prepareCommit", PREPARE_COMMIT_41, true),
            // Before 4.1: prepareCommit(); a dirty close is told apart by its callers (TaskManagerHooks).
            new Hook(TYPE, "prepareCommit", List.of(), ADVICE + "PrepareCommitUpto40", List.of())
                    .onlyIf(TYPE, "prepareCommit", PREPARE_COMMIT_41, false),
            // 4.2 and 4.4 add terminal-node latencies into plain fields: workers record them directly.
            new Hook(
                            TYPE,
                            "maybeAddTerminalE2ELatency",
                            List.of("long", "java.lang.String"),
                            ADVICE + "MaybeAddTerminalE2ELatency",
                            List.of("processorContext"))
                    .onlyIf(TYPE, "maybeAddTerminalE2ELatency", List.of("long", "java.lang.String"), true),
            new Hook(TYPE, "suspend", List.of(), BARRIER + "Suspend", List.of()),
            new Hook(
                    TYPE,
                    "maybePunctuateSystemTime",
                    List.of(),
                    BARRIER + "MaybePunctuateSystemTime",
                    List.of("time", "systemTimePunctuationQueue", "commitNeeded")),
            new Hook(TYPE, "maybePunctuateStreamTime", List.of(), BARRIER + "MaybePunctuateStreamTime", List.of()),
            new Hook(TYPE, "closeClean", List.of(), BARRIER + "CloseClean", List.of()),
            new Hook(TYPE, "prepareRecycle", List.of(), BARRIER + "CloseClean", List.of()),
            new Hook(TYPE, "closeDirty", List.of(), BARRIER + "CloseDirty", List.of()));
}
