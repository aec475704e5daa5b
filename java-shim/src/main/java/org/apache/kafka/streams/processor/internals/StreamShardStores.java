package org.apache.kafka.streams.processor.internals;

import java.util.ArrayList;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.internals.Change;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.internals.CacheFlushListener;
import org.apache.kafka.streams.state.internals.StoreQueryUtils;
import org.apache.kafka.streams.state.internals.ThreadCache;
import org.apache.kafka.streams.state.internals.WrappedStateStore;

/**
 * The caching layer of key-value stores on the workers, and the fix for the in-memory key-value
 * store's iterators.
 *
 * <p><b>Caching.</b> A {@code CachingKeyValueStore} belongs to its StreamThread: its cache
 * (the thread's {@code ThreadCache}) evicts the least recently used entries of the store when it
 * is full and forwards them downstream on the evicting thread, whatever their key. A worker must
 * never do that (it would run another key's downstream while that key's own worker might), so on
 * any thread but the StreamThread a write does what an uncached store does: it removes the key's
 * entry from the cache (so no cached value goes stale), writes the value through to the store
 * below, and forwards the update for this key alone ({@link #writeThrough}), as the cache would
 * if it had room for nothing. The forward waits until the store's own lock is released
 * ({@link #forwardQueued}): downstream nodes may read other cached stores, and two workers each
 * holding one store's write lock while reading the other's would deadlock. Reads on a worker
 * find a key in the cache or, failing that, in the store below (the layer itself fills the cache
 * only on its StreamThread). Before a task's records go to the workers after running on the
 * StreamThread (inline records, a punctuator), the task flushes its caches there
 * ({@link ShardedTask}), so no entry a worker could overtake is left dirty: its StreamThread
 * then puts nothing into those caches until the task is drained again.
 *
 * <p><b>In-memory iterators.</b> The fix for the in-memory key-value store's iterators (see {@link StoreAdvice.InMemoryIterator}).
 * {@code InMemoryKeyValueStore} guards its {@code TreeMap} with its own monitor on every write,
 * but its iterator's {@code hasNext}, {@code next} and {@code peekNextKey} read the map later,
 * unguarded: a put that rebalances the tree meanwhile can make {@code get} miss an entry that is
 * there, and the iterator returns the key with a null value (stock Kafka Streams does this too,
 * with one writer; streamshard's workers make it likelier). Each call of the wrapper holds the
 * store's monitor, so it reads the map as the writers leave it. The iterator's behavior is
 * otherwise the original's: keys as of its creation, values as of each call, deleted keys skipped,
 * an {@code IllegalStateException} after close.
 *
 * <p>The monitor is held only inside the wrapped call, which touches nothing but the map and the
 * iterator's own key copy, so no lock is ever taken while it is held: no lock-order cycle with the
 * caching layer above the store.
 */
public final class StreamShardStores {
    private StreamShardStores() {}

    /** Per thread: forwards written through, (listener, record) pairs, waiting for the store's lock to be released. */
    private static final ThreadLocal<ArrayList<Object>> QUEUED = ThreadLocal.withInitial(ArrayList::new);

    /**
     * CachingKeyValueStore.putInternal on a thread other than the store's StreamThread: true if the
     * write was made here (the cache is then left out), false if the stock body must run (a
     * thread that runs no streamshard record, which never happens in practice). Called under the
     * store's write lock.
     */
    @SuppressWarnings("unchecked")
    public static boolean writeThrough(
            Object store,
            Bytes key,
            byte[] value,
            Object listener,
            boolean sendOldValues,
            String cacheName,
            Position position) {
        StreamShardFrames.Frame frame = StreamShardFrames.current();
        if (frame == null || !(frame.context instanceof InternalProcessorContext)) {
            return false;
        }
        InternalProcessorContext<?, ?> context = (InternalProcessorContext<?, ?>) frame.context;
        ThreadCache cache = context.cache();
        if (cache != null) {
            cache.delete(cacheName, key);
        }
        KeyValueStore<Bytes, byte[]> below = ((WrappedStateStore<KeyValueStore<Bytes, byte[]>, ?, ?>) store).wrapped();
        // As the layer's own flush of one dirty entry: the old value from the store below, nothing
        // written or forwarded for a delete of a key that was never there.
        byte[] old = value == null || sendOldValues ? below.get(key) : null;
        if (listener != null && value == null && old == null) {
            return true;
        }
        below.put(key, value);
        synchronized (position) {
            StoreQueryUtils.updatePosition(position, context);
        }
        if (listener != null) {
            ProcessorRecordContext rc = frame.recordContext;
            ArrayList<Object> q = QUEUED.get();
            q.add(listener);
            q.add(new Record<>(
                    key.get(), new Change<>(value, sendOldValues ? old : null), rc.timestamp(), rc.headers()));
        }
        return true;
    }

