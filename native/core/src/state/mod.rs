//! The scheduling state and its transitions, apart from locking, wake-ups and metrics.
//!
//! Everything here runs under the scheduler's lock and nothing here knows of it: no condition
//! variable, no atomic, no clock (the shell passes the time in). Each transition returns what
//! happened as a `#[must_use]` value — which record became ready, whether its task entered the
//! ring, how a key's depth moved, whether a task went idle — and the shell (`scheduler/`)
//! decides whom to wake and what to publish from it. [`State::check_invariants`] states the
//! crate's invariants as code; the model and stress tests run it after every step.
//!
//! By role: the slot table and its lists (`slots.rs`), a key's lane (`lanes.rs`), what the
//! transitions report (`outcomes.rs`), the invariants (`invariants.rs`); the state and its
//! transitions here.

#[cfg(any(test, debug_assertions))]
mod invariants;
mod lanes;
mod outcomes;
mod slots;
mod task;

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap};

use lanes::{Lane, IDLE_LANE};
pub(crate) use outcomes::{DepthMove, Dispatched, Finished, Outcome, Readied, Retried, Submitted};
use slots::FREE_SLOT;
pub(crate) use slots::{SlotEntry, SlotList, SlotState};
pub(crate) use task::Task;

use crate::config::NullKeyOrdering;
use crate::error::{Error, TaskFailure, TaskId};
use crate::partition::PartitionTracker;

/// End of an intrusive list.
pub(crate) const NIL: u32 = u32::MAX;

/// Names a registered task. Cheap to copy; stale handles (of removed tasks) are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskHandle {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl TaskHandle {
    /// The handle as one number, for callers across an FFI boundary.
    pub fn to_raw(self) -> u64 {
        (self.generation as u64) << 32 | self.index as u64
    }

    pub fn from_raw(raw: u64) -> Self {
        TaskHandle {
            index: raw as u32,
            generation: (raw >> 32) as u32,
        }
    }
}

/// One record for [`Scheduler::submit_batch`](crate::Scheduler::submit_batch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Submission {
    pub partition: u32,
    pub offset: i64,
    pub key: Option<u64>,
    pub slot: u32,
}

/// Room left after a successful submit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capacity {
    /// Another record may be submitted to this task now.
    Available,
    /// The task reached its cap: wait for completions.
    TaskFull,
    /// All tasks together reached the global cap.
    GlobalFull,
}

/// The scheduling state: slots, tasks with their lanes and ready lists, and the ring of tasks
/// with ready records.
pub(crate) struct State {
    pub(crate) slots: Vec<SlotEntry>,
    pub(crate) tasks: Vec<Option<Task>>,
    pub(crate) generations: Vec<u32>,
    free_tasks: Vec<u32>,
    ids: HashMap<TaskId, u32>,
    /// Round-robin ring of tasks whose ready list is (or recently was) non-empty.
    ring_head: u32,
    ring_tail: u32,
    /// Unfinished records over all tasks.
    pub(crate) unfinished: u32,
    /// Running records over all tasks (`unfinished - running` are queued).
    pub(crate) running: u32,
    pub(crate) shutdown: bool,
    sample_seq: u64,
    /// Records in backoff by due time (ns): exactly the slots in `SlotState::Backoff`, once each.
    timers: BinaryHeap<Reverse<(u64, u32)>>,
}

impl State {
    pub(crate) fn new(max_inflight: u32) -> Self {
        State {
            slots: vec![FREE_SLOT; max_inflight as usize],
            tasks: Vec::new(),
            generations: Vec::new(),
            free_tasks: Vec::new(),
            ids: HashMap::new(),
            ring_head: NIL,
            ring_tail: NIL,
            unfinished: 0,
            running: 0,
            shutdown: false,
            sample_seq: 0,
            timers: BinaryHeap::new(),
        }
    }

