package org.apache.kafka.streams.processor.internals;

import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.KeyValueIterator;

/**
 * The fix for the in-memory key-value store's iterators (see {@link StreamShardAdvice.InMemoryIterator}).
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

    /** The class whose reads are unguarded; any other iterator (an empty one, 4.4's transaction buffer's) is left alone. */
    private static final String UNGUARDED = "org.apache.kafka.streams.state.internals.InMemoryKeyValueStore$InMemoryKeyValueIterator";
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
