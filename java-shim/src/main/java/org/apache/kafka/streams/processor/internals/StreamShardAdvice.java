package org.apache.kafka.streams.processor.internals;

import java.util.Map;
import net.bytebuddy.asm.Advice;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The agent's advice. Each piece is inlined into a Kafka Streams method and only hands off to
 * {@link StreamShardInstances}, {@link ShardedTask} or {@link StreamShardFrames}. The agent
 * installs all of them or, if any target does not match this Kafka Streams version, none.
 */
public final class StreamShardAdvice {
    private StreamShardAdvice() {}

    /** KafkaStreams private constructor exit. */
    public static final class InstanceCreated {
        @Advice.OnMethodExit
        static void exit(@Advice.This KafkaStreams streams,
                @Advice.FieldValue("applicationConfigs") StreamsConfig config,
                @Advice.FieldValue("streamsMetrics") Object metrics,
                @Advice.FieldValue("clientId") String clientId,
                @Advice.FieldValue("metrics") org.apache.kafka.common.metrics.Metrics registry) {
            StreamShardInstances.instanceCreated(streams, config, metrics, clientId, registry);
        }
    }

    /**
     * KafkaStreams.setState entry: the shutdown helper sets NOT_RUNNING or ERROR after every
     * StreamThread has finished; stopping the workers before the state changes means close()
     * cannot return while a worker is still alive.
     */
    public static final class InstanceState {
        @Advice.OnMethodEnter
        static void enter(@Advice.This KafkaStreams streams, @Advice.Argument(0) KafkaStreams.State state) {
            StreamShardInstances.instanceStopping(streams, state);
        }
    }

    /** InternalTopologyBuilder.rewriteTopology exit. */
    public static final class RewriteTopology {
        @Advice.OnMethodExit
        static void exit(@Advice.This InternalTopologyBuilder builder, @Advice.Argument(0) StreamsConfig config,
                @Advice.FieldValue("stateFactories") Map<String, StoreFactory> factories) {
            StreamShardInstances.disableCaching(builder, config, factories);
        }
    }

