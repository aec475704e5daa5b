//! A registered task: its lanes, its ready list, its partitions' progress and its counters.

use std::collections::HashMap;

use super::lanes::{KeyHashBuilder, Lane, IDLE_LANE};
use super::slots::SlotList;
use super::NIL;
use crate::config::NullKeyOrdering;
use crate::error::{Remaining, TaskFailure, TaskId};
use crate::partition::PartitionTracker;

/// Count, sum and largest of sampled durations (ns), kept under the lock.
#[derive(Clone, Copy, Default)]
pub(crate) struct Sums {
    pub(crate) count: u64,
    pub(crate) sum: u64,
    pub(crate) max: u64,
}

impl Sums {
    pub(crate) fn add(&mut self, v: u64) {
        self.count += 1;
        self.sum = self.sum.saturating_add(v);
        self.max = self.max.max(v);
    }
}

pub(crate) struct Task {
    pub(crate) id: TaskId,
    pub(super) null_keys: NullKeyOrdering,
    pub(crate) cap: u32,
    pub(super) lanes: HashMap<u64, Lane, KeyHashBuilder>,
    /// The serial lane of null keys; idle while `depth == 0`.
    pub(super) null_lane: Lane,
    pub(super) ready: SlotList,
    pub(super) in_ring: bool,
    pub(super) ring_next: u32,
    pub(crate) partitions: Vec<PartitionTracker>,
    pub(crate) closed: bool,
    pub(crate) failure: Option<Box<TaskFailure>>,
    pub(crate) queued: u32,
    pub(crate) running: u32,
    pub(crate) submitted: u64,
    pub(crate) finished: u64,
    pub(crate) failures: u64,
    pub(crate) dropped: u64,
    /// Records in backoff now (counted in `queued` too).
    pub(crate) backoff: u32,
    /// Records sent back to wait by [`State::retry`], since the task was registered.
    pub(crate) retries: u64,
    pub(crate) max_key_depth: u32,
    /// Sampled submit-to-dispatch times of this task's records, ns.
    pub(crate) wait: Sums,
    /// Sampled dispatch-to-complete times of this task's records, ns.
    pub(crate) run: Sums,
    /// Free places a room waiter needs in this task (0: nobody waits for it). See
    /// `Scheduler::wait_for_room`.
    pub(crate) room_want: u32,
}

impl Task {
    pub(super) fn new(id: TaskId, null_keys: NullKeyOrdering, cap: u32) -> Self {
        Task {
            id,
            null_keys,
            cap,
            lanes: HashMap::with_hasher(KeyHashBuilder),
            null_lane: IDLE_LANE,
            ready: SlotList::EMPTY,
            in_ring: false,
            ring_next: NIL,
            partitions: Vec::new(),
            closed: false,
            failure: None,
            queued: 0,
            running: 0,
            submitted: 0,
            finished: 0,
            failures: 0,
            dropped: 0,
            backoff: 0,
            retries: 0,
            max_key_depth: 0,
            wait: Sums::default(),
            run: Sums::default(),
            room_want: 0,
        }
    }

    pub(crate) fn unfinished(&self) -> u32 {
        self.queued + self.running
    }

    pub(crate) fn active_keys(&self) -> u32 {
        self.lanes.len() as u32 + (self.null_lane.depth > 0) as u32
    }

    pub(crate) fn remaining(&self) -> Remaining {
        Remaining {
            task: self.id,
            queued: self.queued,
            running: self.running,
            backoff: self.backoff,
            keys: self.active_keys(),
            partitions: self
                .partitions
                .iter()
                .enumerate()
                .filter_map(|(p, t)| t.progress.lowest_unfinished.map(|o| (p as u32, o)))
                .collect(),
        }
    }
}
