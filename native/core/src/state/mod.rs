//! The scheduling state and its transitions, apart from locking, wake-ups and metrics.
//!
//! Everything here runs under the scheduler's lock and nothing here knows of it: no condition
//! variable, no atomic, no clock (the shell passes the time in). Each transition returns what
//! happened as a `#[must_use]` value — which record became ready, whether its task entered the
//! ring, how a key's depth moved, whether a task went idle — and the shell (`scheduler.rs`)
//! decides whom to wake and what to publish from it. [`State::check_invariants`] states the
//! crate's invariants as code; the model and stress tests run it after every step.

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasher, Hasher};

use crate::config::NullKeyOrdering;
use crate::error::{Error, Remaining, TaskFailure, TaskId};
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

/// How a running record ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Completed,
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotState {
    Free,
    /// Queued behind an unfinished record of the same key.
    Waiting,
    /// In its task's ready list.
    Ready,
    Running,
    /// Ran, and waits to run again (a retry): still its key's active record, so the key's later
    /// records wait behind it; in `State::timers` until due, then ready again.
    Backoff,
}

#[derive(Clone, Copy)]
pub(crate) struct SlotEntry {
    pub(crate) state: SlotState,
    /// Whether wait and run times of this record are recorded.
    pub(crate) timed: bool,
    /// Key-less record (`key` is then unused).
    null_key: bool,
    pub(crate) task: u32,
    pub(crate) partition: u32,
    /// Next slot in the key's waiting list or in the task's ready list.
    next: u32,
    key: u64,
    seq: u64,
    offset: i64,
    pub(crate) submitted_ns: u64,
    /// When it was dispatched (timed records); in `Backoff`, when it is due (every record).
    pub(crate) dispatched_ns: u64,
}

const FREE_SLOT: SlotEntry = SlotEntry {
    state: SlotState::Free,
    timed: false,
    null_key: false,
    task: NIL,
    partition: 0,
    next: NIL,
    key: 0,
    seq: 0,
    offset: 0,
    submitted_ns: 0,
    dispatched_ns: 0,
};

/// A FIFO list of slots linked through their `next` field (a slot is in at most one at a time:
/// a lane's wait list or a task's ready list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlotList {
    head: u32,
    tail: u32,
}

impl SlotList {
    const EMPTY: SlotList = SlotList {
        head: NIL,
        tail: NIL,
    };

    fn is_empty(&self) -> bool {
        self.head == NIL
    }

    #[inline]
    fn push_back(&mut self, slots: &mut [SlotEntry], slot: u32) {
        slots[slot as usize].next = NIL;
        if self.tail == NIL {
            self.head = slot;
        } else {
            slots[self.tail as usize].next = slot;
        }
        self.tail = slot;
    }

    #[inline]
    fn pop_front(&mut self, slots: &mut [SlotEntry]) -> Option<u32> {
        let slot = self.head;
        if slot == NIL {
            return None;
        }
        self.head = slots[slot as usize].next;
        if self.head == NIL {
            self.tail = NIL;
        }
        slots[slot as usize].next = NIL;
        Some(slot)
    }

    /// Empties the list, calling `f` on each slot in order (`f` may reuse the slot's link).
    fn drain(&mut self, slots: &mut [SlotEntry], mut f: impl FnMut(&mut [SlotEntry], u32)) {
        let mut s = std::mem::replace(self, SlotList::EMPTY).head;
        while s != NIL {
            let next = slots[s as usize].next;
            f(slots, s);
            s = next;
        }
    }

    /// The slots in order (for checks).
    #[cfg(any(test, debug_assertions))]
    fn walk<'a>(&self, slots: &'a [SlotEntry]) -> impl Iterator<Item = u32> + 'a {
        let mut s = self.head;
        std::iter::from_fn(move || {
            (s != NIL).then(|| {
                let cur = s;
                s = slots[cur as usize].next;
                cur
            })
        })
    }
}

/// A key with unfinished records: `active` is ready or running, the rest wait behind it.
#[derive(Clone, Copy)]
struct Lane {
    active: u32,
    waiting: SlotList,
    /// Unfinished records of the key, the active one included.
    depth: u32,
}