    /// The live task behind `h`.
    pub(crate) fn task(&mut self, h: TaskHandle) -> Result<&mut Task, Error> {
        let i = h.index as usize;
        if self.generations.get(i) != Some(&h.generation) {
            return Err(Error::UnknownTask);
        }
        self.tasks[i].as_mut().ok_or(Error::UnknownTask)
    }

    /// The live task behind `h`, if any (a stale handle is `None`).
    pub(crate) fn task_ref(&self, h: TaskHandle) -> Option<&Task> {
        let i = h.index as usize;
        match self.tasks.get(i) {
            Some(Some(t)) if self.generations[i] == h.generation => Some(t),
            _ => None,
        }
    }

    pub(crate) fn handle_of(&self, id: TaskId) -> Option<TaskHandle> {
        self.ids.get(&id).map(|&index| TaskHandle {
            index,
            generation: self.generations[index as usize],
        })
    }

    /// Whether some task has a ready record for a poller.
    pub(crate) fn has_ready(&self) -> bool {
        self.ring_head != NIL
    }

    /// When the first record in backoff is due (ns), if any is.
    #[inline]
    pub(crate) fn next_due(&self) -> Option<u64> {
        self.timers.peek().map(|Reverse((due, _))| *due)
    }

    // ------------------------------------------------------------------ the task table

    /// Adds a task with its cap (at least 1).
    pub(crate) fn register(
        &mut self,
        id: TaskId,
        null_keys: NullKeyOrdering,
        cap: u32,
        max_tasks: u32,
    ) -> Result<TaskHandle, Error> {
        if self.shutdown {
            return Err(Error::Shutdown);
        }
        if self.ids.contains_key(&id) {
            return Err(Error::TaskExists(id));
        }
        let index = match self.free_tasks.pop() {
            Some(i) => i,
            None if (self.tasks.len() as u32) < max_tasks => {
                self.tasks.push(None);
                self.generations.push(0);
                self.tasks.len() as u32 - 1
            }
            None => return Err(Error::TooManyTasks { max: max_tasks }),
        };
        debug_assert!(
            self.tasks[index as usize].is_none(),
            "task index {index} reused while live"
        );
        self.tasks[index as usize] = Some(Task::new(id, null_keys, cap));
        self.ids.insert(id, index);
        Ok(TaskHandle {
            index,
            generation: self.generations[index as usize],
        })
    }

    /// Removes a closed task with nothing unfinished; returns its index's new generation.
    pub(crate) fn remove(&mut self, h: TaskHandle) -> Result<u32, Error> {
        let t = self.task(h)?;
        if !t.closed || t.unfinished() > 0 {
            return Err(Error::TaskBusy {
                task: t.id,
                queued: t.queued,
                running: t.running,
            });
        }
        let id = t.id;
        if t.in_ring {
            self.ring_unlink(h.index);
        }
        self.tasks[h.index as usize] = None;
        self.ids.remove(&id);
        let g = &mut self.generations[h.index as usize];
        *g = g.wrapping_add(1);
        let generation = *g;
        self.free_tasks.push(h.index);
        Ok(generation)
    }

    // ------------------------------------------------------------------ the ring

    #[inline]
    fn ring_push(&mut self, ti: u32) {
        debug_assert!(
            self.tasks[ti as usize].as_ref().is_none_or(|t| !t.in_ring),
            "task {ti} pushed into the ring twice"
        );
        if let Some(t) = self.tasks[ti as usize].as_mut() {
            t.in_ring = true;
            t.ring_next = NIL;
        }
        if self.ring_tail == NIL {
            self.ring_head = ti;
        } else if let Some(t) = self.tasks[self.ring_tail as usize].as_mut() {
            t.ring_next = ti;
        }
        self.ring_tail = ti;
    }

    #[inline]
    fn ring_pop(&mut self) -> Option<u32> {
        let ti = self.ring_head;
        if ti == NIL {
            return None;
        }
        let t = self.tasks[ti as usize].as_mut();
        let next = t.as_ref().map_or(NIL, |t| t.ring_next);
        if let Some(t) = t {
            t.in_ring = false;
            t.ring_next = NIL;
        }
        self.ring_head = next;
        if next == NIL {
            self.ring_tail = NIL;
        }
        Some(ti)
    }

