//! The scheduler: task table, per-key lanes, ready lists, the task ring and the wait paths.
//! See the crate documentation for the locking design and the invariants.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::TryLockError;
use std::time::{Duration, Instant};

use crate::config::{NullKeyOrdering, SchedulerConfig, TaskOptions};
use crate::error::{Error, Remaining, TaskFailure, TaskId};
use crate::histogram::{bucket_of, AtomicHistogram};
use crate::metrics::{pack_id, MetricsSnapshot, TaskCounters, TotalCounters};
use crate::partition::{PartitionProgress, PartitionTracker};
use crate::sync::{yield_now, AtomicBool, Condvar, Mutex, MutexGuard, LOCK_SPINS, SPIN_LOOKS};

/// How long an out-of-work poller spins before it sleeps.
const SPIN: Duration = Duration::from_micros(10);

/// End of an intrusive list.
const NIL: u32 = u32::MAX;

/// Names a registered task. Cheap to copy; stale handles (of removed tasks) are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskHandle {
    index: u32,
    generation: u32,
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

/// One record for [`Scheduler::submit_batch`].
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

/// How [`Scheduler::close`] treats records that have not started yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseMode {
    /// Run every submitted record to its end, then close.
    Drain,
    /// Discard queued records (their slots are returned); wait only for running ones.
    DropQueued,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    Free,
    /// Queued behind an unfinished record of the same key.
    Waiting,
    /// In its task's ready list.
    Ready,
    Running,
}

#[derive(Clone, Copy)]
struct SlotEntry {
    state: SlotState,
    /// Whether wait and run times of this record are recorded.
    timed: bool,
    /// Key-less record (`key` is then unused).
    null_key: bool,
    task: u32,
    partition: u32,
    /// Next slot in the key's waiting list or in the task's ready list.
    next: u32,
    key: u64,
    seq: u64,
    offset: i64,
    submitted_ns: u64,
    dispatched_ns: u64,
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

/// A key with unfinished records: `active` is ready or running, the rest wait behind it.
#[derive(Clone, Copy)]
struct Lane {
    active: u32,
    wait_head: u32,
    wait_tail: u32,
    /// Unfinished records of the key, the active one included.
    depth: u32,
}

const IDLE_LANE: Lane = Lane {
    active: NIL,
    wait_head: NIL,
    wait_tail: NIL,
    depth: 0,
};

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

struct Task {
    id: TaskId,
    null_keys: NullKeyOrdering,
    cap: u32,
    lanes: HashMap<u64, Lane, KeyHashBuilder>,
    /// The serial lane of null keys; idle while `depth == 0`.
    null_lane: Lane,
    ready_head: u32,
    ready_tail: u32,
    in_ring: bool,
    ring_next: u32,
    partitions: Vec<PartitionTracker>,
    closed: bool,
    failure: Option<Box<TaskFailure>>,
    queued: u32,
    running: u32,
    submitted: u64,
    finished: u64,
    failures: u64,
    dropped: u64,
    max_key_depth: u32,
    /// Sampled submit-to-dispatch times of this task's records, ns.
    wait: Sums,
    /// Sampled dispatch-to-complete times of this task's records, ns.
    run: Sums,
    /// Free places a room waiter needs in this task (0: nobody waits for it). See `wait_for_room`.
    room_want: u32,
}

/// Count, sum and largest of sampled durations (ns), kept under the lock.
#[derive(Clone, Copy, Default)]
struct Sums {
    count: u64,
    sum: u64,
    max: u64,
}

impl Sums {
    fn add(&mut self, v: u64) {
        self.count += 1;
        self.sum = self.sum.saturating_add(v);
        self.max = self.max.max(v);
    }
}

impl Task {
    fn unfinished(&self) -> u32 {
        self.queued + self.running
    }

    fn active_keys(&self) -> u32 {
        self.lanes.len() as u32 + (self.null_lane.depth > 0) as u32
    }

