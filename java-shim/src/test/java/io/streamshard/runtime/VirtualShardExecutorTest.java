package io.streamshard.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every {@link ShardExecutorTest} again on virtual workers, which wait for work on the Java side
 * (the scheduler owes idle workers their wake-ups), and what only they can do. Runs on Java 21+
 * only: the build's {@code virtual-workers} execution (a JDK 25) runs it, and it fails rather
 * than skips on a JVM without virtual threads.
 */
class VirtualShardExecutorTest extends ShardExecutorTest {

    @BeforeAll
    static void needsVirtualThreads() {
        assertThat(WorkerThreads.virtualAvailable())
                .as("virtual threads on this JVM (%s)", System.getProperty("java.version"))
                .isTrue();
    }

    @Override
    WorkerThreads kind() {
        return WorkerThreads.VIRTUAL;
    }

    /**
     * 2,000 virtual workers on a two-core machine's handful of carriers hold 2,000 blocking
     * calls at once: a worker that waited for work inside native code, or ran its call pinned,
     * would hold a carrier and cap this at the carrier count.
     */
    @Test
    void thousandsOfBlockingCallsAreInFlightAtOnce() throws Exception {
        int workers = 2_000;
        try (ShardExecutor ex = new ShardExecutor("many", WorkerThreads.VIRTUAL, workers, workers, workers, 30_000)) {
            ShardExecutor.ShardTask task = ex.register(0, 0, false, e -> {});
            AtomicInteger inFlight = new AtomicInteger();
            AtomicInteger most = new AtomicInteger();
            CountDownLatch done = new CountDownLatch(workers);
            AtomicInteger nonVirtual = new AtomicInteger();
            for (int i = 0; i < workers; i++) {
                byte[] key = ByteBuffer.allocate(4).putInt(i).array();
                boolean accepted = task.submit(0, i, key, () -> {
                    if (!Thread.currentThread().getClass().getName().equals("java.lang.VirtualThread")) {
                        nonVirtual.incrementAndGet();
                    }
                    most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                    try {
                        Thread.sleep(300);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    inFlight.decrementAndGet();
                    done.countDown();
                });
                assertThat(accepted).as("record %d accepted", i).isTrue();
            }
            assertThat(done.await(60, TimeUnit.SECONDS)).as("every call ended").isTrue();
            assertThat(nonVirtual.get())
                    .as("records run on non-virtual threads")
                    .isZero();
            assertThat(most.get())
                    .as("calls in flight at once, of %d", workers)
                    .isGreaterThanOrEqualTo(workers * 3 / 4);
            assertThat(task.drain()).isTrue();
        }
    }
}