    /// Takes task `ti` out of the ring (rare: a removed task; walks the ring).
    fn ring_unlink(&mut self, ti: u32) {
        let next_of =
            |st: &State, i: u32| st.tasks[i as usize].as_ref().map_or(NIL, |t| t.ring_next);
        let mut prev = NIL;
        let mut cur = self.ring_head;
        while cur != NIL && cur != ti {
            prev = cur;
            cur = next_of(self, cur);
        }
        let next = next_of(self, ti);
        if prev == NIL {
            self.ring_head = next;
        } else if let Some(p) = self.tasks[prev as usize].as_mut() {
            p.ring_next = next;
        }
        if self.ring_tail == ti {
            self.ring_tail = prev;
        }
        if let Some(t) = self.tasks[ti as usize].as_mut() {
            t.in_ring = false;
            t.ring_next = NIL;
        }
    }

    // ------------------------------------------------------------------ transitions

    /// Accepts a record: refusals first (nothing changes then), then its slot, its partition's
    /// sequence, its lane. `timing_every` is `2^timing_sample_shift`; `now` is read only for a
    /// record whose times are sampled.
    #[inline]
    pub(crate) fn submit(
        &mut self,
        h: TaskHandle,
        s: Submission,
        limits: Limits,
        now: impl FnOnce() -> u64,
    ) -> Result<Submitted, Error> {
        if self.shutdown {
            return Err(Error::Shutdown);
        }
        let unfinished_total = self.unfinished;
        let t = self.task(h)?;
        if t.closed {
            return Err(Error::TaskClosed(t.id));
        }
        if let Some(f) = &t.failure {
            return Err(Error::TaskFailed(f.clone()));
        }
        if t.unfinished() >= t.cap {
            return Err(Error::TaskAtCapacity {
                task: t.id,
                cap: t.cap,
            });
        }
        if unfinished_total >= limits.max_inflight {
            return Err(Error::GlobalAtCapacity {
                cap: limits.max_inflight,
            });
        }
        let (partition, slot) = (s.partition, s.slot);
        if partition >= limits.max_partitions {
            return Err(Error::PartitionOutOfRange {
                partition,
                max: limits.max_partitions,
            });
        }
        match self.slots.get(slot as usize) {
            None => {
                return Err(Error::SlotOutOfRange {
                    slot,
                    slots: limits.max_inflight,
                })
            }
            Some(e) if e.state != SlotState::Free => return Err(Error::SlotInUse(slot)),
            Some(_) => {}
        }
        let Some(t) = self.tasks[h.index as usize].as_mut() else {
            return Err(Error::UnknownTask);
        };
        if t.partitions.len() <= partition as usize {
            // Grows once per partition number; never on the steady-state path.
            t.partitions
                .resize_with(partition as usize + 1, PartitionTracker::default);
        }
        let tracker = &mut t.partitions[partition as usize];
        if let Some(last) = tracker.last_submitted() {
            if s.offset <= last {
                return Err(Error::OffsetNotIncreasing {
                    task: t.id,
                    partition,
                    last,
                    offset: s.offset,
                });
            }
        }
        let seq = tracker.submit(s.offset);
        let timed = self.sample_seq & (limits.timing_every - 1) == 0;
        self.sample_seq = self.sample_seq.wrapping_add(1);
        self.slots[slot as usize] = SlotEntry {
            state: SlotState::Waiting,
            timed,
            null_key: s.key.is_none(),
            task: h.index,
            partition,
            next: NIL,
            key: s.key.unwrap_or(0),
            seq,
            offset: s.offset,
            submitted_ns: if timed { now() } else { 0 },
            dispatched_ns: 0,
        };
        t.queued += 1;
        t.submitted += 1;
        self.unfinished += 1;

        let lane = match s.key {
            None if t.null_keys == NullKeyOrdering::Unordered => None,
            None => Some(&mut t.null_lane),
            Some(k) => Some(t.lanes.entry(k).or_insert(IDLE_LANE)),
        };
        let (ready, depth) = match lane {
            None => (true, None),
            Some(l) => {
                let from = l.depth;
                let ready = l.push(&mut self.slots, slot);
                t.max_key_depth = t.max_key_depth.max(l.depth);
                (ready, Some(DepthMove { from, to: l.depth }))
            }
        };
        let capacity = if t.unfinished() >= t.cap {
            Capacity::TaskFull
        } else if self.unfinished >= limits.max_inflight {
            Capacity::GlobalFull
        } else {
            Capacity::Available
        };
        let readied = ready.then(|| self.make_ready(h.index, slot));
        Ok(Submitted {
            capacity,
            depth,
            readied,
        })
    }