    fn remaining(&self) -> Remaining {
        Remaining {
            task: self.id,
            queued: self.queued,
            running: self.running,
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

struct State {
    slots: Vec<SlotEntry>,
    tasks: Vec<Option<Task>>,
    generations: Vec<u32>,
    free_tasks: Vec<u32>,
    ids: HashMap<TaskId, u32>,
    /// Round-robin ring of tasks whose ready list is (or recently was) non-empty.
    ring_head: u32,
    ring_tail: u32,
    unfinished: u32,
    /// Running records over all tasks (`unfinished - running` are queued).
    running: u32,
    idle_pollers: u32,
    /// A poller is spinning outside the lock, watching `ready_hint` (at most one at a time).
    spinning: bool,
    /// Ready work is in the ring that no sleeping poller was woken for, because running
    /// records' workers were to take it (`defer_wake`). While set, every record made ready
    /// checks again whether to wake one; cleared by a wake-up and when the ring empties.
    wake_deferred: bool,
    drain_waiters: u32,
    /// Submitters blocked in `wait_for_room`.
    room_waiters: u32,
    /// Free global places a room waiter needs (0: none waits for the global cap).
    room_global_want: u32,
    shutdown: bool,
    sample_seq: u64,
}

/// Per-key FIFO scheduler of records. See the crate documentation.
pub struct Scheduler {
    config: SchedulerConfig,
    state: Mutex<State>,
    /// Pollers wait here for ready work.
    work_cv: Condvar,
    /// Drains and closes wait here for running records to end.
    drain_cv: Condvar,
    /// Submitters wait here for room below a cap (`wait_for_room`).
    room_cv: Condvar,
    counters: Box<[TaskCounters]>,
    /// Whether the ring is non-empty, for the spinning poller (a hint: it re-checks under the
    /// lock before taking anything or going to sleep).
    ready_hint: AtomicBool,
    totals: TotalCounters,
    wait_ns: AtomicHistogram,
    run_ns: AtomicHistogram,
    key_depths: AtomicHistogram,
    epoch: Instant,
}

/// Condition variables to signal once the lock is released.
#[derive(Clone, Copy, Default)]
struct Wake {
    work: bool,
    drains: bool,
    room: bool,
}

impl Wake {
    fn add(&mut self, other: Wake) {
        self.work |= other.work;
        self.drains |= other.drains;
        self.room |= other.room;
    }
}

/// Wait condition of a drain or close.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Until {
    /// Nothing queued or running (a failed task: nothing running; it then reports its failure).
    Empty,
    /// Nothing running.
    Idle,
}

fn ring_push(head: &mut u32, tail: &mut u32, tasks: &mut [Option<Task>], ti: u32) {
    if let Some(t) = tasks[ti as usize].as_mut() {
        t.in_ring = true;
        t.ring_next = NIL;
    }
    if *tail == NIL {
        *head = ti;
    } else if let Some(t) = tasks[*tail as usize].as_mut() {
        t.ring_next = ti;
    }
    *tail = ti;
}

fn ring_pop(head: &mut u32, tail: &mut u32, tasks: &mut [Option<Task>]) -> u32 {
    let ti = *head;
    if ti == NIL {
        return NIL;
    }
    let next = tasks[ti as usize].as_ref().map_or(NIL, |t| t.ring_next);
    *head = next;
    if next == NIL {
        *tail = NIL;
    }
    if let Some(t) = tasks[ti as usize].as_mut() {
        t.in_ring = false;
        t.ring_next = NIL;
    }
    ti
}

impl Scheduler {
    pub fn new(config: SchedulerConfig) -> Result<Self, Error> {
        config.validate()?;
        let state = State {
            slots: vec![FREE_SLOT; config.max_inflight as usize],
            tasks: Vec::new(),
            generations: Vec::new(),
            free_tasks: Vec::new(),
            ids: HashMap::new(),
            ring_head: NIL,
            ring_tail: NIL,
            unfinished: 0,
            running: 0,
            idle_pollers: 0,
            spinning: false,
            wake_deferred: false,
            drain_waiters: 0,
            room_waiters: 0,
            room_global_want: 0,
            shutdown: false,
            sample_seq: 0,
        };
        Ok(Scheduler {
            counters: (0..config.max_tasks)
                .map(|_| TaskCounters::default())
                .collect(),
            config,
            state: Mutex::new(state),
            work_cv: Condvar::new(),
            drain_cv: Condvar::new(),
            room_cv: Condvar::new(),
            ready_hint: AtomicBool::new(false),
            totals: TotalCounters::default(),
            wait_ns: AtomicHistogram::new(),
            run_ns: AtomicHistogram::new(),
            key_depths: AtomicHistogram::new(),
            epoch: Instant::now(),
        })
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    /// No code under the lock calls out or panics on caller input, so a poisoned lock can only
    /// follow a bug inside this crate; the state is still the last consistent one written.
    fn lock(&self) -> MutexGuard<'_, State> {
        // Critical sections are short (a poller's batch is a few microseconds): spinning for
        // about that long is far cheaper than sleeping in the kernel and being woken.
        for i in 0..LOCK_SPINS {
            match self.state.try_lock() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    for _ in 0..(1 << i.min(6)) {
                        std::hint::spin_loop();
                    }
                }
            }
        }
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn task(st: &mut State, h: TaskHandle) -> Result<&mut Task, Error> {
        let i = h.index as usize;
        if st.generations.get(i) != Some(&h.generation) {
            return Err(Error::UnknownTask);
        }
        st.tasks[i].as_mut().ok_or(Error::UnknownTask)
    }

    /// Publishes a task's counters (called under the lock after every change).
    fn publish(&self, ti: u32, t: &Task) {
        let c = &self.counters[ti as usize];
        c.queued.store(t.queued, Relaxed);
        c.running.store(t.running, Relaxed);
        c.submitted.store(t.submitted, Relaxed);
        c.finished.store(t.finished, Relaxed);
        c.failures.store(t.failures, Relaxed);
        c.dropped.store(t.dropped, Relaxed);
        c.active_keys.store(t.active_keys(), Relaxed);
        c.max_key_depth.store(t.max_key_depth, Relaxed);
        c.closed.store(t.closed, Relaxed);
        c.failed.store(t.failure.is_some(), Relaxed);
    }

    /// Publishes a task's sampled wait times: after a timed dispatch (only those change them) and
    /// at registration (a reused counter slot starts from zero).
    fn publish_wait(c: &TaskCounters, t: &Task) {
        c.wait_count.store(t.wait.count, Relaxed);
        c.wait_sum_ns.store(t.wait.sum, Relaxed);
        c.wait_max_ns.store(t.wait.max, Relaxed);
    }

    /// Publishes a task's sampled run times: after a timed completion, and at registration.
    fn publish_run(c: &TaskCounters, t: &Task) {
        c.run_count.store(t.run.count, Relaxed);
        c.run_sum_ns.store(t.run.sum, Relaxed);
        c.run_max_ns.store(t.run.max, Relaxed);
    }

    /// Moves one key from depth bucket `from` to depth bucket `to` (0 = no bucket).
    fn move_depth(&self, from: u32, to: u32) {
        let (a, b) = (bucket_of(from as u64), bucket_of(to as u64));
        if a != b {
            if from > 0 {
                self.key_depths.adjust_exclusive(a, -1);
            }
            if to > 0 {
                self.key_depths.adjust_exclusive(b, 1);
            }
        }
    }

    /// Registers a task. Its id must not be registered already.
    pub fn register_task(&self, id: TaskId, options: TaskOptions) -> Result<TaskHandle, Error> {
        let cap = options
            .max_inflight
            .unwrap_or(self.config.max_inflight_per_task);
        if cap == 0 {
            return Err(Error::InvalidConfig {
                name: "max_inflight",
                reason: format!("task {id}: must be at least 1, got 0"),
            });
        }
        let mut st = self.lock();
        if st.shutdown {
            return Err(Error::Shutdown);
        }
        if st.ids.contains_key(&id) {
            return Err(Error::TaskExists(id));
        }
        let index = match st.free_tasks.pop() {
            Some(i) => i,
            None if (st.tasks.len() as u32) < self.config.max_tasks => {
                st.tasks.push(None);
                st.generations.push(0);
                st.tasks.len() as u32 - 1
            }
            None => {
                return Err(Error::TooManyTasks {
                    max: self.config.max_tasks,
                })
            }
        };
        let task = Task {
            id,
            null_keys: options.null_keys,
            cap,
            lanes: HashMap::with_hasher(KeyHashBuilder),
            null_lane: IDLE_LANE,
            ready_head: NIL,
            ready_tail: NIL,
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
            max_key_depth: 0,
            wait: Sums::default(),
            run: Sums::default(),
            room_want: 0,
        };
        let generation = st.generations[index as usize];
        let c = &self.counters[index as usize];
        c.id.store(pack_id(id), Relaxed);
        c.cap.store(cap, Relaxed);
        c.generation.store(generation, Relaxed);
        self.publish(index, &task);
        Self::publish_wait(c, &task);
        Self::publish_run(c, &task);
        c.live.store(true, Relaxed);
        st.tasks[index as usize] = Some(task);
        st.ids.insert(id, index);
        Ok(TaskHandle { index, generation })
    }

    pub fn find_task(&self, id: TaskId) -> Option<TaskHandle> {
        let st = self.lock();
        st.ids.get(&id).map(|&index| TaskHandle {
            index,
            generation: st.generations[index as usize],
        })
    }

    /// Removes a closed task that has nothing queued or running. Its handle becomes invalid.
    pub fn remove_task(&self, h: TaskHandle) -> Result<(), Error> {
        let mut st = self.lock();
        let t = Self::task(&mut st, h)?;
        if !t.closed || t.unfinished() > 0 {
            return Err(Error::TaskBusy {
                task: t.id,
                queued: t.queued,
                running: t.running,
            });
        }
        let (id, in_ring) = (t.id, t.in_ring);
        let st = &mut *st;
        if in_ring {
            // Rare: unlink from the ring by walking it.
            let mut prev = NIL;
            let mut cur = st.ring_head;
            while cur != NIL && cur != h.index {
                prev = cur;
                cur = st.tasks[cur as usize].as_ref().map_or(NIL, |t| t.ring_next);
            }
            let next = st.tasks[h.index as usize]
                .as_ref()
                .map_or(NIL, |t| t.ring_next);
            if prev == NIL {
                st.ring_head = next;
            } else if let Some(p) = st.tasks[prev as usize].as_mut() {
                p.ring_next = next;
            }
            if st.ring_tail == h.index {
                st.ring_tail = prev;
            }
        }
        st.tasks[h.index as usize] = None;
        st.ids.remove(&id);
        let g = &mut st.generations[h.index as usize];
        *g = g.wrapping_add(1);
        let c = &self.counters[h.index as usize];
        c.live.store(false, Relaxed);
        c.generation.store(*g, Relaxed);
        st.free_tasks.push(h.index);
        Ok(())
    }

    /// Hands a record to the scheduler. `key` is a 64-bit hash of the serialized key bytes, or
    /// `None` for a null key; `slot` is the caller's number for the record, in
    /// `0..max_inflight` and not in use. Offsets of one partition of a task must increase.
    ///
    /// Records of one task with the same key run one at a time in submission order. On success
    /// it says whether there is room for another record.
    pub fn submit(
        &self,
        h: TaskHandle,
        partition: u32,
        offset: i64,
        key: Option<u64>,
        slot: u32,
    ) -> Result<Capacity, Error> {
        let mut st = self.lock();
        let mut work = false;
        let r = self.submit_locked(&mut st, h, partition, offset, key, slot, &mut work);
        drop(st);
        self.signal(Wake {
            work,
            ..Wake::default()
        });
        r
    }

    /// Submits several records of one task in order under one lock acquisition, as
    /// [`submit`](Self::submit) would one by one. Stops at the first refused record: returns
    /// how many were accepted and, if one was refused, why. The capacity is the one after the
    /// last accepted record.
    pub fn submit_batch(
        &self,
        h: TaskHandle,
        records: &[Submission],
    ) -> (usize, Result<Capacity, Error>) {
        let mut st = self.lock();
        let mut work = false;
        let mut last = Ok(Capacity::Available);
        let mut n = 0;
        for r in records {
            match self.submit_locked(&mut st, h, r.partition, r.offset, r.key, r.slot, &mut work) {
                Ok(c) => {
                    last = Ok(c);
                    n += 1;
                }
                Err(e) => {
                    last = Err(e);
                    break;
                }
            }
        }
        drop(st);
        self.signal(Wake {
            work,
            ..Wake::default()
        });
        (n, last)
    }

    #[allow(clippy::too_many_arguments)]
    fn submit_locked(
        &self,
        st: &mut State,
        h: TaskHandle,
        partition: u32,
        offset: i64,
        key: Option<u64>,
        slot: u32,
        wake: &mut bool,
    ) -> Result<Capacity, Error> {
        if st.shutdown {
            return Err(Error::Shutdown);
        }
        let cap_total = self.config.max_inflight;
        let unfinished_total = st.unfinished;
        let t = Self::task(st, h)?;
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
        if unfinished_total >= cap_total {
            return Err(Error::GlobalAtCapacity { cap: cap_total });
        }
        let max = self.config.max_partitions_per_task;
        if partition >= max {
            return Err(Error::PartitionOutOfRange { partition, max });
        }
        match st.slots.get(slot as usize) {
            None => {
                return Err(Error::SlotOutOfRange {
                    slot,
                    slots: cap_total,
                })
            }
            Some(e) if e.state != SlotState::Free => return Err(Error::SlotInUse(slot)),
            Some(_) => {}
        }

        let State {
            slots,
            tasks,
            sample_seq,
            unfinished,
            ..
        } = st;
        let Some(t) = tasks[h.index as usize].as_mut() else {
            return Err(Error::UnknownTask);
        };
        if t.partitions.len() <= partition as usize {
            // Grows once per partition number; never on the steady-state path.
            t.partitions
                .resize_with(partition as usize + 1, PartitionTracker::default);
        }
        let tracker = &mut t.partitions[partition as usize];
        if let Some(last) = tracker.last_submitted() {
            if offset <= last {
                return Err(Error::OffsetNotIncreasing {
                    task: t.id,
                    partition,
                    last,
                    offset,
                });
            }
        }
        let seq = tracker.submit(offset);
        let timed = *sample_seq & ((1u64 << self.config.timing_sample_shift) - 1) == 0;
        *sample_seq = sample_seq.wrapping_add(1);
        slots[slot as usize] = SlotEntry {
            state: SlotState::Waiting,
            timed,
            null_key: key.is_none(),
            task: h.index,
            partition,
            next: NIL,
            key: key.unwrap_or(0),
            seq,
            offset,
            submitted_ns: if timed { self.now_ns() } else { 0 },
            dispatched_ns: 0,
        };
        t.queued += 1;
        t.submitted += 1;
        *unfinished += 1;

        let lane = match key {
            None if t.null_keys == NullKeyOrdering::Unordered => None,
            None => Some(&mut t.null_lane),
            Some(k) => Some(t.lanes.entry(k).or_insert(IDLE_LANE)),
        };
        let ready = match lane {
            None => true,
            Some(l) => {
                self.move_depth(l.depth, l.depth + 1);
                l.depth += 1;
                t.max_key_depth = t.max_key_depth.max(l.depth);
                if l.active == NIL {
                    l.active = slot;
                    true
                } else {
                    if l.wait_tail == NIL {
                        l.wait_head = slot;
                    } else {
                        slots[l.wait_tail as usize].next = slot;
                    }
                    l.wait_tail = slot;
                    false
                }
            }
        };
        let full = if t.unfinished() >= t.cap {
            Capacity::TaskFull
        } else if *unfinished >= cap_total {
            Capacity::GlobalFull
        } else {
            Capacity::Available
        };
        self.totals
            .submitted
            .store(self.totals.submitted.load(Relaxed) + 1, Relaxed);
        *wake |= ready && self.make_ready(st, h.index, slot);
        self.publish_task(st, h.index);
        self.publish_totals(st);
        Ok(full)
    }

    fn publish_task(&self, st: &State, ti: u32) {
        if let Some(t) = st.tasks[ti as usize].as_ref() {
            self.publish(ti, t);
        }
    }

    fn publish_totals(&self, st: &State) {
        self.totals
            .queued
            .store(st.unfinished - st.running, Relaxed);
        self.totals.running.store(st.running, Relaxed);
    }

    /// Puts `slot` at the end of its task's ready list and enters the task into the ring.
    /// Returns whether an idle poller should be woken (the caller signals after unlocking, so
    /// the woken thread does not run into the lock still held).
    fn make_ready(&self, st: &mut State, ti: u32, slot: u32) -> bool {
        let State {
            slots,
            tasks,
            ring_head,
            ring_tail,
            idle_pollers,
            spinning,
            unfinished,
            running,
            wake_deferred,
            ..
        } = st;
        let Some(t) = tasks[ti as usize].as_mut() else {
            return false;
        };
        let e = &mut slots[slot as usize];
        e.state = SlotState::Ready;
        e.next = NIL;
        if t.ready_tail == NIL {
            t.ready_head = slot;
        } else {
            slots[t.ready_tail as usize].next = slot;
        }
        t.ready_tail = slot;
        if t.failure.is_some() {
            return false;
        }
        if !t.in_ring {
            ring_push(ring_head, ring_tail, tasks, ti);
            self.ready_hint.store(true, Relaxed);
        } else if !*wake_deferred {
            // Whoever put the task into the ring woke a poller for it (or one was spinning, or
            // none was idle); wake-ups chain from there.
            return false;
        }
        // A spinning poller will see the hint; otherwise wake a sleeping one, unless a running
        // record's worker will take it soon.
        if *idle_pollers == 0 || *spinning {
            return false;
        }
        let defer = self.defer_wake(*unfinished, *running);
        *wake_deferred = defer;
        !defer
    }

    /// Whether ready work may wait for a running record's worker instead of waking a sleeping
    /// poller: `queued × wake_defer_ratio ≤ running` (`queued` counts every record not running,
    /// ready or behind its key, so it never under-counts the ready ones). Safe for progress:
    /// it needs `running > 0`, and every worker polls again after it completes
    /// (`complete_and_poll`); `complete` and `fail` alone wake without deferral
    /// ([`Self::wake_leftover`]).
    fn defer_wake(&self, unfinished: u32, running: u32) -> bool {
        let ratio = self.config.wake_defer_ratio;
        let queued = unfinished.saturating_sub(running);
        ratio > 0 && running > 0 && (queued as u64) * (ratio as u64) <= running as u64
    }

    /// Whether there is ready work, a sleeping poller for it, and no spinning one that will see it.
    fn sleeper_for_ready(st: &State) -> bool {
        st.ring_head != NIL && st.idle_pollers > 0 && !st.spinning
    }

    /// After `complete` or `fail` (whose caller does not poll next): a sleeping poller for any
    /// ready work, deferred or not, so no ready record waits on a worker that will not come.
    fn wake_leftover(st: &mut State) -> bool {
        let wake = Self::sleeper_for_ready(st);
        st.wake_deferred &= !wake;
        wake
    }

    /// Signals after the lock is released.
    fn signal(&self, wake: Wake) {
        if wake.work {
            self.work_cv.notify_one();
        }
        if wake.drains {
            self.drain_cv.notify_all();
        }
        if wake.room {
            self.room_cv.notify_all();
        }
    }

    /// Moves up to `max` ready records to running, one per task per turn of the ring, and
    /// appends their slots to `out`.
    fn take_ready(&self, st: &mut State, out: &mut Vec<u32>, max: usize) -> usize {
        let mut n = 0;
        let mut now = 0;
        while n < max {
            let State {
                slots,
                tasks,
                ring_head,
                ring_tail,
                ..
            } = &mut *st;
            let ti = ring_pop(ring_head, ring_tail, tasks);
            if ti == NIL {
                break;
            }
            let Some(t) = tasks[ti as usize].as_mut() else {
                continue;
            };
            // A failed task stops dispatching; it leaves the ring here.
            if t.failure.is_some() || t.ready_head == NIL {
                continue;
            }
            let slot = t.ready_head;
            let e = &mut slots[slot as usize];
            t.ready_head = e.next;
            if t.ready_head == NIL {
                t.ready_tail = NIL;
            }
            e.next = NIL;
            e.state = SlotState::Running;
            if e.timed {
                if now == 0 {
                    now = self.now_ns();
                }
                e.dispatched_ns = now;
                let waited = now.saturating_sub(e.submitted_ns);
                self.wait_ns.record_exclusive(waited);
                t.wait.add(waited);
                Self::publish_wait(&self.counters[ti as usize], t);
            }
            t.queued -= 1;
            t.running += 1;
            t.partitions[e.partition as usize].dispatched();
            out.push(slot);
            n += 1;
            let again = t.ready_head != NIL;
            let c = &self.counters[ti as usize];
            c.queued.store(t.queued, Relaxed);
            c.running.store(t.running, Relaxed);
            if again {
                ring_push(ring_head, ring_tail, tasks, ti);
            }
        }
        if n > 0 {
            st.running += n as u32;
            self.publish_totals(st);
        }
        self.ready_hint.store(st.ring_head != NIL, Relaxed);
        if st.ring_head == NIL {
            st.wake_deferred = false;
        }
        n
    }

    /// Waits up to `timeout` for ready records and appends up to `max` of their slots to `out`.
    /// Returns how many were appended (0 on timeout). Fair: tasks take turns, one record each;
    /// within a task keys take turns in the order they became ready.
    pub fn poll(&self, out: &mut Vec<u32>, max: usize, timeout: Duration) -> Result<usize, Error> {
        self.complete_and_poll(&[], out, max, timeout)
    }

    /// Completes `done` (as [`complete`](Self::complete), in order, stopping at the first
    /// error) and then polls, all under one lock acquisition: a worker's loop in one call.
    pub fn complete_and_poll(
        &self,
        done: &[u32],
        out: &mut Vec<u32>,
        max: usize,
        timeout: Duration,
    ) -> Result<usize, Error> {
        let mut st = self.lock();
        let mut wake = Wake::default();
        for &slot in done {
            match self.finish(&mut st, slot, None) {
                Ok(w) => wake.add(w),
                Err(e) => {
                    drop(st);
                    self.signal(wake);
                    return Err(e);
                }
            }
        }
        if max == 0 {
            wake.work |= Self::wake_leftover(&mut st);
            drop(st);
            self.signal(wake);
            return Ok(0);
        }
        // This poller takes work itself: it wakes another one only for work it leaves behind.
        wake.work = false;
        let mut deadline = None;
        let mut spun = false;
        loop {
            if st.shutdown {
                drop(st);
                self.signal(wake);
                return Err(Error::Shutdown);
            }
            let n = self.take_ready(&mut st, out, max);
            if n > 0 {
                // Chain the wake-up: more ready work than this poller took, more than the
                // running records' workers will take soon.
                if Self::sleeper_for_ready(&st) {
                    let defer = self.defer_wake(st.unfinished, st.running);
                    wake.work = !defer;
                    st.wake_deferred = defer;
                }
                drop(st);
                self.signal(wake);
                return Ok(n);
            }
            if wake.drains {
                self.drain_cv.notify_all();
                wake.drains = false;
            }
            let now = Instant::now();
            let deadline = *deadline.get_or_insert_with(|| now.checked_add(timeout));
            let left = match deadline {
                Some(d) if d <= now => return Ok(0),
                Some(d) => d - now,
                None => Duration::from_secs(3600), // "forever"; re-checked on every wake-up
            };
            if !spun && !st.spinning {
                // Spin briefly before sleeping: work that arrives within the spin costs no
                // futex wake-up and no context switch, for the submitter or for us.
                spun = true;
                st.spinning = true;
                drop(st);
                self.spin_for_work(left.min(SPIN));
                st = self.lock();
                st.spinning = false;
                continue;
            }
            st.idle_pollers += 1;
            st = match self.work_cv.wait_timeout(st, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
            st.idle_pollers -= 1;
        }
    }

    /// Watches `ready_hint` for up to `budget`, yielding the CPU between looks.
    fn spin_for_work(&self, budget: Duration) {
        let start = Instant::now();
        for i in 0..SPIN_LOOKS {
            if self.ready_hint.load(Relaxed) {
                return;
            }
            if i < 64 {
                std::hint::spin_loop();
            } else {
                yield_now();
                if i % 8 == 0 && start.elapsed() >= budget {
                    return;
                }
            }
        }
    }

    /// Marks a running record as successfully finished; the next record of its key (if any)
    /// becomes ready.
    pub fn complete(&self, slot: u32) -> Result<(), Error> {
        let mut st = self.lock();
        let mut wake = self.finish(&mut st, slot, None)?;
        wake.work |= Self::wake_leftover(&mut st);
        drop(st);
        self.signal(wake);
        Ok(())
    }

    /// Marks a running record as failed. The task fails: it keeps the first failure for its
    /// owner (see [`failure`](Self::failure)), accepts no more records and dispatches none of
    /// its queued ones; the failed offset holds the partition's watermark. No retry.
    pub fn fail(&self, slot: u32, message: &str) -> Result<(), Error> {
        let mut st = self.lock();
        let mut wake = self.finish(&mut st, slot, Some(message))?;
        wake.work |= Self::wake_leftover(&mut st);
        drop(st);
        self.signal(wake);
        Ok(())
    }

    /// Ends a running record; returns whom to wake once the lock is released.
    fn finish(&self, st: &mut State, slot: u32, failure: Option<&str>) -> Result<Wake, Error> {
        let State {
            slots,
            tasks,
            unfinished,
            running,
            drain_waiters,
            ..
        } = &mut *st;
        let e = match slots.get(slot as usize) {
            None => {
                return Err(Error::SlotOutOfRange {
                    slot,
                    slots: self.config.max_inflight,
                })
            }
            Some(e) if e.state != SlotState::Running => return Err(Error::SlotNotRunning(slot)),
            Some(e) => *e,
        };
        let ti = e.task;
        let Some(t) = tasks[ti as usize].as_mut() else {
            return Err(Error::UnknownTask);
        };
        if e.timed {
            let ran = self.now_ns().saturating_sub(e.dispatched_ns);
            self.run_ns.record_exclusive(ran);
            t.run.add(ran);
            Self::publish_run(&self.counters[ti as usize], t);
        }
        t.partitions[e.partition as usize].finish(e.seq, failure.is_none());
        t.running -= 1;
        *unfinished -= 1;
        *running -= 1;
        match failure {
            None => {
                t.finished += 1;
                self.totals
                    .finished
                    .store(self.totals.finished.load(Relaxed) + 1, Relaxed);
            }
            Some(message) => {
                t.failures += 1;
                self.totals
                    .failures
                    .store(self.totals.failures.load(Relaxed) + 1, Relaxed);
                if t.failure.is_none() {
                    t.failure = Some(Box::new(TaskFailure {
                        task: t.id,
                        partition: e.partition,
                        offset: e.offset,
                        slot,
                        message: message.to_owned(),
                    }));
                }
            }
        }
        slots[slot as usize] = FREE_SLOT;

        // Advance the key's lane: the next waiting record becomes active, or the lane goes.
        let mut next = NIL;
        if !e.null_key {
            // One hash lookup: the occupied entry is updated or removed in place.
            if let Entry::Occupied(mut o) = t.lanes.entry(e.key) {
                next = self.advance_lane(slots, o.get_mut());
                if next == NIL {
                    o.remove();
                }
            }
        } else if t.null_keys == NullKeyOrdering::Serial {
            next = self.advance_lane(slots, &mut t.null_lane);
        }
        let drains = *drain_waiters > 0 && t.running == 0;
        let room = st.room_waiters > 0 && self.room_freed(st, ti);
        let work = next != NIL && self.make_ready(st, ti, next);
        self.publish_task(st, ti);
        self.publish_totals(st);
        Ok(Wake { work, drains, room })
    }

    /// Ends the lane's active record: returns the next waiting record (now active), or `NIL`
    /// with the lane reset to idle.
    fn advance_lane(&self, slots: &[SlotEntry], l: &mut Lane) -> u32 {
        self.move_depth(l.depth, l.depth - 1);
        l.depth -= 1;
        let next = l.wait_head;
        if next == NIL {
            *l = IDLE_LANE;
        } else {
            l.active = next;
            l.wait_head = slots[next as usize].next;
            if l.wait_head == NIL {
                l.wait_tail = NIL;
            }
        }
        next
    }

    /// The first failure of a task, if it failed.
    pub fn failure(&self, h: TaskHandle) -> Result<Option<TaskFailure>, Error> {
        let mut st = self.lock();
        Ok(Self::task(&mut st, h)?.failure.as_deref().cloned())
    }

    /// Whether the task can take another record now (both its own and the global cap), read
    /// without the scheduler lock. Exact for the task's single submitter as far as the task cap
    /// goes; the global cap can be taken by other tasks' submitters in between, so `submit` can
    /// still answer [`Error::GlobalAtCapacity`].
    pub fn has_capacity(&self, h: TaskHandle) -> Result<bool, Error> {
        let c = self
            .counters
            .get(h.index as usize)
            .ok_or(Error::UnknownTask)?;
        if !c.live.load(Relaxed) || c.generation.load(Relaxed) != h.generation {
            return Err(Error::UnknownTask);
        }
        let task = c.queued.load(Relaxed) as u64 + c.running.load(Relaxed) as u64;
        let total =
            self.totals.queued.load(Relaxed) as u64 + self.totals.running.load(Relaxed) as u64;
        Ok(task < c.cap.load(Relaxed) as u64 && total < self.config.max_inflight as u64)
    }

    /// Counts and watermark of one partition of a task (all zero if nothing was submitted).
    pub fn partition_progress(
        &self,
        h: TaskHandle,
        partition: u32,
    ) -> Result<PartitionProgress, Error> {
        let mut st = self.lock();
        let t = Self::task(&mut st, h)?;
        Ok(t.partitions
            .get(partition as usize)
            .map(|p| p.progress)
            .unwrap_or_default())
    }

    /// Progress of every partition the task has received records for.
    pub fn partitions(&self, h: TaskHandle) -> Result<Vec<(u32, PartitionProgress)>, Error> {
        let mut st = self.lock();
        let t = Self::task(&mut st, h)?;
        Ok(t.partitions
            .iter()
            .enumerate()
            .filter(|(_, p)| p.progress.submitted > 0)
            .map(|(i, p)| (i as u32, p.progress))
            .collect())
    }

    /// Waits until every record submitted to `tasks` has completed, or `timeout` passes.
    ///
    /// A failed task dispatches nothing more, so for it the drain ends when none of its
    /// records is running, with [`Error::TaskFailed`]. On timeout the error lists what remains
    /// in each task and from which offset. Submitting to a task while draining it is allowed;
    /// the drain then also waits for those records.
    pub fn drain(&self, tasks: &[TaskHandle], timeout: Duration) -> Result<(), Error> {
        let st = self.lock();
        self.wait(st, tasks, Until::Empty, timeout)
    }

    /// Closes a task: it accepts no more records. `Drain` waits for every submitted record (a
    /// failed task answers [`Error::TaskFailed`] once nothing runs); `DropQueued` discards the
    /// queued records at once, appends their slots to `dropped` (for the caller to release;
    /// appended even when the wait then fails) and waits only for the running ones, failed task
    /// or not. On timeout the task stays closed and the error says what remains; close it
    /// again to wait more, or with `DropQueued`.
    pub fn close(
        &self,
        h: TaskHandle,
        mode: CloseMode,
        timeout: Duration,
        dropped: &mut Vec<u32>,
    ) -> Result<(), Error> {
        let mut st = self.lock();
        Self::task(&mut st, h)?.closed = true;
        let until = match mode {
            CloseMode::Drain => Until::Empty,
            CloseMode::DropQueued => {
                self.drop_queued(&mut st, h.index, dropped);
                Until::Idle
            }
        };
        self.publish_task(&st, h.index);
        self.publish_totals(&st);
        self.wait(st, &[h], until, timeout)
    }

    fn drop_queued(&self, st: &mut State, ti: u32, dropped: &mut Vec<u32>) {
        let State {
            slots,
            tasks,
            unfinished,
            ..
        } = st;
        let Some(t) = tasks[ti as usize].as_mut() else {
            return;
        };
        let before = dropped.len();
        // Ready records: active heads of their lanes, or unordered null-key records.
        let mut s = t.ready_head;
        while s != NIL {
            let next = slots[s as usize].next;
            Self::release_queued(slots, t, s, dropped);
            s = next;
        }
        t.ready_head = NIL;
        t.ready_tail = NIL;
        // Waiting records. A lane survives only while its active record runs.
        let mut lanes = std::mem::take(&mut t.lanes);
        lanes.retain(|_, l| self.prune_lane(slots, t, l, dropped));
        t.lanes = lanes;
        let mut null_lane = std::mem::replace(&mut t.null_lane, IDLE_LANE);
        if null_lane.depth > 0 && self.prune_lane(slots, t, &mut null_lane, dropped) {
            t.null_lane = null_lane;
        }
        let n = (dropped.len() - before) as u32;
        *unfinished -= n;
        self.totals
            .dropped
            .store(self.totals.dropped.load(Relaxed) + n as u64, Relaxed);
    }

    /// Releases the waiting records of a lane; keeps the lane (returns true) only if its active
    /// record is running.
    fn prune_lane(
        &self,
        slots: &mut [SlotEntry],
        t: &mut Task,
        l: &mut Lane,
        dropped: &mut Vec<u32>,
    ) -> bool {
        let mut s = l.wait_head;
        while s != NIL {
            let next = slots[s as usize].next;
            Self::release_queued(slots, t, s, dropped);
            s = next;
        }
        let running = l.active != NIL && slots[l.active as usize].state == SlotState::Running;
        let depth = running as u32;
        self.move_depth(l.depth, depth);
        *l = Lane {
            active: if running { l.active } else { NIL },
            wait_head: NIL,
            wait_tail: NIL,
            depth,
        };
        running
    }

    fn release_queued(slots: &mut [SlotEntry], t: &mut Task, slot: u32, dropped: &mut Vec<u32>) {
        let e = &mut slots[slot as usize];
        t.partitions[e.partition as usize].dropped();
        *e = FREE_SLOT;
        t.queued -= 1;
        t.dropped += 1;
        dropped.push(slot);
    }

    /// How many free places a submitter waiting at a cap wants before it goes on: a quarter of
    /// the smaller cap, at least one, so that one wake-up pays for a run of submits.
    fn room_wanted(&self, cap: u32) -> u32 {
        (cap.min(self.config.max_inflight) / 4).max(1)
    }

    /// Free places for task `t`, under both caps.
    fn room_of(&self, st: &State, t: &Task) -> u32 {
        t.cap
            .saturating_sub(t.unfinished())
            .min(self.config.max_inflight.saturating_sub(st.unfinished))
    }

    /// After a record of task `ti` ended, with a room waiter: whether to wake it. One-shot per
    /// watched task and for the global want, so a wait costs one wake-up, not one per record.
    fn room_freed(&self, st: &mut State, ti: u32) -> bool {
        let free_global = self.config.max_inflight.saturating_sub(st.unfinished);
        let mut wake = false;
        if st.room_global_want > 0 && free_global >= st.room_global_want {
            st.room_global_want = 0;
            wake = true;
        }
        let room = match st.tasks[ti as usize].as_ref() {
            Some(t) if t.room_want > 0 => t.failure.is_some() || self.room_of(st, t) >= t.room_want,
            _ => false,
        };
        if room {
            if let Some(t) = st.tasks[ti as usize].as_mut() {
                t.room_want = 0;
            }
        }
        wake || room
    }

    /// For a submitter whose tasks are at a cap: waits up to `timeout` until one of `tasks` has
    /// room for a run of records (a quarter of its cap, see `room_wanted`), has failed, is closed
    /// or is gone. Returns whether one has (false: the timeout passed). A StreamThread waits here
    /// instead of in a consumer poll that no new record would end.
    pub fn wait_for_room(&self, tasks: &[TaskHandle], timeout: Duration) -> Result<bool, Error> {
        let mut st = self.lock();
        let deadline = Instant::now().checked_add(timeout);
        let mut waiting = false;
        let result = loop {
            if st.shutdown {
                break Err(Error::Shutdown);
            }
            let mut ready = false;
            let mut global_want = 0u32;
            for &h in tasks {
                let i = h.index as usize;
                let t = match st.tasks.get(i) {
                    Some(Some(t)) if st.generations[i] == h.generation => t,
                    _ => {
                        ready = true;
                        break;
                    }
                };
                let want = self.room_wanted(t.cap);
                if t.closed || t.failure.is_some() || self.room_of(&st, t) >= want {
                    ready = true;
                    break;
                }
                if t.cap.saturating_sub(t.unfinished()) >= want {
                    // Held by the global cap, not its own: every task's completions count.
                    global_want = if global_want == 0 {
                        want
                    } else {
                        global_want.min(want)
                    };
                }
            }
            if ready {
                break Ok(true);
            }
            let now = Instant::now();
            let left = match deadline {
                Some(d) if d <= now => break Ok(false),
                Some(d) => d - now,
                None => Duration::from_secs(3600),
            };
            for &h in tasks {
                if let Some(t) = st.tasks[h.index as usize].as_mut() {
                    t.room_want = self.room_wanted(t.cap);
                }
            }
            if global_want > 0 && (st.room_global_want == 0 || global_want < st.room_global_want) {
                st.room_global_want = global_want;
            }
            if !waiting {
                st.room_waiters += 1;
                waiting = true;
            }
            st = match self.room_cv.wait_timeout(st, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        };
        if waiting {
            st.room_waiters -= 1;
            for &h in tasks {
                let i = h.index as usize;
                if st.generations.get(i) == Some(&h.generation) {
                    if let Some(t) = st.tasks[i].as_mut() {
                        t.room_want = 0;
                    }
                }
            }
            if st.room_waiters == 0 {
                st.room_global_want = 0;
            }
        }
        result
    }

    fn wait(
        &self,
        mut st: MutexGuard<'_, State>,
        tasks: &[TaskHandle],
        until: Until,
        timeout: Duration,
    ) -> Result<(), Error> {
        let start = Instant::now();
        let deadline = start.checked_add(timeout);
        loop {
            if st.shutdown {
                return Err(Error::Shutdown);
            }
            let mut pending = false;
            for &h in tasks {
                let t = Self::task(&mut st, h)?;
                // A failed task can never become empty; a wait for idle (close with
                // `DropQueued`) succeeds all the same, the failure stays readable.
                if let (Some(f), Until::Empty) = (&t.failure, until) {
                    if t.running == 0 {
                        return Err(Error::TaskFailed(f.clone()));
                    }
                }
                pending |= match until {
                    Until::Empty => t.unfinished() > 0,
                    Until::Idle => t.running > 0,
                };
            }
            if !pending {
                return Ok(());
            }
            let now = Instant::now();
            let left = match deadline {
                Some(d) if d <= now => {
                    let mut remaining = Vec::new();
                    for &h in tasks {
                        let t = Self::task(&mut st, h)?;
                        if t.unfinished() > 0 {
                            remaining.push(t.remaining());
                        }
                    }
                    return Err(Error::DrainTimeout {
                        waited_ms: start.elapsed().as_millis() as u64,
                        remaining,
                    });
                }
                Some(d) => d - now,
                None => Duration::from_secs(3600),
            };
            st.drain_waiters += 1;
            st = match self.drain_cv.wait_timeout(st, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
            st.drain_waiters -= 1;
        }
    }

    /// Stops the scheduler: every blocked and later `poll`, `drain` and `close` returns
    /// [`Error::Shutdown`], and nothing more is accepted. Records still held stay where they are.
    pub fn shutdown(&self) {
        let mut st = self.lock();
        st.shutdown = true;
        drop(st);
        self.work_cv.notify_all();
        self.drain_cv.notify_all();
        self.room_cv.notify_all();
    }

    pub fn is_shutdown(&self) -> bool {
        self.lock().shutdown
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
