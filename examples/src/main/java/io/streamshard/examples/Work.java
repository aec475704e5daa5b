package io.streamshard.examples;

import java.util.concurrent.locks.LockSupport;

/**
 * The simulated per-record work of the benchmark, the same in every engine: {@code none},
 * {@code sleep:<µs>} (a blocking remote call) or {@code cpu:<µs>} (busy computation on the calling
 * thread).
 */
public record Work(Kind kind, long micros) implements Runnable {
    public enum Kind {
        NONE,
        SLEEP,
        CPU
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
        }
        throw new IllegalArgumentException("work must be none, sleep:<micros> or cpu:<micros>, not " + spec);
    }

    private static volatile long sink;

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
            default -> throw new IllegalStateException();
        }
    }
}