    /// Puts `slot` at the end of its task's ready list and the task into the ring.
    #[inline]
    fn make_ready(&mut self, ti: u32, slot: u32) -> Readied {
        debug_assert!(
            matches!(
                self.slots[slot as usize].state,
                SlotState::Waiting | SlotState::Backoff
            ) && self.slots[slot as usize].task == ti,
            "slot {slot} made ready from {:?} of task {}, not waiting or in backoff in task {ti}",
            self.slots[slot as usize].state,
            self.slots[slot as usize].task
        );
        let Some(t) = self.tasks[ti as usize].as_mut() else {
            return Readied::Held;
        };
        self.slots[slot as usize].state = SlotState::Ready;
        t.ready.push_back(&mut self.slots, slot);
        if t.failure.is_some() {
            Readied::Held
        } else if t.in_ring {
            Readied::AlreadyInRing
        } else {
            self.ring_push(ti);
            Readied::EnteredRing
        }
    }

    /// Moves the next ready record to running: tasks take turns, one record each (a task with
    /// more ready records goes to the back of the ring). `None` when nothing is ready.
    #[inline]
    pub(crate) fn dispatch(&mut self) -> Option<Dispatched> {
        loop {
            let ti = self.ring_pop()?;
            let Some(t) = self.tasks[ti as usize].as_mut() else {
                continue;
            };
            // A failed task stops dispatching; it leaves the ring here.
            if t.failure.is_some() {
                continue;
            }
            let Some(slot) = t.ready.pop_front(&mut self.slots) else {
                continue;
            };
            let e = &mut self.slots[slot as usize];
            debug_assert!(
                e.state == SlotState::Ready && e.task == ti && t.queued > 0,
                "slot {slot} dispatched from {:?} (task {}, {} queued)",
                e.state,
                e.task,
                t.queued
            );
            e.state = SlotState::Running;
            t.queued -= 1;
            t.running += 1;
            t.partitions[e.partition as usize].dispatched();
            self.running += 1;
            if !t.ready.is_empty() {
                self.ring_push(ti);
            }
            return Some(Dispatched { task: ti, slot });
        }
    }

    /// The running record in `slot` (a copy).
    #[inline]
    fn running_entry(&self, slot: u32, max_inflight: u32) -> Result<SlotEntry, Error> {
        match self.slots.get(slot as usize) {
            None => Err(Error::SlotOutOfRange {
                slot,
                slots: max_inflight,
            }),
            Some(e) if e.state != SlotState::Running => Err(Error::SlotNotRunning(slot)),
            Some(e) => Ok(*e),
        }
    }