    /** StreamTask constructor exit. */
    public static final class TaskCreated {
        @Advice.OnMethodExit
        static void exit(@Advice.This StreamTask task, @Advice.FieldValue("streamsMetrics") Object metrics,
                @Advice.FieldValue("processLatencySensor") org.apache.kafka.common.metrics.Sensor processLatency) {
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
        static Object enter(@Advice.This StreamTask task, @Advice.FieldValue("record") StampedRecord record,
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
        static void exit(@Advice.This StreamTask task, @Advice.Return(readOnly = false) boolean processable) {
            ShardedTask s = StreamShardInstances.task(task);
            if (s != null) {
                processable = s.processable(processable);
            }
        }
    }

    /**
     * StreamThread.pollRequests entry: if a task was at its cap, wait for room in the scheduler
     * instead of in the consumer (see {@link io.streamshard.runtime.RoomWait}).
     */
    public static final class PollRequests {
        @Advice.OnMethodEnter
        static void enter(@Advice.Argument(value = 0, readOnly = false) java.time.Duration pollTime) {
            pollTime = io.streamshard.runtime.RoomWait.beforePoll(pollTime);
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
     * is closing tasks dirty (see {@link DirtyClose}).
     */
    public static final class PrepareCommitBefore41 {
        @Advice.OnMethodEnter
        static void enter(@Advice.This StreamTask task) {
            ShardedTask s = StreamShardInstances.task(task);
            if (s != null) {
                s.beforeCommit(!StreamShardInstances.closingDirty());
            }
        }
    }

    /**
     * TaskManager's methods that close tasks dirty, before Kafka Streams 4.1: while one runs on a
     * StreamThread, its prepareCommit() calls are part of the dirty close.
     */
    public static final class DirtyClose {
        @Advice.OnMethodEnter
        static void enter() {
            StreamShardInstances.dirtyClose(true);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit() {
            StreamShardInstances.dirtyClose(false);
        }
    }

    /**
     * StreamTask.maybeAddTerminalE2ELatency (4.2.x, 4.4.x): the terminal end-to-end latency goes
     * into an accumulator of plain fields that the StreamThread flushes. A worker's forward into a
     * terminal node records that latency per record instead (the synchronized sensor, as 4.3 does);
     * on the StreamThread the stock body runs.
     */
    public static final class TerminalLatency {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This StreamTask task, @Advice.FieldValue("processorContext") Object context,
                @Advice.Argument(0) long timestamp, @Advice.Argument(1) String node) {
            StreamShardFrames.Frame f = StreamShardFrames.of(context);
            if (f == null) {
                return false;
            }
            task.maybeRecordE2ELatency(timestamp, f.systemTimeMs, node);
            return true;
        }
    }

    /** RecordDeserializer.deserialize exit, before Kafka Streams 4.1: the result keeps the raw bytes. */
    public static final class CarryRawBytes {
        @Advice.OnMethodExit
        static void exit(@Advice.Argument(1) org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]> raw,
                @Advice.Return(readOnly = false)
                        org.apache.kafka.clients.consumer.ConsumerRecord<Object, Object> deserialized) {
            deserialized = StreamShardCompat.Upto40.carry(deserialized, raw);
        }
    }

    /** StreamTask.suspend entry. */
    public static final class Quiesce {
        @Advice.OnMethodEnter
        static void enter(@Advice.This StreamTask task) {
            StreamShardInstances.drain(task);
        }
    }

    /**
     * StreamTask.maybePunctuateSystemTime, replaced for streamshard's tasks: wall-clock punctuators
     * run on a drained task. The body reads the clock itself, so a check made here with another
     * reading could say "not due" a millisecond before the body punctuates; the replacement reads
     * it once, drains if due, and punctuates with that same time, as the body would.
     */
    public static final class PunctuateSystemTime {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Boolean enter(@Advice.This StreamTask task, @Advice.FieldValue("time") Object time,
                @Advice.FieldValue("systemTimePunctuationQueue") PunctuationQueue queue) {
            return StreamShardInstances.punctuateSystemTime(task, (org.apache.kafka.common.utils.Time) time, queue);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Boolean punctuated, @Advice.Return(readOnly = false) boolean result,
                @Advice.FieldValue(value = "commitNeeded", readOnly = false) boolean commitNeeded) {
            if (punctuated != null) {
                result = punctuated;
                if (punctuated) {
                    commitNeeded = true;
                }
            }
        }
    }

    /**
     * StreamTask.maybePunctuateStreamTime entry: stream-time punctuators run on a drained task
     * (both regions empty), so they see the state stock would show at that stream time.
     */
    public static final class PunctuateStreamTime {
        @Advice.OnMethodEnter
        static void enter(@Advice.This StreamTask task) {
            if (task.canPunctuateStreamTime()) {
                StreamShardInstances.drain(task);
            }
        }
    }

    /** StreamTask.closeClean / prepareRecycle entry. */
    public static final class CloseClean {
        @Advice.OnMethodEnter
        static void enter(@Advice.This StreamTask task) {
            StreamShardInstances.taskClosing(task, true);
        }
    }

    /** AbstractTask.revive exit: the same task object, closed dirty, is brought back. */
    public static final class Revive {
        @Advice.OnMethodExit
        static void exit(@Advice.This Object task) {
            StreamShardInstances.taskRevived(task);
        }
    }

    /** StreamTask.closeDirty entry. */
    public static final class CloseDirty {
        @Advice.OnMethodEnter
        static void enter(@Advice.This StreamTask task) {
            StreamShardInstances.taskClosing(task, false);
        }
    }

    /**
     * ProcessorContextImpl.forwardInternal (private) entry: a worker's forward into a
     * serial-region node is parked for the serial runner and the body is skipped.
     */
    public static final class ForwardInternal {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This Object context, @Advice.Argument(0) ProcessorNode<?, ?, ?, ?> child,
                @Advice.Argument(1) org.apache.kafka.streams.processor.api.Record<?, ?> record) {
            return StreamShardFrames.park(context, child, record);
        }
    }

    /** ProcessorContextImpl.currentStreamTimeMs: the stream time at the record's dequeue, in a frame. */
    public static final class CurrentStreamTime {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static StreamShardFrames.Frame enter(@Advice.This Object context) {
            return StreamShardFrames.of(context);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter StreamShardFrames.Frame frame, @Advice.Return(readOnly = false) long timeMs) {
            if (frame != null) {
                timeMs = frame.streamTimeMs;
            }
        }
    }

    /**
     * StreamsProducer.maybeBeginTransaction: a check-then-act on a plain boolean, and under
     * exactly-once several workers of one StreamThread send through the same producer. While no
     * transaction is in flight, callers take a per-producer lock, so exactly one begins it.
     */
    public static final class BeginTransaction {
        @Advice.OnMethodEnter
        static java.util.concurrent.locks.ReentrantLock enter(@Advice.This StreamsProducer producer,
                @Advice.FieldValue("transactionInFlight") boolean inFlight) {
            // Without exactly-once there is no transaction to begin: no lock on every send.
            return inFlight || !producer.eosEnabled() ? null : StreamShardInstances.lockBegin(producer);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.Enter java.util.concurrent.locks.ReentrantLock lock) {
            if (lock != null) {
                lock.unlock();
            }
        }
    }

    /** AbstractProcessorContext.setSystemTimeMs: per-thread on workers. */
    public static final class SetSystemTime {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This Object context, @Advice.Argument(0) long timeMs) {
            StreamShardFrames.Frame f = StreamShardFrames.of(context);
            if (f == null) {
                return false;
            }
            f.systemTimeMs = timeMs;
            return true;
        }
    }

