package io.streamshard.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.config.StreamShardConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.SocketTimeoutException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.errors.TaskMigratedException;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {
    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

    @Test
    void noPolicyWithOneAttempt() {
        assertThat(RetryPolicy.of(StreamShardConfig.from(Map.of()))).isNull();
        assertThat(RetryPolicy.of(StreamShardConfig.from(Map.of("streamshard.retry.max.attempts", "2"))))
                .isNotNull();
    }

    @Test
    void waitsDoubleUpToTheCapShortenedByAtMostAFifth() {
        RetryPolicy p = new RetryPolicy(6, 100, 500, List.of());
        long[] nominal = {100, 200, 400, 500, 500};
        for (int round = 0; round < 200; round++) {
            for (int attempt = 1; attempt <= 5; attempt++) {
                long d = p.delayNanos(new IOException("x"), attempt);
                long n = nominal[attempt - 1] * MS;
                assertThat(d).as("attempt %d", attempt).isBetween(n - n / 5, n);
            }
        }
        assertThat(p.delayNanos(new IOException("x"), 6)).as("the last attempt").isEqualTo(-1);
        assertThat(new RetryPolicy(3, 0, 0, List.of()).delayNanos(new IOException(), 1))
                .isZero();
    }

    @Test
    void byDefaultAnyExceptionButKafkaStreamsOwnAndClassCast() {
        RetryPolicy p = new RetryPolicy(3, 10, 10, List.of());
        assertThat(p.retries(new IOException())).isTrue();
        assertThat(p.retries(new IllegalStateException())).isTrue();
        assertThat(p.retries(new UncheckedIOException(new IOException()))).isTrue();
        assertThat(p.retries(new StreamsException("x"))).isFalse();
        assertThat(p.retries(new TaskMigratedException("x"))).isFalse();
        assertThat(p.retries(new ClassCastException())).isFalse();
        assertThat(p.retries(new AssertionError())).as("an Error").isFalse();
        assertThat(p.delayNanos(new StreamsException("x"), 1)).isEqualTo(-1);
    }

    @Test
    void namedExceptionsMatchTheirSubclassesAndImplementations() {
        RetryPolicy p = new RetryPolicy(
                3, 10, 10, List.of("java.io.IOException", "io.streamshard.runtime.RetryPolicyTest$Transient"));
        assertThat(p.retries(new IOException())).isTrue();
        assertThat(p.retries(new SocketTimeoutException())).as("a subclass").isTrue();
        assertThat(p.retries(new Flaky())).as("implements a named interface").isTrue();
        assertThat(p.retries(new TimeoutException())).isFalse();
        assertThat(p.retries(new IllegalStateException())).isFalse();
        assertThat(new RetryPolicy(3, 10, 10, List.of(StreamsException.class.getName()))
                        .retries(new TaskMigratedException("x")))
                .as("Kafka Streams' own when named")
                .isTrue();
    }

    interface Transient {}

    static final class Flaky extends RuntimeException implements Transient {
        private static final long serialVersionUID = 1L;
    }
}