    /// Ends a running record, successfully or not: where a task first failed stays with it. The
    /// next record of its key becomes ready.
    #[inline]
    pub(crate) fn finish(
        &mut self,
        slot: u32,
        outcome: Outcome,
        max_inflight: u32,
    ) -> Result<Finished, Error> {
        let e = self.running_entry(slot, max_inflight)?;
        let ti = e.task;
        let t = self.tasks[ti as usize].as_mut().ok_or(Error::UnknownTask)?;
        debug_assert!(
            t.running > 0 && self.running > 0 && self.unfinished > 0,
            "slot {slot} finished with nothing counted running"
        );
        t.partitions[e.partition as usize].finish(e.seq, outcome == Outcome::Completed);
        t.running -= 1;
        self.unfinished -= 1;
        self.running -= 1;
        match outcome {
            Outcome::Completed => t.finished += 1,
            Outcome::Failed => {
                t.failures += 1;
                if t.failure.is_none() {
                    t.failure = Some(Box::new(TaskFailure {
                        task: t.id,
                        partition: e.partition,
                        offset: e.offset,
                        slot,
                    }));
                }
            }
        }
        self.slots[slot as usize] = FREE_SLOT;

        // Advance the key's lane: the next waiting record becomes active, or the lane goes.
        let mut next = None;
        let mut depth = None;
        let mut advance = |l: &mut Lane, slots: &mut [SlotEntry]| {
            let from = l.depth;
            next = l.advance(slots);
            depth = Some(DepthMove { from, to: from - 1 });
            next.is_none()
        };
        if !e.null_key {
            // One hash lookup: the occupied entry is updated or removed in place.
            match t.lanes.entry(e.key) {
                Entry::Occupied(mut o) => {
                    debug_assert_eq!(
                        o.get().active,
                        slot,
                        "finished slot is not its lane's active record"
                    );
                    if advance(o.get_mut(), &mut self.slots) {
                        o.remove();
                    }
                }
                Entry::Vacant(_) => debug_assert!(false, "finished slot {slot} has no lane"),
            }
        } else if t.null_keys == NullKeyOrdering::Serial {
            advance(&mut t.null_lane, &mut self.slots);
        }
        let task_idle = t.running == 0;
        let readied = next.map(|s| self.make_ready(ti, s));
        Ok(Finished {
            task: ti,
            dispatched_ns: e.timed.then_some(e.dispatched_ns),
            depth,
            readied,
            task_idle,
        })
    }

    /// Sends a running record back to wait until `due_ns`: it stays its key's active record
    /// (the key's later records keep waiting behind it, so per-key order holds) and unfinished
    /// (its offset holds the partition's watermark); the worker that ran it is free. It is
    /// ready again once [`release_due`](Self::release_due) passes its due time.
    pub(crate) fn retry(
        &mut self,
        slot: u32,
        due_ns: u64,
        max_inflight: u32,
    ) -> Result<Retried, Error> {
        let e = self.running_entry(slot, max_inflight)?;
        let ti = e.task;
        let t = self.tasks[ti as usize].as_mut().ok_or(Error::UnknownTask)?;
        debug_assert!(
            t.running > 0 && self.running > 0,
            "slot {slot} retried with nothing counted running"
        );
        debug_assert!(
            e.null_key || t.lanes.get(&e.key).is_some_and(|l| l.active == slot),
            "retried slot {slot} is not its lane's active record"
        );
        t.partitions[e.partition as usize].requeued();
        t.running -= 1;
        t.queued += 1;
        t.backoff += 1;
        t.retries += 1;
        self.running -= 1;
        let task_idle = t.running == 0;
        let s = &mut self.slots[slot as usize];
        s.state = SlotState::Backoff;
        s.dispatched_ns = due_ns;
        let earliest = self.next_due().is_none_or(|d| due_ns < d);
        self.timers.push(Reverse((due_ns, slot)));
        Ok(Retried {
            task: ti,
            dispatched_ns: e.timed.then_some(e.dispatched_ns),
            task_idle,
            earliest,
        })
    }

