package io.streamshard.examples;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * An in-memory key-value store that watches its own flush: a flush (an at-least-once commit's
 * checkpoint, a close; on the StreamThread) takes {@link #FLUSH_MS}, and every write that lands
 * while it runs is a violation. A commit that let the serial region run on while it flushes the
 * region's stores would show up here within a few commits.
 */
final class FlushWatch implements KeyValueStore<Bytes, byte[]> {
    static final long FLUSH_MS = 3;

    /** What every watched store of a test saw. */
    static final class Seen {
        final AtomicLong flushes = new AtomicLong();
        final AtomicLong writes = new AtomicLong();
        final AtomicReference<String> violation = new AtomicReference<>();
    }

    static KeyValueBytesStoreSupplier supplier(String name, Seen seen) {
        return new KeyValueBytesStoreSupplier() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public KeyValueStore<Bytes, byte[]> get() {
                return new FlushWatch(Stores.inMemoryKeyValueStore(name).get(), seen);
            }

            @Override
            public String metricsScope() {
                return "in-memory";
            }
        };
    }

    private final KeyValueStore<Bytes, byte[]> inner;
    private final Seen seen;
    private volatile boolean flushing;

    private FlushWatch(KeyValueStore<Bytes, byte[]> inner, Seen seen) {
        this.inner = inner;
        this.seen = seen;
    }

    @Override
    public void flush() {
        flushing = true;
        try {
            Probe.sleep(FLUSH_MS);
            inner.flush();
        } finally {
            flushing = false;
        }
        seen.flushes.incrementAndGet();
    }

    private void write(String what) {
        seen.writes.incrementAndGet();
        if (flushing) {
            seen.violation.compareAndSet(
                    null, what + " on " + Thread.currentThread().getName() + " while the store flushed for a commit");
        }
    }

    @Override
    public void put(Bytes key, byte[] value) {
        write("a put");
        inner.put(key, value);
    }

    @Override
    public byte[] putIfAbsent(Bytes key, byte[] value) {
        write("a putIfAbsent");
        return inner.putIfAbsent(key, value);
    }

    @Override
    public void putAll(List<KeyValue<Bytes, byte[]>> entries) {
        write("a putAll");
        inner.putAll(entries);
    }

    @Override
    public byte[] delete(Bytes key) {
        write("a delete");
        return inner.delete(key);
    }

    @Override
    public String name() {
        return inner.name();
    }

    @Override
    public void init(StateStoreContext context, StateStore root) {
        inner.init(context, root);
    }

    /**
     * Kafka Streams 3.9's abstract, deprecated form (gone in 4.0); 3.9 calls the one above, whose
     * default would call this.
     */
    public void init(org.apache.kafka.streams.processor.ProcessorContext context, StateStore root) {
        throw new UnsupportedOperationException("Kafka Streams calls init(StateStoreContext, StateStore)");
    }

    @Override
    public void close() {
        inner.close();
    }

    @Override
    public boolean persistent() {
        return inner.persistent();
    }

    @Override
    public boolean isOpen() {
        return inner.isOpen();
    }

    @Override
    public <R> QueryResult<R> query(Query<R> query, PositionBound bound, QueryConfig config) {
        return inner.query(query, bound, config);
    }

    @Override
    public Position getPosition() {
        return inner.getPosition();
    }

    @Override
    public byte[] get(Bytes key) {
        return inner.get(key);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> range(Bytes from, Bytes to) {
        return inner.range(from, to);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseRange(Bytes from, Bytes to) {
        return inner.reverseRange(from, to);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> all() {
        return inner.all();
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseAll() {
        return inner.reverseAll();
    }

    @Override
    public <PS extends Serializer<P>, P> KeyValueIterator<Bytes, byte[]> prefixScan(P prefix, PS prefixKeySerializer) {
        return inner.prefixScan(prefix, prefixKeySerializer);
    }

    @Override
    public long approximateNumEntries() {
        return inner.approximateNumEntries();
    }
}
