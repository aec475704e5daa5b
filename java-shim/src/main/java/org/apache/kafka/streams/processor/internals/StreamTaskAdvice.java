package org.apache.kafka.streams.processor.internals;

import java.util.Map;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.implementation.bytecode.assign.Assigner;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Sensor;

/**
 * The agent's advice for StreamTask's record path and commit (its barriers and closes:
 * {@link StreamTaskBarrierAdvice}). One class per advised method, named after it; each is inlined
 * into its method and only hands off to streamshard's helpers. The rows that place them (method,
 * parameters, fields read, versions) are in {@code io.streamshard.agent.StreamTaskHooks}.
 */
public final class StreamTaskAdvice {
    private StreamTaskAdvice() {}

    /** StreamTask constructor exit. */
    public static final class Constructor {
        @Advice.OnMethodExit
        static void exit(
                @Advice.This StreamTask task,
                @Advice.FieldValue("streamsMetrics") Object metrics,
                @Advice.FieldValue("processLatencySensor") Sensor processLatency) {
            StreamShardInstances.taskCreated(task, metrics, processLatency);
        }
    }

    /**
     * StreamTask.doProcess: hand the record to the workers (the body is skipped), or let the
     * stock body run it on the StreamThread (inline: the task is drained), timed for the inline
     * policy.
     */
    public static final class DoProcess {
        @Advice.OnMethodEnter(skipOn = ShardedTask.HandedOff.class)
        static Object enter(
                @Advice.This StreamTask task,
                @Advice.FieldValue("record") StampedRecord record,
                @Advice.FieldValue("recordInfo") AbstractPartitionGroup.RecordInfo info,
                @Advice.Argument(0) long wallClockTime) {
            ShardedTask s = StreamShardInstances.task(task);
            return s == null ? null : s.submit(record, info, wallClockTime);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.Enter Object taken) {
            if (taken instanceof ShardedTask) {
                ((ShardedTask) taken).ranInline();
            }
        }
    }

    /** StreamTask.isProcessable exit. */
    public static final class IsProcessable {
        @Advice.OnMethodExit
        static void exit(
                @Advice.This StreamTask task,
                @Advice.FieldValue("partitionGroup") AbstractPartitionGroup group,
                @Advice.Return(readOnly = false) boolean processable) {
            ShardedTask s = StreamShardInstances.task(task);
            if (s != null) {
                processable = s.processable(processable, group);
            }
        }
    }

    /** StreamTask.committableOffsetsAndMetadata exit: a commit of the finished prefix commits its offsets. */
    public static final class CommittableOffsetsAndMetadata {
        @Advice.OnMethodExit
        static void exit(
                @Advice.This StreamTask task,
                @Advice.Return(readOnly = false, typing = Assigner.Typing.DYNAMIC)
                        Map<TopicPartition, OffsetAndMetadata> offsets) {
            ShardedTask s = StreamShardInstances.task(task);
            if (s != null) {
                offsets = s.committable(offsets);
            }
        }
    }

    /**
     * StreamTask.postCommit: at entry, a task with a serial region pauses it for the checkpoint;
     * at exit (thrown or not), it resumes, and a task whose commit left records uncovered still
     * needs one.
     */
    public static final class PostCommit {
        @Advice.OnMethodEnter
        static void enter(@Advice.This StreamTask task) {
            ShardedTask s = StreamShardInstances.task(task);
            if (s != null) {
                s.beforePostCommit();
            }
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(
                @Advice.This StreamTask task,
                @Advice.FieldValue(value = "commitNeeded", readOnly = false) boolean needed) {
            ShardedTask s = StreamShardInstances.task(task);
            if (s != null) {
                needed = s.commitNeededAfter(needed);
            }
        }
    }

    /** StreamTask.prepareCommit entry. */
    public static final class PrepareCommit {
        @Advice.OnMethodEnter
        static void enter(@Advice.This StreamTask task, @Advice.Argument(0) boolean clean) {
            ShardedTask s = StreamShardInstances.task(task);
            if (s != null) {
                s.beforeCommit(clean);
            }
        }
    }

    /**
     * StreamTask.prepareCommit() entry, before Kafka Streams 4.1: a commit, unless the StreamThread
     * is closing tasks dirty (see {@link TaskManagerAdvice.ClosingDirty}).
     */
    public static final class PrepareCommitUpto40 {
        @Advice.OnMethodEnter
        static void enter(@Advice.This StreamTask task) {
            ShardedTask s = StreamShardInstances.task(task);
            if (s != null) {
                s.beforeCommit(!StreamShardInstances.closingDirty());
            }
        }
    }

    /**
     * StreamTask.maybeAddTerminalE2ELatency (4.2.x, 4.4.x): the terminal end-to-end latency goes
     * into an accumulator of plain fields that the StreamThread flushes. A worker's forward into a
     * terminal node records that latency per record instead (the synchronized sensor, as 4.3 does);
     * on the StreamThread the stock body runs.
     */
    public static final class MaybeAddTerminalE2ELatency {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(
                @Advice.This StreamTask task,
                @Advice.FieldValue("processorContext") Object context,
                @Advice.Argument(0) long timestamp,
                @Advice.Argument(1) String node) {
            StreamShardFrames.Frame f = StreamShardFrames.of(context);
            if (f == null) {
                return false;
            }
            task.maybeRecordE2ELatency(timestamp, f.systemTimeMs, node);
            return true;
        }
    }
}