const IDLE_LANE: Lane = Lane {
    active: NIL,
    waiting: SlotList::EMPTY,
    depth: 0,
};

impl Lane {
    /// Adds a record: active if the lane was idle (returns true: it is ready), else waiting.
    #[inline]
    fn push(&mut self, slots: &mut [SlotEntry], slot: u32) -> bool {
        self.depth += 1;
        if self.active == NIL {
            self.active = slot;
            true
        } else {
            self.waiting.push_back(slots, slot);
            false
        }
    }

    /// Ends the active record: returns the next waiting one (now active), or `None` with the
    /// lane idle.
    #[inline]
    fn advance(&mut self, slots: &mut [SlotEntry]) -> Option<u32> {
        self.depth -= 1;
        let next = self.waiting.pop_front(slots);
        match next {
            Some(s) => self.active = s,
            None => *self = IDLE_LANE,
        }
        next
    }
}

/// Mixes the 64-bit key hash once more so that a weak hash from the caller still spreads over
/// the table (the map keys are already hashes; SipHash would only cost time).
#[derive(Clone, Copy, Default)]
struct KeyHashBuilder;

#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        z ^ (z >> 33)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8)) ^ b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

impl BuildHasher for KeyHashBuilder {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(0)
    }
}

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
    null_keys: NullKeyOrdering,
    pub(crate) cap: u32,
    lanes: HashMap<u64, Lane, KeyHashBuilder>,
    /// The serial lane of null keys; idle while `depth == 0`.
    null_lane: Lane,
    ready: SlotList,
    in_ring: bool,
    ring_next: u32,
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
    fn new(id: TaskId, null_keys: NullKeyOrdering, cap: u32) -> Self {
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

/// How a key's depth (its unfinished records) moved: for the key-depth distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DepthMove {
    pub(crate) from: u32,
    pub(crate) to: u32,
}

/// A record became ready in its task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Readied {
    /// The task had failed: it stays out of the ring, nobody is to take the record.
    Held,
    /// The task was in the ring already: whoever put it there woke a poller for it.
    AlreadyInRing,
    /// The task entered the ring: a poller is to take it.
    EnteredRing,
}

/// What a submit did.
#[must_use]
pub(crate) struct Submitted {
    pub(crate) capacity: Capacity,
    /// `None` for an unordered null-key record (it has no lane).
    pub(crate) depth: Option<DepthMove>,
    /// `None` if the record waits behind its key.
    pub(crate) readied: Option<Readied>,
}

/// What ending a running record did.
#[must_use]
pub(crate) struct Finished {
    /// The task's index.
    pub(crate) task: u32,
    /// When the record was dispatched, if it was timed.
    pub(crate) dispatched_ns: Option<u64>,
    pub(crate) depth: Option<DepthMove>,
    /// The next record of its key became ready.
    pub(crate) readied: Option<Readied>,
    /// The task has no record running any more.
    pub(crate) task_idle: bool,
}

/// What a dispatch did: the record in `slot` of task `task` now runs.
#[must_use]
pub(crate) struct Dispatched {
    pub(crate) task: u32,
    pub(crate) slot: u32,
}