    /// Makes every record in backoff that is due at `now_ns` ready again, in due order; returns
    /// how many, and whether one of their tasks entered the ring (a poller is to take it).
    /// `released(task, backoff)` is told each record's task and the records it has in backoff now.
    pub(crate) fn release_due(
        &mut self,
        now_ns: u64,
        mut released: impl FnMut(u32, u32),
    ) -> (u32, bool) {
        let (mut n, mut entered) = (0, false);
        while let Some(&Reverse((due, slot))) = self.timers.peek() {
            if due > now_ns {
                break;
            }
            self.timers.pop();
            debug_assert_eq!(
                self.slots[slot as usize].state,
                SlotState::Backoff,
                "a timer of slot {slot} outlived its backoff"
            );
            let ti = self.slots[slot as usize].task;
            if let Some(t) = self.tasks[ti as usize].as_mut() {
                debug_assert!(
                    t.backoff > 0,
                    "task {} released more than it had in backoff",
                    t.id
                );
                t.backoff -= 1;
                released(ti, t.backoff);
            }
            entered |= self.make_ready(ti, slot) == Readied::EnteredRing;
            n += 1;
        }
        (n, entered)
    }

    /// Discards the queued records of task `ti` (ready ones, those in backoff, and those
    /// waiting behind their key), appends their slots to `dropped` and returns how each key's
    /// depth moved. Running records stay; a lane survives only while its active record runs.
    #[must_use]
    pub(crate) fn drop_queued(&mut self, ti: u32, dropped: &mut Vec<u32>) -> Vec<DepthMove> {
        let State {
            slots,
            tasks,
            unfinished,
            timers,
            ..
        } = self;
        let Some(t) = tasks[ti as usize].as_mut() else {
            return Vec::new();
        };
        let before = dropped.len();
        let mut release = |slots: &mut [SlotEntry], t: &mut Task, slot: u32| {
            let e = &mut slots[slot as usize];
            t.partitions[e.partition as usize].dropped();
            *e = FREE_SLOT;
            t.queued -= 1;
            t.dropped += 1;
            dropped.push(slot);
        };
        // Ready records: active heads of their lanes, or unordered null-key records.
        let mut ready = std::mem::replace(&mut t.ready, SlotList::EMPTY);
        ready.drain(slots, |slots, s| release(slots, t, s));
        let mut moves = Vec::new();
        let mut prune = |slots: &mut [SlotEntry], t: &mut Task, l: &mut Lane| {
            let mut waiting = std::mem::replace(&mut l.waiting, SlotList::EMPTY);
            waiting.drain(slots, |slots, s| release(slots, t, s));
            let running = l.active != NIL && slots[l.active as usize].state == SlotState::Running;
            moves.push(DepthMove {
                from: l.depth,
                to: running as u32,
            });
            *l = Lane {
                active: if running { l.active } else { NIL },
                waiting: SlotList::EMPTY,
                depth: running as u32,
            };
            running
        };
        let mut lanes = std::mem::take(&mut t.lanes);
        lanes.retain(|_, l| prune(slots, t, l));
        t.lanes = lanes;
        let mut null_lane = std::mem::replace(&mut t.null_lane, IDLE_LANE);
        if null_lane.depth > 0 && prune(slots, t, &mut null_lane) {
            t.null_lane = null_lane;
        }
        // Records in backoff (their lanes, if they had one, are gone above: none was running):
        // dropped, and out of the timers.
        let mut backoff = Vec::new();
        timers.retain(|&Reverse((_, s))| {
            let mine = slots[s as usize].task == ti;
            if mine {
                backoff.push(s);
            }
            !mine
        });
        for s in backoff {
            t.backoff -= 1;
            release(slots, t, s);
        }
        debug_assert!(
            t.queued == 0 && t.backoff == 0,
            "task {} kept {} queued ({} in backoff) after dropping its queued records",
            t.id,
            t.queued,
            t.backoff
        );
        *unfinished -= (dropped.len() - before) as u32;
        moves
    }
}

/// The configuration a submit checks against.
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_inflight: u32,
    pub(crate) max_partitions: u32,
    /// `2^timing_sample_shift`: every such record's times are sampled.
    pub(crate) timing_every: u64,
}
