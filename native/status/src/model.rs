//! The status model: what Java pushes ([`JavaView`]), what the service serves ([`Snapshot`], the
//! generated gRPC message, which is serde too), and how the two are joined with the scheduler's
//! live counters.
//!
//! Java builds its view on cold paths only (a side thread of the instance, never a record's
//! path); the scheduler's numbers are read here, lock-free, when a snapshot is asked for.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use streamshard_core::{MetricsSnapshot, PartitionProgress, SampledTimes, TaskMetrics};

use crate::pb;

/// What the service serves (the JSON endpoint with serde, gRPC as it is).
pub type Snapshot = pb::StatusSnapshot;

/// The instance as Java sees it: identity, settings, threads, topology, tasks. Its instance,
/// threads and sub-topologies are served as they are.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JavaView {
    pub instance: pb::Instance,
    pub threads: Vec<pb::StreamThread>,
    pub subtopologies: Vec<pb::SubTopology>,
    pub tasks: Vec<JavaTask>,
}

/// One task as Java sees it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JavaTask {
    pub id: String,
    pub subtopology: u32,
    pub partition: u32,
    pub thread: String,
    #[serde(with = "crate::names::mode")]
    pub mode: i32,
    pub summary: String,
    /// Whether the task is registered with the scheduler (streamshard runs it).
    pub sharded: bool,
    pub serial_backlog: u64,
    pub commit_backlog: u64,
    pub held_bytes: u64,
    pub drain_total: u64,
    pub drain_time_total_ns: u64,
    pub drain_time_max_ns: u64,
    pub partitions: Vec<JavaPartition>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JavaPartition {
    /// The partition's index in the task's scheduler registration (absent for a stock task).
    pub index: Option<u32>,
    pub topic: String,
    pub partition: i32,
    pub committed: Option<i64>,
    pub end_offset: Option<i64>,
}

/// Per-second rates from two readings of the scheduler's totals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rates {
    pub handoffs_per_sec: f64,
    pub completed_per_sec: f64,
    /// Per task `(subtopology, partition)`: completed records per second.
    pub task_completed_per_sec: HashMap<(u32, u32), f64>,
}

impl Rates {
    /// Rates between an earlier and a later reading `seconds` apart.
    pub fn between(earlier: &MetricsSnapshot, later: &MetricsSnapshot, seconds: f64) -> Rates {
        if seconds <= 0.0 {
            return Rates::default();
        }
        let per_sec = |a: u64, b: u64| b.saturating_sub(a) as f64 / seconds;
        let before: HashMap<(u32, u32), u64> = earlier
            .tasks
            .iter()
            .map(|t| ((t.task.subtopology, t.task.partition), t.finished))
            .collect();
        Rates {
            handoffs_per_sec: per_sec(earlier.totals.submitted, later.totals.submitted),
            completed_per_sec: per_sec(earlier.totals.finished, later.totals.finished),
            task_completed_per_sec: later
                .tasks
                .iter()
                .map(|t| {
                    let key = (t.task.subtopology, t.task.partition);
                    // A task registered since the earlier reading counts from zero.
                    (
                        key,
                        per_sec(before.get(&key).copied().unwrap_or(0), t.finished),
                    )
                })
                .collect(),
        }
    }
}

fn mean(t: &SampledTimes) -> Option<f64> {
    t.mean_ns()
}

