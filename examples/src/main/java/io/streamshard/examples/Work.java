package io.streamshard.examples;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * The simulated per-record work of the benchmark, the same in every engine: {@code none},
 * {@code sleep:<µs>} (a blocking remote call), {@code cpu:<µs>} (busy computation on the calling
 * thread) or {@code http:<µs>} (a real HTTP call with {@code java.net.http} to the service at the
 * system property {@code bench.service.url}, which answers after that long: what a tracing agent
 * instruments).
 */
public record Work(Kind kind, long micros) implements Runnable {
    public enum Kind {
        NONE,
        SLEEP,
        CPU,
        HTTP
    }

    public static Work parse(String spec) {
        if (spec.equals("none")) {
            return new Work(Kind.NONE, 0);
        }
        int colon = spec.indexOf(':');
        if (colon > 0) {
            String kind = spec.substring(0, colon);
            long micros = Long.parseLong(spec.substring(colon + 1).replace("us", ""));
            if (micros < 0) {
                throw new IllegalArgumentException("negative work duration: " + spec);
            }
            if (kind.equals("sleep")) {
                return new Work(Kind.SLEEP, micros);
            }
            if (kind.equals("cpu")) {
                return new Work(Kind.CPU, micros);
            }
            if (kind.equals("http")) {
                return new Work(Kind.HTTP, micros);
            }
        }
        throw new IllegalArgumentException(
                "work must be none, sleep:<micros>, cpu:<micros> or http:<micros>, not " + spec);
    }

    private static volatile long sink;

    /** Pieces of work done in this JVM (the benchmark's per-record CPU is measured against it). */
    public static final LongAdder DONE = new LongAdder();

    /** The HTTP client of {@code http:} work, made at its first call. */
    private static final class Http {
        static final HttpClient CLIENT = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
        static final String URL = System.getProperty("bench.service.url", "http://127.0.0.1:18080/");
    }

    private void call() {
        try {
            HttpResponse<Void> r = Http.CLIENT.send(
                    HttpRequest.newBuilder(URI.create(Http.URL + "?us=" + micros))
                            .GET()
                            .build(),
                    HttpResponse.BodyHandlers.discarding());
            if (r.statusCode() != 200) {
                throw new IllegalStateException("the service answered " + r.statusCode());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void run() {
        switch (kind) {
            case NONE -> {}
            case SLEEP -> {
                long end = System.nanoTime() + micros * 1000;
                for (long left = micros * 1000; left > 0; left = end - System.nanoTime()) {
                    LockSupport.parkNanos(left);
                }
            }
            case CPU -> {
                // Arithmetic, not a clock spin alone: the thread really computes for the duration.
                long end = System.nanoTime() + micros * 1000;
                long x = sink;
                while (System.nanoTime() < end) {
                    for (int i = 0; i < 64; i++) {
                        x = x * 6364136223846793005L + 1442695040888963407L;
                    }
                }
                sink = x;
            }
            case HTTP -> call();
            default -> throw new IllegalStateException();
        }
        DONE.increment();
    }
}
