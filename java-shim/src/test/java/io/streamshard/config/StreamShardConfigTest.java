package io.streamshard.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.LongFunction;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

class StreamShardConfigTest {

    @Test
    void defaults() {
        StreamShardConfig c = StreamShardConfig.from(new Properties());
        assertThat(c.enabled()).isTrue();
        assertThat(c.workers()).isEqualTo(64);
        assertThat(c.maxInflightPerTask()).isEqualTo(1_000);
        assertThat(c.maxInflight()).isEqualTo(10_000);
        assertThat(c.drainTimeoutMs()).isEqualTo(60_000);
        assertThat(c.unorderedNullKeys()).isFalse();
        assertThat(c.parallelProcessors()).isEmpty();
        assertThat(c.inlineBelowNanos()).isEqualTo(10_000);
    }

    @Test
    void valuesAreRead() {
        StreamShardConfig c = StreamShardConfig.from(Map.of(
                "streamshard.enabled", "false",
                "streamshard.workers", "16",
                "streamshard.null.key.ordering", "unordered",
                "streamshard.parallel.processors", "enrich, score",
                "streamshard.inline.below.us", "0",
                "application.id", "ignored"));
        assertThat(c.enabled()).isFalse();
        assertThat(c.workers()).isEqualTo(16);
        assertThat(c.unorderedNullKeys()).isTrue();
        assertThat(c.parallelProcessors()).isEqualTo(List.of("enrich", "score"));
        assertThat(c.inlineBelowNanos()).isZero();
    }

