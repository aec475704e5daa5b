//! The lock-free metrics: counters written only by the lock holder (relaxed load + store, see
//! lib.rs) and read by anyone without the lock.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use super::Scheduler;
use crate::histogram::bucket_of;
use crate::metrics::{MetricsSnapshot, TaskCounters};
use crate::state::{DepthMove, State, Task};

/// Adds one to a counter only the lock holder writes (relaxed load + store, see lib.rs).
pub(super) fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed) + n, Relaxed);
}

impl Scheduler {
    /// Publishes a task's counters (called under the lock after every change).
    pub(super) fn publish(&self, ti: u32, t: &Task) {
        let c = &self.counters[ti as usize];
        c.queued.store(t.queued, Relaxed);
        c.running.store(t.running, Relaxed);
        c.submitted.store(t.submitted, Relaxed);
        c.finished.store(t.finished, Relaxed);
        c.failures.store(t.failures, Relaxed);
        c.dropped.store(t.dropped, Relaxed);
        c.retries.store(t.retries, Relaxed);
        c.backoff.store(t.backoff, Relaxed);
        c.active_keys.store(t.active_keys(), Relaxed);
        c.max_key_depth.store(t.max_key_depth, Relaxed);
        c.closed.store(t.closed, Relaxed);
        c.failed.store(t.failure.is_some(), Relaxed);
    }

    pub(super) fn publish_task(&self, st: &State, ti: u32) {
        if let Some(t) = st.tasks[ti as usize].as_ref() {
            self.publish(ti, t);
        }
    }

    pub(super) fn publish_totals(&self, st: &State) {
        self.totals
            .queued
            .store(st.unfinished - st.running, Relaxed);
        self.totals.running.store(st.running, Relaxed);
    }

    /// Publishes a task's sampled wait times: after a timed dispatch (only those change them) and
    /// at registration (a reused counter slot starts from zero).
    pub(super) fn publish_wait(c: &TaskCounters, t: &Task) {
        c.wait_count.store(t.wait.count, Relaxed);
        c.wait_sum_ns.store(t.wait.sum, Relaxed);
        c.wait_max_ns.store(t.wait.max, Relaxed);
    }

    /// Publishes a task's sampled run times: after a timed completion, and at registration.
    pub(super) fn publish_run(c: &TaskCounters, t: &Task) {
        c.run_count.store(t.run.count, Relaxed);
        c.run_sum_ns.store(t.run.sum, Relaxed);
        c.run_max_ns.store(t.run.max, Relaxed);
    }

    /// Moves one key between depth buckets (depth 0 = no bucket).
    pub(super) fn move_depth(&self, m: DepthMove) {
        let (a, b) = (bucket_of(m.from as u64), bucket_of(m.to as u64));
        if a != b {
            if m.from > 0 {
                self.key_depths.adjust_exclusive(a, -1);
            }
            if m.to > 0 {
                self.key_depths.adjust_exclusive(b, 1);
            }
        }
    }

    /// A copy of all counters and distributions, read without the scheduler lock.
    pub fn metrics(&self) -> MetricsSnapshot {
        MetricsSnapshot {
            tasks: self
                .counters
                .iter()
                .filter_map(TaskCounters::snapshot)
                .collect(),
            totals: self.totals.snapshot(),
            key_depths: self.key_depths.snapshot(),
            wait_ns: self.wait_ns.snapshot(),
            run_ns: self.run_ns.snapshot(),
        }
    }
}
