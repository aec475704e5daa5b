package org.apache.kafka.streams.processor.internals;

import net.bytebuddy.asm.Advice;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.state.KeyValueIterator;

/**
 * The agent's advice for the key-value stores (CachingKeyValueStore, InMemoryKeyValueStore).
 * One class per advised method, named after it (or after what it does where several methods share it); each is inlined into its method and only hands
 * off to streamshard's helpers. The rows that place them (method, parameters, fields read,
 * versions) are in {@code io.streamshard.agent.StoreHooks}.
 */
public final class StoreAdvice {
    private StoreAdvice() {}

    /**
     * CachingKeyValueStore.putInternal (private) entry, which put, putIfAbsent, putAll and delete
     * all end in: on any thread but the store's StreamThread the write goes through to the store
     * and its forward is queued, instead of into the cache (see {@link StreamShardStores#writeThrough}).
     */
    public static final class CachingPutInternal {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(
                @Advice.This Object store,
                @Advice.Argument(0) Bytes key,
                @Advice.Argument(1) byte[] value,
                @Advice.FieldValue("streamThread") Thread streamThread,
                @Advice.FieldValue("flushListener") Object listener,
                @Advice.FieldValue("sendOldValues") boolean sendOldValues,
                @Advice.FieldValue("cacheName") String cacheName,
                @Advice.FieldValue("position") Position position) {
            return Thread.currentThread() != streamThread
                    && StreamShardStores.writeThrough(store, key, value, listener, sendOldValues, cacheName, position);
        }
    }

    /** CachingKeyValueStore put, putIfAbsent, putAll, delete exit: the queued forwards, outside the store's lock. */
    public static final class CachingWriteDone {
        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.FieldValue("streamThread") Thread streamThread, @Advice.Thrown Throwable thrown) {
            if (Thread.currentThread() != streamThread) {
                StreamShardStores.forwardQueued(thrown == null);
            }
        }
    }

    /**
     * The read-write decorators' put, putIfAbsent, putAll, delete and remove entry (the stores a
     * processor gets from its context): the calling thread's record has had an effect, so a
     * failure after this is not retried ({@link StreamShardRetry}).
     */
    public static final class Write {
        @Advice.OnMethodEnter
        static void enter() {
            StreamShardFrames.wrote();
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
        static void exit(@Advice.This Object store, @Advice.Return(readOnly = false) KeyValueIterator<?, ?> iterator) {
            iterator = StreamShardStores.locked(store, iterator);
        }
    }
}
