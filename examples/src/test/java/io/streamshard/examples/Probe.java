package io.streamshard.examples;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;

/**
 * An instrumented pass-through processor for the integration tests: values are
 * {@code seq,...} with per-key sequence numbers 1, 2, 3...; it records how many records run at
 * once, whether a key is ever on two threads or out of order, whether the record context is the
 * record's own, and which kind of thread ran each record.
 */
final class Probe {
    final Map<String, AtomicInteger> inUse = new ConcurrentHashMap<>();
    final Map<String, AtomicLong> lastSeq = new ConcurrentHashMap<>();
    final AtomicInteger running = new AtomicInteger();
    final AtomicInteger maxRunning = new AtomicInteger();
    final AtomicLong processed = new AtomicLong();
    final AtomicReference<String> violation = new AtomicReference<>();
    /** Records run per {@code <label>:<worker|StreamThread|other>}. */
    final Map<String, AtomicLong> ranOn = new ConcurrentHashMap<>();

    /**
     * The processor: checks, then {@code work} (which may sleep), then forwards. {@code label}
     * names the record for {@link #ranOn} (e.g. its phase).
     */
    ProcessorSupplier<String, String, String, String> supplier(
            String input, Consumer<Record<String, String>> work, Function<Record<String, String>, String> label) {
        return () -> new Processor<>() {
            private ProcessorContext<String, String> context;

            @Override
            public void init(ProcessorContext<String, String> context) {
                this.context = context;
            }

            @Override
            public void process(Record<String, String> record) {
                AtomicInteger held = inUse.computeIfAbsent(record.key(), k -> new AtomicInteger());
                if (held.incrementAndGet() != 1) {
                    violation.compareAndSet(null, "key " + record.key() + " on two threads");
                }
                maxRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
                long seq = Long.parseLong(record.value().split(",")[0]);
                long last = lastSeq.computeIfAbsent(record.key(), k -> new AtomicLong())
                        .getAndSet(seq);
                if (seq != last + 1) {
                    violation.compareAndSet(null, "key " + record.key() + ": " + seq + " after " + last);
                }
                // The record context is this record's own, on whichever thread runs it.
                if (context.recordMetadata().isEmpty()
                        || !context.recordMetadata().get().topic().equals(input)) {
                    violation.compareAndSet(null, "wrong record metadata");
                }
                String thread = Thread.currentThread().getName();
                String role = thread.startsWith("streamshard-worker-")
                        ? "worker"
                        : thread.contains("-StreamThread-") ? "StreamThread" : "other";
                ranOn.computeIfAbsent(label.apply(record) + ":" + role, k -> new AtomicLong())
                        .incrementAndGet();
                work.accept(record);
                running.decrementAndGet();
                held.decrementAndGet();
                processed.incrementAndGet();
                context.forward(record);
            }
        };
    }

    long ran(String labelAndRole) {
        AtomicLong n = ranOn.get(labelAndRole);
        return n == null ? 0 : n.get();
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
