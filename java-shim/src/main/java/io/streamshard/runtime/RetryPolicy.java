package io.streamshard.runtime;

import io.streamshard.config.StreamShardConfig;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Which failures of a record's parallel part are retried, and after how long
 * ({@code streamshard.retry.*}). The record must not have had any effect yet; that is the
 * caller's to know (the record's frame), this class only judges the exception and the count.
 */
public final class RetryPolicy {
    /** Kafka Streams' own exceptions: never retried unless named. */
    static final String STREAMS_EXCEPTION = "org.apache.kafka.streams.errors.StreamsException";

    private final int maxAttempts;
    private final long backoffNanos;
    private final long backoffMaxNanos;
    /** Class names that are retried; empty: the default rule. */
    private final Set<String> exceptions;

    RetryPolicy(int maxAttempts, long backoffMs, long backoffMaxMs, List<String> exceptions) {
        this.maxAttempts = maxAttempts;
        this.backoffNanos = TimeUnit.MILLISECONDS.toNanos(backoffMs);
        this.backoffMaxNanos = TimeUnit.MILLISECONDS.toNanos(backoffMaxMs);
        this.exceptions = new HashSet<>(exceptions);
    }

    /** The policy the settings ask for, or null when records get one attempt. */
    public static RetryPolicy of(StreamShardConfig config) {
        if (config.retryMaxAttempts() <= 1) {
            return null;
        }
        return new RetryPolicy(
                config.retryMaxAttempts(),
                config.retryBackoffMs(),
                config.retryBackoffMaxMs(),
                config.retryExceptions());
    }

    public int maxAttempts() {
        return maxAttempts;
    }

    /**
     * How long to wait before the next attempt of a record whose attempt number {@code attempt}
     * (1 for the first) threw {@code e} before any effect, ns; -1 if it is not retried (the
     * exception is not one to retry, or that was its last attempt).
     */
    public long delayNanos(Throwable e, int attempt) {
        if (attempt >= maxAttempts || !retries(e)) {
            return -1;
        }
        long wait = backoffNanos;
        for (int i = 1; i < attempt && wait < backoffMaxNanos; i++) {
            wait *= 2;
        }
        wait = Math.min(wait, backoffMaxNanos);
        // Shortened by up to a fifth, at random: records that failed together spread out, and no
        // wait is ever longer than the settings say (the drain timeout is checked against those).
        return wait - (wait > 0 ? ThreadLocalRandom.current().nextLong(wait / 5 + 1) : 0);
    }

    /** Whether {@code e} is a failure to retry. */
    public boolean retries(Throwable e) {
        if (!(e instanceof Exception)) {
            return false; // an Error: out of memory, a stack overflow, a linkage problem
        }
        if (exceptions.isEmpty()) {
            return !(e instanceof ClassCastException) && !isA(e.getClass(), Set.of(STREAMS_EXCEPTION));
        }
        return isA(e.getClass(), exceptions);
    }

    /** Whether {@code c}, a superclass or an interface of either is named in {@code names}. */
    private static boolean isA(Class<?> c, Set<String> names) {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            if (names.contains(k.getName())) {
                return true;
            }
            for (Class<?> i : k.getInterfaces()) {
                if (isA(i, names)) {
                    return true;
                }
            }
        }
        return false;
    }
}
