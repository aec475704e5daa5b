//! Counters the scheduler publishes for readers that must not take its lock.
//!
//! The scheduler computes every value under its lock and publishes it with a relaxed store (one
//! writer at a time, so no read-modify-write is paid on the hot path). Readers load them without
//! any lock; a snapshot is therefore a set of individually exact values that may be a few records
//! apart from each other.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::error::TaskId;
use crate::histogram::HistogramSnapshot;

/// Published state of one task slot of the task table.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct TaskCounters {
    pub generation: AtomicU32,
    pub live: AtomicBool,
    pub closed: AtomicBool,
    pub failed: AtomicBool,
    pub id: AtomicU64,
    pub cap: AtomicU32,
    pub queued: AtomicU32,
    pub running: AtomicU32,
    pub submitted: AtomicU64,
    pub finished: AtomicU64,
    pub failures: AtomicU64,
    pub dropped: AtomicU64,
    pub retries: AtomicU64,
    pub backoff: AtomicU32,
    pub active_keys: AtomicU32,
    pub max_key_depth: AtomicU32,
    pub wait_count: AtomicU64,
    pub wait_sum_ns: AtomicU64,
    pub wait_max_ns: AtomicU64,
    pub run_count: AtomicU64,
    pub run_sum_ns: AtomicU64,
    pub run_max_ns: AtomicU64,
}

pub(crate) fn pack_id(id: TaskId) -> u64 {
    (id.subtopology as u64) << 32 | id.partition as u64
}

pub(crate) fn unpack_id(v: u64) -> TaskId {
    TaskId {
        subtopology: (v >> 32) as u32,
        partition: v as u32,
    }
}

/// Totals over all tasks.
#[derive(Default)]
pub(crate) struct TotalCounters {
    pub submitted: AtomicU64,
    pub finished: AtomicU64,
    pub failures: AtomicU64,
    pub dropped: AtomicU64,
    pub queued: AtomicU32,
    pub running: AtomicU32,
}

impl TaskCounters {
    pub fn snapshot(&self) -> Option<TaskMetrics> {
        let generation = self.generation.load(Relaxed);
        if !self.live.load(Relaxed) {
            return None;
        }
        let m = TaskMetrics {
            task: unpack_id(self.id.load(Relaxed)),
            closed: self.closed.load(Relaxed),
            failed: self.failed.load(Relaxed),
            cap: self.cap.load(Relaxed),
            queued: self.queued.load(Relaxed),
            running: self.running.load(Relaxed),
            submitted: self.submitted.load(Relaxed),
            finished: self.finished.load(Relaxed),
            failures: self.failures.load(Relaxed),
            dropped: self.dropped.load(Relaxed),
            retries: self.retries.load(Relaxed),
            backoff: self.backoff.load(Relaxed),
            active_keys: self.active_keys.load(Relaxed),
            max_key_depth: self.max_key_depth.load(Relaxed),
            wait: SampledTimes {
                count: self.wait_count.load(Relaxed),
                sum_ns: self.wait_sum_ns.load(Relaxed),
                max_ns: self.wait_max_ns.load(Relaxed),
            },
            run: SampledTimes {
                count: self.run_count.load(Relaxed),
                sum_ns: self.run_sum_ns.load(Relaxed),
                max_ns: self.run_max_ns.load(Relaxed),
            },
        };
        // A task removed and another registered in its place while we copied: skip it.
        (self.generation.load(Relaxed) == generation).then_some(m)
    }
}

/// One task's counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskMetrics {
    pub task: TaskId,
    pub closed: bool,
    pub failed: bool,
    /// Cap on unfinished (queued + running) records.
    pub cap: u32,
    /// Submitted, not yet handed to a worker (waiting behind their key, or ready).
    pub queued: u32,
    /// Handed to a worker, not yet completed or failed.
    pub running: u32,
    pub submitted: u64,
    pub finished: u64,
    pub failures: u64,
    /// Queued records discarded by `close(DropQueued)`.
    pub dropped: u64,
    /// Records sent back to wait for a retry (`Scheduler::retry`).
    pub retries: u64,
    /// Records waiting for their retry now (counted in `queued` too).
    pub backoff: u32,
    /// Keys (and the null-key lane) that have unfinished records now.
    pub active_keys: u32,
    /// Deepest key queue (unfinished records of one key) seen since the task was registered.
    pub max_key_depth: u32,
    /// Sampled submit-to-dispatch times of this task's records.
    pub wait: SampledTimes,
    /// Sampled dispatch-to-complete times of this task's records.
    pub run: SampledTimes,
}

/// Count, sum and largest of one task's sampled durations, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampledTimes {
    pub count: u64,
    pub sum_ns: u64,
    pub max_ns: u64,
}

impl SampledTimes {
    pub fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64)
    }
}

/// Totals over all tasks, since the scheduler was created.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub submitted: u64,
    pub finished: u64,
    pub failures: u64,
    pub dropped: u64,
    pub queued: u32,
    pub running: u32,
}

/// A copy of the scheduler's metrics, taken without its lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricsSnapshot {
    pub tasks: Vec<TaskMetrics>,
    pub totals: Totals,
    /// Current depth of every active key queue: bucket counts are numbers of keys.
    pub key_depths: HistogramSnapshot,
    /// Nanoseconds from submit to dispatch (sampled as configured).
    pub wait_ns: HistogramSnapshot,
    /// Nanoseconds from dispatch to complete or fail (sampled as configured).
    pub run_ns: HistogramSnapshot,
}

impl TotalCounters {
    pub fn snapshot(&self) -> Totals {
        Totals {
            submitted: self.submitted.load(Relaxed),
            finished: self.finished.load(Relaxed),
            failures: self.failures.load(Relaxed),
            dropped: self.dropped.load(Relaxed),
            queued: self.queued.load(Relaxed),
            running: self.running.load(Relaxed),
        }
    }
}
