package org.apache.kafka.streams.processor.internals;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamshard.runtime.WorkerThread;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Each thread sees its own frame only: workers keep it in their thread, other threads in a ThreadLocal. */
class StreamShardFramesTest {
    private static StreamShardFrames.Frame frame(Object context) {
        return new StreamShardFrames.Frame(context, null, null, 1L, 2L, null);
    }

    /** What {@code of(context)} gives on a new plain thread. */
    private static StreamShardFrames.Frame seenElsewhere(Object context) throws Exception {
        CompletableFuture<StreamShardFrames.Frame> seen = new CompletableFuture<>();
        Thread t = new Thread(() -> seen.complete(StreamShardFrames.of(context)));
        t.start();
        return seen.get(10, TimeUnit.SECONDS);
    }

    @Test
    void aPlainThreadSeesItsOwnFrameAndNoOtherThreadDoes() throws Exception {
        Object context = new Object();
        StreamShardFrames.Frame f = frame(context);
        assertThat(StreamShardFrames.of(context)).isNull();
        StreamShardFrames.push(f);
        try {
            assertThat(StreamShardFrames.of(context)).isSameAs(f);
            assertThat(StreamShardFrames.of(new Object())).as("another context").isNull();
            assertThat(seenElsewhere(context)).isNull();
        } finally {
            StreamShardFrames.pop();
        }
        assertThat(StreamShardFrames.of(context)).isNull();
    }

    @Test
    void aWorkerSeesItsOwnFrameWhilePlainThreadsSeeNone() throws Exception {
        Object context = new Object();
        StreamShardFrames.Frame f = frame(context);
        AtomicReference<StreamShardFrames.Frame> onWorker = new AtomicReference<>();
        AtomicReference<StreamShardFrames.Frame> afterPop = new AtomicReference<>(f);
        CountDownLatch pushed = new CountDownLatch(1);
        CountDownLatch checked = new CountDownLatch(1);
        WorkerThread worker = new WorkerThread(
                () -> {
                    StreamShardFrames.push(f);
                    onWorker.set(StreamShardFrames.of(context));
                    pushed.countDown();
                    try {
                        checked.await(10, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    StreamShardFrames.pop();
                    afterPop.set(StreamShardFrames.of(context));
                },
                "frames-test-worker");
        worker.start();
        assertThat(pushed.await(10, TimeUnit.SECONDS)).isTrue();
        try {
            assertThat(onWorker.get()).isSameAs(f);
            assertThat(StreamShardFrames.of(context))
                    .as("this thread, while the worker has its frame")
                    .isNull();
            assertThat(seenElsewhere(context)).isNull();
        } finally {
            checked.countDown();
            worker.join(10_000);
        }
        assertThat(afterPop.get()).isNull();
    }
}