/// Joins Java's view with the scheduler's counters.
///
/// `progress` gives the partitions of a task registered with the scheduler (by sub-topology and
/// partition), as `(index, progress)` pairs; it is asked only for tasks Java reports as sharded.
pub fn snapshot(
    view: &JavaView,
    metrics: &MetricsSnapshot,
    rates: &Rates,
    taken_at_ms: i64,
    mut progress: impl FnMut(u32, u32) -> Vec<(u32, PartitionProgress)>,
) -> Snapshot {
    let t = &metrics.totals;
    let by_task: HashMap<(u32, u32), &TaskMetrics> = metrics
        .tasks
        .iter()
        .filter(|m| !m.closed)
        .map(|m| ((m.task.subtopology, m.task.partition), m))
        .collect();
    let tasks = view
        .tasks
        .iter()
        .map(|jt| {
            let key = (jt.subtopology, jt.partition);
            let live = if jt.sharded {
                by_task.get(&key).copied()
            } else {
                None
            };
            let stats = jt.sharded.then(|| task_stats(jt, live, rates));
            let progress: HashMap<u32, PartitionProgress> = if live.is_some() {
                progress(jt.subtopology, jt.partition).into_iter().collect()
            } else {
                HashMap::new()
            };
            let partitions = jt
                .partitions
                .iter()
                .map(|jp| {
                    let p = jp
                        .index
                        .and_then(|i| progress.get(&i).copied())
                        .unwrap_or_default();
                    pb::PartitionStatus {
                        topic: jp.topic.clone(),
                        partition: jp.partition,
                        submitted: p.submitted,
                        queued: p.queued,
                        running: p.running,
                        finished: p.finished,
                        failed: p.failed,
                        lowest_unfinished: p.lowest_unfinished,
                        last_submitted: p.last_submitted,
                        committed: jp.committed,
                        end_offset: jp.end_offset,
                    }
                })
                .collect();
            pb::Task {
                id: jt.id.clone(),
                subtopology: jt.subtopology,
                partition: jt.partition,
                thread: jt.thread.clone(),
                mode: jt.mode,
                summary: jt.summary.clone(),
                metrics: stats,
                partitions,
            }
        })
        .collect();
    Snapshot {
        taken_at_ms,
        instance: Some(view.instance.clone()),
        metrics: Some(pb::InstanceMetrics {
            workers: view.instance.workers,
            in_flight: t.running as u64,
            queued: t.queued as u64,
            slots_in_use: t.queued as u64 + t.running as u64,
            handoffs_total: t.submitted,
            completed_total: t.finished,
            failed_total: t.failures,
            handoffs_per_sec: rates.handoffs_per_sec,
            completed_per_sec: rates.completed_per_sec,
            wait_time_avg_ns: (metrics.wait_ns.count > 0)
                .then(|| metrics.wait_ns.sum as f64 / metrics.wait_ns.count as f64),
            wait_time_max_ns: metrics.wait_ns.max,
            run_time_avg_ns: (metrics.run_ns.count > 0)
                .then(|| metrics.run_ns.sum as f64 / metrics.run_ns.count as f64),
            run_time_max_ns: metrics.run_ns.max,
        }),
        threads: view.threads.clone(),
        subtopologies: view.subtopologies.clone(),
        tasks,
    }
}

fn task_stats(jt: &JavaTask, live: Option<&TaskMetrics>, rates: &Rates) -> pb::TaskMetrics {
    let zero = SampledTimes::default();
    let (wait, run) = live.map_or((&zero, &zero), |m| (&m.wait, &m.run));
    pb::TaskMetrics {
        queued: live.map_or(0, |m| m.queued as u64),
        in_flight: live.map_or(0, |m| m.running as u64),
        handoffs_total: live.map_or(0, |m| m.submitted),
        completed_total: live.map_or(0, |m| m.finished),
        completed_per_sec: rates
            .task_completed_per_sec
            .get(&(jt.subtopology, jt.partition))
            .copied()
            .unwrap_or(0.0),
        failed_total: live.map_or(0, |m| m.failures),
        active_keys: live.map_or(0, |m| m.active_keys as u64),
        deepest_key_queue: live.map_or(0, |m| m.max_key_depth as u64),
        wait_time_avg_ns: mean(wait),
        wait_time_max_ns: wait.max_ns,
        run_time_avg_ns: mean(run),
        run_time_max_ns: run.max_ns,
        serial_backlog: jt.serial_backlog,
        commit_backlog: jt.commit_backlog,
        held_bytes: jt.held_bytes,
        drain_total: jt.drain_total,
        drain_time_avg_ns: (jt.drain_total > 0)
            .then(|| jt.drain_time_total_ns as f64 / jt.drain_total as f64),
        drain_time_max_ns: jt.drain_time_max_ns,
        retries_total: live.map_or(0, |m| m.retries),
        in_backoff: live.map_or(0, |m| m.backoff as u64),
    }
}