/// What a retry did: the record in `slot` of task `task` waits until its due time.
#[must_use]
pub(crate) struct Retried {
    pub(crate) task: u32,
    /// When the attempt was dispatched, if it was timed.
    pub(crate) dispatched_ns: Option<u64>,
    /// The task has no record running any more.
    pub(crate) task_idle: bool,
    /// Its due time is now the earliest: a sleeping poller is to wait less.
    pub(crate) earliest: bool,
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
            if let Entry::Occupied(mut o) = t.lanes.entry(e.key) {
                if advance(o.get_mut(), &mut self.slots) {
                    o.remove();
                }
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
            let ti = self.slots[slot as usize].task;
            if let Some(t) = self.tasks[ti as usize].as_mut() {
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
        *unfinished -= (dropped.len() - before) as u32;
        moves
    }

    // ------------------------------------------------------------------ the invariants

    /// Checks the crate's invariants (lib.rs, "Invariants") over the whole state: O(slots +
    /// keys), for tests. Returns the first one broken.
    #[cfg(any(test, debug_assertions))]
    pub(crate) fn check_invariants(&self, max_inflight: u32) -> Result<(), String> {
        use std::collections::HashSet;
        let mut seen = HashSet::new(); // slots met in some list or as a lane's active record
        let (mut unfinished, mut running) = (0u32, 0u32);
        for (ti, t) in self.tasks.iter().enumerate() {
            let Some(t) = t else { continue };
            let ti = ti as u32;
            let id = t.id;
            // 1, 2: ready list, lanes (active ready or running, the rest waiting in order).
            let mut ready_count = 0;
            for s in t.ready.walk(&self.slots) {
                let e = &self.slots[s as usize];
                if e.state != SlotState::Ready || e.task != ti || !seen.insert(s) {
                    return Err(format!("task {id}: slot {s} in the ready list is {:?} of task {} (or listed twice)", e.state, e.task));
                }
                ready_count += 1;
            }
            let lanes = t.lanes.iter().map(|(k, l)| (Some(*k), l));
            let null = (t.null_lane.depth > 0).then_some((None, &t.null_lane));
            for (key, l) in lanes.chain(null) {
                if l.depth == 0 || l.active == NIL {
                    return Err(format!("task {id}: an idle lane is kept (key {key:?})"));
                }
                let a = &self.slots[l.active as usize];
                let keyed = |e: &SlotEntry| {
                    e.task == ti && e.null_key == key.is_none() && key.is_none_or(|k| e.key == k)
                };
                if !matches!(
                    a.state,
                    SlotState::Ready | SlotState::Running | SlotState::Backoff
                ) || !keyed(a)
                {
                    return Err(format!(
                        "task {id}: the active record of key {key:?} is {:?} or not the key's",
                        a.state
                    ));
                }
                if matches!(a.state, SlotState::Running | SlotState::Backoff)
                    && !seen.insert(l.active)
                {
                    return Err(format!("task {id}: slot {} active in two lanes", l.active));
                }
                let mut depth = 1;
                let mut prev = *a;
                for s in l.waiting.walk(&self.slots) {
                    let e = &self.slots[s as usize];
                    if e.state != SlotState::Waiting || !keyed(e) || !seen.insert(s) {
                        return Err(format!("task {id}: slot {s} waiting for key {key:?} is {:?}, another key's, or listed twice", e.state));
                    }
                    if e.partition == prev.partition && e.seq <= prev.seq {
                        return Err(format!(
                            "task {id}: key {key:?} out of order: seq {} behind {}",
                            e.seq, prev.seq
                        ));
                    }
                    prev = *e;
                    depth += 1;
                }
                if depth != l.depth {
                    return Err(format!(
                        "task {id}: key {key:?} has depth {} but {depth} records",
                        l.depth
                    ));
                }
                if a.state == SlotState::Ready && !seen.contains(&l.active) {
                    return Err(format!(
                        "task {id}: the ready record of key {key:?} is not in the ready list"
                    ));
                }
            }
            // 2: at most one record per key ready or running: each is its lane's active one.
            for (s, e) in self.slots.iter().enumerate() {
                if e.task != ti
                    || !matches!(
                        e.state,
                        SlotState::Ready | SlotState::Running | SlotState::Backoff
                    )
                {
                    continue;
                }
                let lane = if !e.null_key {
                    t.lanes.get(&e.key)
                } else {
                    (t.null_keys == NullKeyOrdering::Serial).then_some(&t.null_lane)
                };
                if lane.is_some_and(|l| l.active != s as u32) {
                    return Err(format!("task {id}: slot {s} is {:?} but not its key's active record (two of one key at once)", e.state));
                }
                if !e.null_key && lane.is_none() {
                    return Err(format!(
                        "task {id}: slot {s} is {:?} with no lane for its key",
                        e.state
                    ));
                }
            }
            // 3: the ring.
            if !t.ready.is_empty() && t.failure.is_none() && !t.in_ring {
                return Err(format!("task {id}: ready records but not in the ring"));
            }
            // 4: counts and caps.
            let mine = |st: SlotState| {
                self.slots
                    .iter()
                    .filter(|e| e.task == ti && e.state == st)
                    .count() as u32
            };
            let (waiting, ready, run, backoff) = (
                mine(SlotState::Waiting),
                mine(SlotState::Ready),
                mine(SlotState::Running),
                mine(SlotState::Backoff),
            );
            if ready != ready_count
                || t.queued != waiting + ready + backoff
                || t.running != run
                || t.backoff != backoff
            {
                return Err(format!("task {id}: queued {} running {} backoff {} but slots say {waiting} waiting, {ready} ready ({ready_count} listed), {run} running, {backoff} in backoff", t.queued, t.running, t.backoff));
            }
            if t.unfinished() > t.cap {
                return Err(format!(
                    "task {id}: {} unfinished over its cap {}",
                    t.unfinished(),
                    t.cap
                ));
            }
            unfinished += t.unfinished();
            running += t.running;
            // 5: partitions: every live record pending in its tracker, counts agree.
            for (p, tracker) in t.partitions.iter().enumerate() {
                let live = self.slots.iter().filter(|e| {
                    e.task == ti && e.partition == p as u32 && e.state != SlotState::Free
                });
                let (mut q, mut r) = (0u64, 0u64);
                for e in live {
                    if !tracker.is_pending(e.seq, e.offset) {
                        return Err(format!(
                            "task {id} partition {p}: offset {} (seq {}) is live but not pending",
                            e.offset, e.seq
                        ));
                    }
                    if e.state == SlotState::Running {
                        r += 1
                    } else {
                        q += 1
                    }
                }
                let pr = &tracker.progress;
                if pr.queued != q
                    || pr.running != r
                    || pr.submitted < pr.queued + pr.running + pr.finished + pr.failed
                {
                    return Err(format!("task {id} partition {p}: progress {pr:?}, slots say {q} queued, {r} running"));
                }
                tracker
                    .check_watermark()
                    .map_err(|m| format!("task {id} partition {p}: {m}"))?;
            }
        }
        let free = self
            .slots
            .iter()
            .filter(|e| e.state == SlotState::Free)
            .count() as u32;
        if unfinished != self.unfinished
            || running != self.running
            || free + unfinished != self.slots.len() as u32
            || unfinished > max_inflight
        {
            return Err(format!("totals: unfinished {} running {} (tasks say {unfinished}, {running}; {free} slots free)", self.unfinished, self.running));
        }
        // 6: the timers hold exactly the records in backoff, once each, at their due times.
        let mut timed = HashSet::new();
        for &Reverse((due, s)) in self.timers.iter() {
            let e = &self.slots[s as usize];
            if e.state != SlotState::Backoff || e.dispatched_ns != due || !timed.insert(s) {
                return Err(format!(
                    "timers: slot {s} due {due} is {:?} due {} (or listed twice)",
                    e.state, e.dispatched_ns
                ));
            }
        }
        let in_backoff = self
            .slots
            .iter()
            .filter(|e| e.state == SlotState::Backoff)
            .count();
        if in_backoff != timed.len() {
            return Err(format!(
                "timers: {} records in backoff, {} timed",
                in_backoff,
                timed.len()
            ));
        }
        // 3: the ring holds each task once, exactly those marked in it.
        let mut in_ring = HashSet::new();
        let mut cur = self.ring_head;
        let mut last = NIL;
        while cur != NIL {
            match self.tasks.get(cur as usize).and_then(Option::as_ref) {
                Some(t) if t.in_ring && in_ring.insert(cur) => {
                    last = cur;
                    cur = t.ring_next;
                }
                _ => {
                    return Err(format!(
                        "ring: task index {cur} removed, not marked, or twice"
                    ))
                }
            }
        }
        let marked = self.tasks.iter().flatten().filter(|t| t.in_ring).count();
        if last != self.ring_tail || marked != in_ring.len() {
            return Err(format!(
                "ring: tail {} (walked to {last}), {marked} tasks marked, {} in it",
                self.ring_tail,
                in_ring.len()
            ));
        }
        Ok(())
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