    /** AbstractProcessorContext.currentSystemTimeMs: per-thread on workers. */
    public static final class CurrentSystemTime {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static StreamShardFrames.Frame enter(@Advice.This Object context) {
            return StreamShardFrames.of(context);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter StreamShardFrames.Frame frame, @Advice.Return(readOnly = false) long timeMs) {
            if (frame != null) {
                timeMs = frame.systemTimeMs;
            }
        }
    }

    /**
     * CachingKeyValueStore.putInternal (private) entry, which put, putIfAbsent, putAll and delete
     * all end in: on any thread but the store's StreamThread the write goes through to the store
     * and its forward is queued, instead of into the cache (see {@link StreamShardStores#writeThrough}).
     */
    public static final class CachedWrite {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This Object store, @Advice.Argument(0) org.apache.kafka.common.utils.Bytes key,
                @Advice.Argument(1) byte[] value,
                @Advice.FieldValue("streamThread") Thread streamThread,
                @Advice.FieldValue("flushListener") Object listener,
                @Advice.FieldValue("sendOldValues") boolean sendOldValues,
                @Advice.FieldValue("cacheName") String cacheName,
                @Advice.FieldValue("position") org.apache.kafka.streams.query.Position position) {
            return Thread.currentThread() != streamThread
                    && StreamShardStores.writeThrough(store, key, value, listener, sendOldValues, cacheName, position);
        }
    }

    /** CachingKeyValueStore put, putIfAbsent, putAll, delete exit: the queued forwards, outside the store's lock. */
    public static final class CachedWriteDone {
        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.FieldValue("streamThread") Thread streamThread, @Advice.Thrown Throwable thrown) {
            if (Thread.currentThread() != streamThread) {
                StreamShardStores.forwardQueued(thrown == null);
            }
        }
    }

    /**
     * InMemoryKeyValueStore.getKeyValueIterator, reverseAll and prefixScan exit: the store's
     * iterator reads the store's TreeMap on every hasNext/next without the store's lock, which a
     * concurrent put (a StreamThread or a worker) can corrupt mid-read: an entry comes back with a
     * null value. The returned iterator takes the store's lock for each of its calls instead.
     */
    public static final class InMemoryIterator {
        @Advice.OnMethodExit
        static void exit(@Advice.This Object store,
                @Advice.Return(readOnly = false) org.apache.kafka.streams.state.KeyValueIterator<?, ?> iterator) {
            iterator = StreamShardStores.locked(store, iterator);
        }
    }
}
