//! streamshard's shard scheduler.
//!
//! A Kafka Streams task hands each record's numbers (task, partition, offset, key hash, slot) to
//! [`Scheduler::submit`]; worker threads take runnable records with [`Scheduler::poll`] and
//! report them with [`Scheduler::complete`] or [`Scheduler::fail`], or send one back to wait
//! with [`Scheduler::retry`] (it keeps its key's place; the agent's `streamshard.retry.*`). The
//! scheduler never sees the record itself: the caller keeps it in a slot table indexed by the
//! slot number.
//!
//! # Guarantees
//!
//! - **Per-key FIFO.** Records of one task with the same key hash (or all null-key records of a
//!   task, unless the task asks for unordered null keys) run one at a time, in submission order.
//!   Two keys whose hashes collide share a lane: they serialize, they are never reordered.
//! - **No loss, no duplicate.** A slot is handed out at most once per submission, and every
//!   submitted slot ends exactly one way: completed, failed, or returned by
//!   `close(DropQueued)`; a retried record is the same submission, dispatched again when due.
//! - **Watermark.** Per partition, the lowest offset not yet completed successfully, over the
//!   submitted sequence (offsets may have gaps). A failed record holds it.
//! - **Fairness.** Tasks with ready records take turns, one record per turn; within a task, keys
//!   take turns in the order they became ready (a key re-enters at the back after each record).
//!   A hot key therefore gets at most one record per turn of its task, and a busy task at most
//!   one per turn of the ring.
//! - **Bounded memory.** Slots are `0..max_inflight`; per-task and global caps bound unfinished
//!   records. After warm-up (hash maps and queues at their high-water capacity) the
//!   submit → poll → complete cycle allocates nothing.
//!
//! # Locking design
//!
//! One [`std::sync::Mutex`] guards all scheduling state; two condition variables hang off it:
//! `work_cv` (idle pollers) and `drain_cv` (drains and closes). Each operation takes the lock
//! once, does O(1) work per record (two hash-map operations on the task's key map, list splices),
//! and releases it: no allocation in steady state, no I/O, no call into caller code, no
//! iteration over keys or tasks (closing and removing a task are the exceptions, O(its size)).
//! `complete_and_poll` lets a worker finish a batch and take the next under one acquisition, and
//! `poll` hands out up to `max` records per acquisition.
//!
//! Wake-ups: a poller that finds nothing first spins briefly outside the lock (at most one poller
//! at a time: `spinning`, a field under the lock), watching the atomic `ready_hint`, then counts
//! itself in `idle_pollers` and waits on `work_cv`. Whoever makes a task's first record ready
//! (submit, or the completion that unblocks a key) signals one idle poller unless one is
//! spinning; a poller that leaves more ready work behind signals the next one, so wake-ups chain
//! without a thundering herd. Both wake-ups are deferred while enough records run that one of
//! their workers will take the work soon (`SchedulerConfig::wake_defer_ratio`); `complete` and
//! `fail` alone, whose callers do not poll next, never defer. A completion that leaves its task
//! with nothing running wakes the drain waiters when there are any. Whom to wake is decided under the lock; the signal is sent
//! after releasing it. The hint is only a hint: the spinner re-takes the lock and re-checks
//! before it takes work or sleeps, and it stays `spinning` until then, so a submitter that
//! skipped the signal because of it cannot lose a wake-up. `tests/loom.rs` model-checks this
//! path (`--cfg loom` swaps in loom's mutex, condvar and atomics, see `sync.rs`).
//!
//! External waits (`SchedulerConfig::external_waits`, the JVM's virtual workers, which must not
//! block in native code): a poller calls `poll_or_idle`, which never blocks; finding nothing, it
//! is counted in `idle_pollers` and parks on the caller's side. The same wake-up decisions are
//! taken under the lock, but a decided wake-up is owed to the caller of the operation
//! (`take_owed_wakes`, a per-thread count read right after the call) instead of signalled; the
//! caller wakes that many parked pollers (a counting semaphore: a wake-up given before its
//! poller parks is kept, so none is lost), and a woken poller uncounts itself on its next call.
//!
//! Metrics are plain atomics outside the lock. They are written only under the lock (a single
//! writer at any moment, so relaxed load + store instead of read-modify-write) and read by
//! [`Scheduler::metrics`] and [`Scheduler::has_capacity`] without it: reading never stalls the
//! hot path. Values are individually exact; a snapshot may be a few records apart across values.
//!
//! The code is in two layers: `state/` holds the scheduling state and its transitions
//! (submit, dispatch, finish, retry, drop queued), which know nothing of the lock, the clock or
//! the metrics, report what they did and assert their own preconditions (`debug_assert!`);
//! `scheduler/` is the shell around it (the lock and spin policy, the condition variables and
//! who waits on them, the wake-up policy, the published counters).
//!
//! # Invariants (kept under the lock)
//!
//! `Scheduler::check_invariants` (debug builds) checks each of them over the whole state, and
//! that the published counters agree with it; the model test runs it after every step, the
//! stress test every millisecond while two submitters and three pollers run.
//!
//! 1. A slot is in exactly one state: free, waiting (in one lane's wait list), ready (in its
//!    task's ready list), running, or in backoff (retried, not due yet); the `next` link is used
//!    by at most one list at a time.
//! 2. A lane exists iff its key has an unfinished record; its `active` record is ready, running
//!    or in backoff, and every other record of the key waits behind it in submission order.
//!    Hence at most one record per (task, key) is ready, running or in backoff.
//! 3. A task is in the ring iff `in_ring`; a task with ready records and no failure is in it.
//! 4. `queued + running` of a task equals its unfinished records and never exceeds its cap; the
//!    sum over tasks never exceeds `max_inflight`.
//! 5. Per partition, `submitted = queued + running + finished + failed + dropped`, and the
//!    watermark is the offset of the first record in submission order not finished successfully.
//! 6. The timers hold exactly the records in backoff, once each, at their due times; a task's
//!    `queued` counts its records in backoff.

mod config;
mod error;
pub mod histogram;
mod metrics;
mod partition;
mod scheduler;
mod state;
mod sync;

pub use config::{NullKeyOrdering, SchedulerConfig, TaskOptions};
pub use error::{Error, Remaining, TaskFailure, TaskId};
pub use histogram::HistogramSnapshot;
pub use metrics::{MetricsSnapshot, SampledTimes, TaskMetrics, Totals};
pub use partition::PartitionProgress;
pub use scheduler::{
    take_owed_wakes, Capacity, CloseMode, Polled, Scheduler, Submission, TaskHandle,
};