    /**
     * Exit of the store's put, putIfAbsent, putAll and delete (its lock released) on a thread
     * other than its StreamThread: forwards what {@link #writeThrough} queued in this call, in
     * order; drops it if the call threw.
     */
    @SuppressWarnings("unchecked")
    public static void forwardQueued(boolean ok) {
        ArrayList<Object> q = QUEUED.get();
        int n = q.size();
        if (n == 0) {
            return;
        }
        // Downstream nodes may write other cached stores on this thread: their calls queue and
        // forward their own entries, as the list is emptied first. One write (put, delete) is
        // the common case and needs no copy.
        Object[] pending = n == 2 ? null : q.toArray();
        Object listener = q.get(0);
        Object record = q.get(1);
        q.clear();
        if (!ok) {
            return;
        }
        for (int i = 0; i < n; i += 2) {
            ((CacheFlushListener<byte[], byte[]>) (pending == null ? listener : pending[i]))
                    .apply((Record<byte[], Change<byte[]>>) (pending == null ? record : pending[i + 1]));
        }
    }

    /** The class whose reads are unguarded; any other iterator (an empty one, 4.4's transaction buffer's) is left alone. */
    private static final String UNGUARDED =
            "org.apache.kafka.streams.state.internals.InMemoryKeyValueStore$InMemoryKeyValueIterator";
    /**
     * Before Kafka Streams 4.0 the store's range, reverse and prefix methods return the unguarded
     * iterator inside a {@code DelegatingPeekingKeyValueIterator} (javap of 3.7.2 and 3.9.2), and
     * only ever that one there (these hooks fire on nothing else); its calls reach no other lock.
     */
    private static final String PEEKING = "org.apache.kafka.streams.state.internals.DelegatingPeekingKeyValueIterator";

    /**
     * {@code iterator}, its every call made under {@code store}'s monitor, if it is the store's own
     * unguarded iterator; anything else (already wrapped, empty, another store's) as is.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static <K, V> KeyValueIterator<K, V> locked(Object store, KeyValueIterator<K, V> iterator) {
        String type = iterator == null ? null : iterator.getClass().getName();
        if (type == null || !(type.equals(UNGUARDED) || type.equals(PEEKING))) {
            return iterator;
        }
        return new Locked(store, iterator);
    }

    static final class Locked<K, V> implements KeyValueIterator<K, V> {
        private final Object lock;
        private final KeyValueIterator<K, V> delegate;

        Locked(Object lock, KeyValueIterator<K, V> delegate) {
            this.lock = lock;
            this.delegate = delegate;
        }

        @Override
        public boolean hasNext() {
            synchronized (lock) {
                return delegate.hasNext();
            }
        }

        @Override
        public KeyValue<K, V> next() {
            synchronized (lock) {
                return delegate.next();
            }
        }

        @Override
        public K peekNextKey() {
            synchronized (lock) {
                return delegate.peekNextKey();
            }
        }

        @Override
        public void close() {
            synchronized (lock) {
                delegate.close();
            }
        }

        @Override
        public void remove() {
            synchronized (lock) {
                delegate.remove();
            }
        }
    }
}
