package io.streamshard.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** RoomWait's poll for a task waiting for input; each case on a thread of its own (the state is per thread). */
class RoomWaitTest {
    private static final Duration POLL = Duration.ofMillis(100);
    private static final long DUE_MS = RoomWait.POLL_EVERY_NANOS / 1_000_000 + 5;

    private static void onFreshThread(Runnable body) throws Exception {
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                failed.set(e);
            }
        });
        t.start();
        t.join();
        if (failed.get() instanceof Error) {
            throw (Error) failed.get();
        }
        if (failed.get() != null) {
            throw new AssertionError(failed.get());
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void withNoTaskWaitingForInputTheLoopIsNeverEndedForAPoll() throws Exception {
        onFreshThread(() -> {
            assertEquals(POLL, RoomWait.beforePoll(POLL), "nothing at its cap: a stock poll");
            sleep(DUE_MS);
            assertFalse(RoomWait.pollDue(), "no task waits for input: Kafka Streams' loop goes on");
        });
    }

    @Test
    void aTaskWaitingForInputEndsTheLoopOnceThePollIsDueAndThePollDoesNotWait() throws Exception {
        onFreshThread(() -> {
            long polled = System.nanoTime();
            RoomWait.beforePoll(POLL);
            RoomWait.waitingForInput();
            boolean due = RoomWait.pollDue();
            if (System.nanoTime() - polled < RoomWait.POLL_EVERY_NANOS) {
                assertFalse(due, "just polled: not due yet");
            }
            sleep(DUE_MS);
            assertTrue(RoomWait.pollDue(), "a task waited for input since the last poll");
            assertTrue(RoomWait.pollDue(), "every task answers not processable until the poll");
            assertEquals(
                    Duration.ZERO, RoomWait.beforePoll(POLL), "the poll the loop was ended for takes what is fetched");
            assertFalse(RoomWait.pollDue(), "after the poll: the wait for input starts over");
            sleep(DUE_MS);
            assertFalse(RoomWait.pollDue(), "no task said since the poll that it waits for input");
            assertEquals(POLL, RoomWait.beforePoll(POLL), "a poll the loop ended by itself: stock's poll time");
        });
    }

    @Test
    void withoutThePollTheTasksTakeRecordsAgainAfterAWhile() throws Exception {
        onFreshThread(() -> {
            long before = RoomWait.polls();
            RoomWait.beforePoll(POLL);
            assertEquals(
                    before + 1, RoomWait.polls(), "each poll counted (a task never refused before it was asked once)");
            RoomWait.waitingForInput();
            sleep(DUE_MS);
            assertTrue(RoomWait.pollDue(), "due");
            // Tasks left stock on the same thread keep Kafka Streams' loop going: no poll comes.
            sleep(RoomWait.REFUSE_AT_MOST_NANOS / 1_000_000 + 5);
            assertFalse(RoomWait.pollDue(), "refused long enough without a poll: records are taken again");
            long restarted = System.nanoTime();
            boolean due = RoomWait.pollDue();
            if (System.nanoTime() - restarted < RoomWait.POLL_EVERY_NANOS) {
                assertFalse(due, "and the wait for the next poll starts over");
            }
            sleep(DUE_MS);
            assertTrue(RoomWait.pollDue(), "due again, a task still waiting for input");
        });
    }
}