    @Test
    void badValuesNameTheKey() {
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of("streamshard.workers", "0")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.workers");
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of("streamshard.workers", "lots")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.workers");
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of("streamshard.null.key.ordering", "random")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.null.key.ordering");
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of("streamshard.inline.below.us", "-1")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.inline.below.us");
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of("streamshard.enabled", "maybe")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.enabled");
        assertThatThrownBy(() -> StreamShardConfig.from(
                        Map.of("streamshard.max.inflight.per.task", "500", "streamshard.max.inflight", "100")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.max.inflight.per.task");
    }

    @Test
    void workerThreadsAndTheCapsThatFollowTheWorkers() {
        StreamShardConfig c = StreamShardConfig.from(Map.of("streamshard.workers", "4096"));
        assertThat(c.virtualWorkers()).isFalse();
        assertThat(c.maxInflightPerTask()).as("twice the workers").isEqualTo(8192);
        assertThat(c.maxInflight()).as("four times the workers").isEqualTo(16_384);
        c = StreamShardConfig.from(Map.of("streamshard.workers", "4096", "streamshard.max.inflight", "5000"));
        assertThat(c.maxInflightPerTask()).as("at most the global cap").isEqualTo(5000);
        c = StreamShardConfig.from(Map.of("streamshard.workers", "4096", "streamshard.max.inflight.per.task", "10"));
        assertThat(c.maxInflightPerTask()).as("as set").isEqualTo(10);
        assertThat(StreamShardConfig.from(Map.of("streamshard.worker.threads", "virtual"))
                        .virtualWorkers())
                .isTrue();
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of("streamshard.worker.threads", "green")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.worker.threads");
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of("streamshard.workers", "4097")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.workers")
                .hasMessageContaining("streamshard.worker.threads=virtual");
        Map<String, String> virtual10k =
                Map.of("streamshard.workers", "10000", "streamshard.worker.threads", "virtual");
        if (Runtime.version().feature() >= 21) {
            assertThat(StreamShardConfig.from(virtual10k).maxInflight()).isEqualTo(40_000);
        } else {
            assertThatThrownBy(() -> StreamShardConfig.from(virtual10k))
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("streamshard.workers")
                    .hasMessageContaining("this JVM is " + Runtime.version().feature());
        }
    }

    /** Every numeric setting at both ends of its range is taken; one step outside is refused, naming the key. */
    @Test
    void numericSettingsAtTheirLimits() {
        // {key, min, max, another setting the range needs (the per-task cap is at most the global one)}
        Object[][] limits = {
            {"streamshard.workers", 1, 4096, Map.of()},
            {"streamshard.max.inflight.per.task", 1, 1 << 20, Map.of("streamshard.max.inflight", "1048576")},
            {"streamshard.max.inflight", 1, 1 << 20, Map.of("streamshard.max.inflight.per.task", "1")},
            {"streamshard.inline.below.us", 0, 1_000_000, Map.of()},
        };
        for (Object[] l : limits) {
            String key = (String) l[0];
            long min = ((Number) l[1]).longValue();
            long max = ((Number) l[2]).longValue();
            @SuppressWarnings("unchecked")
            Map<String, String> base = (Map<String, String>) l[3];
            LongFunction<Map<String, String>> with = v -> {
                Map<String, String> m = new HashMap<>(base);
                m.put(key, Long.toString(v));
                return m;
            };
            for (long ok : new long[] {min, max}) {
                StreamShardConfig.from(with.apply(ok));
            }
            for (long bad : new long[] {min - 1, max + 1}) {
                assertThatThrownBy(() -> StreamShardConfig.from(with.apply(bad)))
                        .as("%s=%d", key, bad)
                        .isInstanceOf(ConfigException.class)
                        .hasMessageContaining(key);
            }
        }
        StreamShardConfig one = StreamShardConfig.from(
                Map.of("streamshard.max.inflight", "1", "streamshard.max.inflight.per.task", "1"));
        assertThat(one.maxInflight()).isEqualTo(1);
        assertThat(StreamShardConfig.from(Map.of("streamshard.drain.timeout.ms", "1"))
                        .drainTimeoutMs())
                .isEqualTo(1);
        assertThat(StreamShardConfig.from(Map.of("streamshard.drain.timeout.ms", "299999"))
                        .drainTimeoutMs())
                .isEqualTo(299_999);
        for (String bad : new String[] {"0", "300000", Long.toString(Long.MAX_VALUE), "9223372036854775808"}) {
            assertThatThrownBy(() -> StreamShardConfig.from(Map.of("streamshard.drain.timeout.ms", bad)))
                    .as(bad)
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("streamshard.drain.timeout.ms");
        }
    }

    @Test
    void retryIsOffByDefaultAndItsWorstCaseStaysUnderTheDrainTimeout() {
        StreamShardConfig off = StreamShardConfig.from(new Properties());
        assertThat(off.retryMaxAttempts()).isEqualTo(1);
        assertThat(off.retryBackoffMs()).isEqualTo(100);
        assertThat(off.retryBackoffMaxMs()).isEqualTo(10_000);
        assertThat(off.retryExceptions()).isEmpty();

        // 5 attempts: waits of 100, 200, 400, 800 ms = 1500 ms; inline hand-off is off with retry.
        StreamShardConfig on = StreamShardConfig.from(Map.of("streamshard.retry.max.attempts", "5"));
        assertThat(StreamShardConfig.worstCaseRetryMs(5, 100, 10_000)).isEqualTo(1_500);
        assertThat(StreamShardConfig.worstCaseRetryMs(5, 100, 300)).isEqualTo(100 + 200 + 300 + 300);
        assertThat(StreamShardConfig.worstCaseRetryMs(1, 100, 300)).isZero();
        assertThat(on.inlineBelowNanos()).isZero();

        assertThat(StreamShardConfig.from(Map.of(
                                "streamshard.retry.max.attempts", "3",
                                "streamshard.retry.backoff.ms", "500",
                                "streamshard.drain.timeout.ms", "1501"))
                        .retryMaxAttempts())
                .isEqualTo(3);
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of(
                        "streamshard.retry.max.attempts", "3",
                        "streamshard.retry.backoff.ms", "500",
                        "streamshard.drain.timeout.ms", "1500")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.retry.max.attempts")
                .hasMessageContaining("streamshard.retry.backoff.ms")
                .hasMessageContaining("streamshard.drain.timeout.ms")
                .hasMessageContaining("1500 ms");
        // The default drain timeout (60 s): 12 attempts wait 52.7 s at most, 13 attempts 62.7 s.
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of("streamshard.retry.max.attempts", "13")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.retry.max.attempts");
        assertThatThrownBy(() -> StreamShardConfig.from(
                        Map.of("streamshard.retry.backoff.ms", "200", "streamshard.retry.backoff.max.ms", "100")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.retry.backoff.max.ms");
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of("streamshard.retry.max.attempts", "0")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.retry.max.attempts");
        assertThatThrownBy(
                        () -> StreamShardConfig.from(Map.of("streamshard.retry.exceptions", "java.io.IOException, 3x")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.retry.exceptions")
                .hasMessageContaining("3x");
        assertThat(StreamShardConfig.from(Map.of("streamshard.retry.exceptions", "java.io.IOException,a.B$C"))
                        .retryExceptions())
                .containsExactly("java.io.IOException", "a.B$C");
    }

    @Test
    void drainTimeoutMustStayUnderMaxPollInterval() {
        assertThatThrownBy(() -> StreamShardConfig.from(
                        Map.of("streamshard.drain.timeout.ms", "60000", "max.poll.interval.ms", "30000")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.drain.timeout.ms")
                .hasMessageContaining("max.poll.interval.ms");
        assertThat(StreamShardConfig.from(Map.of(
                                "streamshard.drain.timeout.ms", "10000", "main.consumer.max.poll.interval.ms", "30000"))
                        .drainTimeoutMs())
                .isEqualTo(10_000);
    }

    /** The README's configuration table is exactly what the definitions say. */
    @Test
    void theStatusListenerIsOffByDefaultAndLoopbackOnlyUnlessAllowed() {
        assertThat(StreamShardConfig.from(new Properties()).statusListener()).isNull();
        assertThat(StreamShardConfig.from(Map.of("streamshard.status.listener", "127.0.0.1:7071"))
                        .statusListener())
                .containsExactly("127.0.0.1", "7071");
        assertThat(StreamShardConfig.from(Map.of("streamshard.status.listener", "[::1]:0"))
                        .statusListener())
                .containsExactly("::1", "0");
        assertThat(StreamShardConfig.from(Map.of("streamshard.status.listener", "localhost:7071"))
                        .statusListener())
                .containsExactly("localhost", "7071");
        for (String bad : List.of("7071", "127.0.0.1", "127.0.0.1:x", "127.0.0.1:70000", ":7071")) {
            assertThatThrownBy(() -> StreamShardConfig.from(Map.of("streamshard.status.listener", bad)))
                    .as(bad)
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("streamshard.status.listener")
                    .hasMessageContaining("host:port");
        }
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of("streamshard.status.listener", "0.0.0.0:7071")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.status.listener")
                .hasMessageContaining("not a loopback address")
                .hasMessageContaining("streamshard.status.allow.remote");
        assertThat(StreamShardConfig.from(Map.of(
                                "streamshard.status.listener",
                                "0.0.0.0:7071",
                                "streamshard.status.allow.remote",
                                "true"))
                        .statusListener())
                .containsExactly("0.0.0.0", "7071");
    }

    @Test
    void onlyStreamshardSettingsAreShown() {
        StreamShardConfig c = StreamShardConfig.from(
                Map.of("streamshard.workers", "16", "sasl.jaas.config", "secret", "bootstrap.servers", "b:9092"));
        assertThat(c.shown()).containsExactly(Map.entry("streamshard.workers", "16"));
    }

    @Test
    void readmeTableIsTheGeneratedOne() throws Exception {
        String readme = Files.readString(Path.of("..", "README.md"));
        assertThat(readme).contains(StreamShardConfig.toMarkdown().strip());
    }

    @Test
    void documentationListsEveryKey() {
        String md = StreamShardConfig.toMarkdown();
        for (String key : StreamShardConfig.DEF.names()) {
            assertThat(md).contains(key);
        }
    }

    @Test
    void settingsFromOutsideTheApplicationAreDefaultsTheApplicationOverrides() {
        StreamShardConfig c = StreamShardConfig.from(
                Map.of("streamshard.workers", "8", "application.id", "app"),
                Map.of(
                        "streamshard.workers",
                        "4",
                        "streamshard.drain.timeout.ms",
                        "5000",
                        "streamshard.it.bootstrap",
                        "ignored: not a setting"),
                "inline.below.us=0,streamshard.drain.timeout.ms=7000,parallel.processors=A,B,caching=disable");
        assertThat(c.workers()).isEqualTo(8);
        assertThat(c.drainTimeoutMs()).isEqualTo(5_000);
        assertThat(c.inlineBelowNanos()).isZero();
        assertThat(c.parallelProcessors()).isEqualTo(List.of("A", "B"));
        assertThat(c.keepCaching()).isFalse();
        assertThat(c.sources())
                .containsExactly(
                        Map.entry("streamshard.caching", StreamShardConfig.Source.AGENT_ARGUMENT),
                        Map.entry("streamshard.drain.timeout.ms", StreamShardConfig.Source.SYSTEM_PROPERTY),
                        Map.entry("streamshard.inline.below.us", StreamShardConfig.Source.AGENT_ARGUMENT),
                        Map.entry("streamshard.parallel.processors", StreamShardConfig.Source.AGENT_ARGUMENT),
                        Map.entry("streamshard.workers", StreamShardConfig.Source.APPLICATION));
        assertThat(c.shown())
                .containsEntry("streamshard.inline.below.us", "0")
                .containsEntry("streamshard.drain.timeout.ms", "5000")
                .doesNotContainKey("streamshard.it.bootstrap");
        assertThat(StreamShardConfig.from(Map.of(), Map.of(), "workers=4,,parallel.processors=A,")
                        .workers())
                .isEqualTo(4);
        assertThat(StreamShardConfig.from(Map.of(), Map.of(), null).sources()).isEmpty();
        assertThat(StreamShardConfig.from(Map.of(), Map.of(), " ").sources()).isEmpty();
    }

    @Test
    void badSettingsFromOutsideNameTheKeyAndWhereTheyCameFrom() {
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of(), Map.of(), "workers=lots"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.workers")
                .hasMessageContaining("agent argument");
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of(), Map.of("streamshard.workers", "0"), null))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.workers")
                .hasMessageContaining("system property");
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of(), Map.of(), "inline.below.uss=0"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.inline.below.uss")
                .hasMessageContaining("unknown");
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of(), Map.of(), "16"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("key=value");
        // An invalid value from outside is an error even where the application sets the key.
        assertThatThrownBy(() -> StreamShardConfig.from(Map.of("streamshard.workers", "8"), Map.of(), "workers=0"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streamshard.workers");
    }
}
