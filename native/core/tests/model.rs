//! Property test: random operation sequences against a simple sequential model.
//!
//! The model keeps every record in submission order with its state and decides, by brute force,
//! which records are runnable (queued, task not failed, and no earlier unfinished record of the
//! same lane). The scheduler may pick any runnable records, but must hand out exactly
//! `min(max, runnable lanes)` of them, never a record that is not runnable, and must agree with
//! the model on every count, watermark, drain, close and cap decision.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use proptest::prelude::*;
use streamshard_core::{
    Capacity, CloseMode, Error, NullKeyOrdering, Scheduler, SchedulerConfig, Submission,
    TaskHandle, TaskId, TaskOptions,
};

const SLOTS: u32 = 12;
const TASKS: usize = 3;
const PARTITIONS: u32 = 2;

#[derive(Clone, Debug)]
enum Op {
    /// `key`: None = null key; logical keys 0..6 map to hashes `key % 4` (0/4 and 1/5 collide).
    Submit {
        task: usize,
        partition: u32,
        key: Option<u64>,
        gap: i64,
    },
    /// Several records of one task in one `submit_batch` call.
    SubmitBatch {
        task: usize,
        records: Vec<(u32, Option<u64>, i64)>,
    },
    ResubmitOldOffset {
        task: usize,
        partition: u32,
    },
    Poll {
        max: usize,
    },
    Complete {
        pick: usize,
    },
    Fail {
        pick: usize,
    },
    /// A running record goes back to wait: `later` for an hour (it stays in backoff for the
    /// rest of the case), else due at once (ready again).
    Retry {
        pick: usize,
        later: bool,
    },
    CompleteNotRunning {
        slot: u32,
    },
    Drain {
        task: usize,
    },
    DrainAll,
    Close {
        task: usize,
        drop: bool,
    },
    Remove {
        task: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let task = 0..TASKS;
    prop_oneof![
        8 => (task.clone(), 0..PARTITIONS, prop::option::weighted(0.85, 0u64..6), 1i64..4)
            .prop_map(|(task, partition, key, gap)| Op::Submit { task, partition, key, gap }),
        2 => (task.clone(), prop::collection::vec(
                (0..PARTITIONS, prop::option::weighted(0.85, 0u64..6), 1i64..4), 0..6))
            .prop_map(|(task, records)| Op::SubmitBatch { task, records }),
        1 => (task.clone(), 0..PARTITIONS)
            .prop_map(|(task, partition)| Op::ResubmitOldOffset { task, partition }),
        4 => (1usize..5).prop_map(|max| Op::Poll { max }),
        5 => any::<usize>().prop_map(|pick| Op::Complete { pick }),
        1 => any::<usize>().prop_map(|pick| Op::Fail { pick }),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(pick, later)| Op::Retry { pick, later }),
        1 => (0..SLOTS + 2).prop_map(|slot| Op::CompleteNotRunning { slot }),
        1 => task.clone().prop_map(|task| Op::Drain { task }),
        1 => Just(Op::DrainAll),
        1 => (task.clone(), any::<bool>()).prop_map(|(task, drop)| Op::Close { task, drop }),
        1 => task.prop_map(|task| Op::Remove { task }),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Queued,
    Running,
    /// Retried, not due within the case.
    Backoff,
    Done,
    Failed,
    Dropped,
}

impl Rec {
    fn unfinished(&self) -> bool {
        matches!(self.st, St::Queued | St::Running | St::Backoff)
    }
}

#[derive(Clone, Debug)]
struct Rec {
    task: usize,
    generation: u32,
    partition: u32,
    offset: i64,
    /// Lane: Some(hash) for keys and the serial null lane (u64::MAX); None = unordered.
    lane: Option<u64>,
    slot: u32,
    st: St,
}

struct MTask {
    handle: TaskHandle,
    generation: u32,
    id: TaskId,
    cap: u32,
    unordered_nulls: bool,
    closed: bool,
    failed: bool,
    last_offset: HashMap<u32, i64>,
}

struct Model {
    sched: Scheduler,
    tasks: Vec<MTask>,
    recs: Vec<Rec>,
    free_slots: BTreeSet<u32>,
}

fn options(i: usize) -> TaskOptions {
    TaskOptions {
        null_keys: if i == 2 {
            NullKeyOrdering::Unordered
        } else {
            NullKeyOrdering::Serial
        },
        max_inflight: if i == 1 { Some(4) } else { None },
    }
}

impl Model {
    fn new() -> Self {
        let sched = Scheduler::new(SchedulerConfig {
            max_inflight: SLOTS,
            max_inflight_per_task: 6,
            max_tasks: 4,
            max_partitions_per_task: PARTITIONS,
            timing_sample_shift: 0,
            // Every deferral path runs: with ratio 1 a ready record waits for a running one
            // whenever as many run as wait.
            wake_defer_ratio: 1,
            external_waits: false,
        })
        .unwrap();
        let tasks = (0..TASKS)
            .map(|i| {
                let id = TaskId {
                    subtopology: i as u32,
                    partition: 7,
                };
                let opts = options(i);
                MTask {
                    handle: sched.register_task(id, opts).unwrap(),
                    generation: 0,
                    id,
                    cap: opts.max_inflight.unwrap_or(6),
                    unordered_nulls: i == 2,
                    closed: false,
                    failed: false,
                    last_offset: HashMap::new(),
                }
            })
            .collect();
        Model {
            sched,
            tasks,
            recs: Vec::new(),
            free_slots: (0..SLOTS).collect(),
        }
    }

    fn live(&self, r: &Rec) -> bool {
        self.tasks[r.task].generation == r.generation
    }

    fn unfinished(&self, task: usize) -> Vec<&Rec> {
        self.recs
            .iter()
            .filter(|r| r.task == task && self.live(r) && r.unfinished())
            .collect()
    }

    fn running_idx(&self) -> Vec<usize> {
        (0..self.recs.len())
            .filter(|&i| self.recs[i].st == St::Running)
            .collect()
    }

    /// Indices of runnable records (the model's own rule).
    fn runnable(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, r) in self.recs.iter().enumerate() {
            if r.st != St::Queued || !self.live(r) || self.tasks[r.task].failed {
                continue;
            }
            let blocked = r.lane.is_some()
                && self.recs[..i].iter().any(|p| {
                    p.task == r.task
                        && p.generation == r.generation
                        && p.lane == r.lane
                        && p.unfinished()
                });
            if !blocked {
                out.push(i);
            }
        }
        out
    }

    fn rec_by_slot(&self, slot: u32) -> Option<usize> {
        self.recs
            .iter()
            .position(|r| r.slot == slot && r.unfinished())
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Submit {
                task,
                partition,
                key,
                gap,
            } => self.submit(task, partition, key, gap),
            Op::SubmitBatch { task, ref records } => self.submit_batch(task, records),
            Op::ResubmitOldOffset { task, partition } => {
                let t = &self.tasks[task];
                let (Some(&last), Some(&slot)) =
                    (t.last_offset.get(&partition), self.free_slots.first())
                else {
                    return;
                };
                if t.closed || t.failed || self.unfinished(task).len() as u32 >= t.cap {
                    return;
                }
                if self.recs.iter().filter(|r| r.unfinished()).count() as u32 >= SLOTS {
                    return;
                }
                let got = self.sched.submit(t.handle, partition, last, Some(1), slot);
                assert!(
                    matches!(got, Err(Error::OffsetNotIncreasing { .. })),
                    "{got:?}"
                );
            }
            Op::Poll { max } => self.poll(max),
            Op::Complete { pick } | Op::Fail { pick } => {
                let running = self.running_idx();
                if running.is_empty() {
                    return;
                }
                let i = running[pick % running.len()];
                let slot = self.recs[i].slot;
                if matches!(op, Op::Complete { .. }) {
                    self.sched.complete(slot).unwrap();
                    self.recs[i].st = St::Done;
                } else {
                    self.sched.fail(slot).unwrap();
                    self.recs[i].st = St::Failed;
                    let t = self.recs[i].task;
                    self.tasks[t].failed = true;
                }
                self.free_slots.insert(slot);
            }
            Op::Retry { pick, later } => {
                let running = self.running_idx();
                if running.is_empty() {
                    return;
                }
                let i = running[pick % running.len()];
                let delay = if later {
                    Duration::from_secs(3600)
                } else {
                    Duration::ZERO
                };
                self.sched.retry(self.recs[i].slot, delay).unwrap();
                self.recs[i].st = if later { St::Backoff } else { St::Queued };
            }
            Op::CompleteNotRunning { slot } => {
                if let Some(i) = self.rec_by_slot(slot) {
                    if self.recs[i].st == St::Running {
                        return;
                    }
                }
                let got = self.sched.complete(slot);
                if slot >= SLOTS {
                    assert!(matches!(got, Err(Error::SlotOutOfRange { .. })), "{got:?}");
                } else {
                    assert_eq!(got, Err(Error::SlotNotRunning(slot)));
                }
            }
            Op::Drain { task } => {
                let got = self.sched.drain(&[self.tasks[task].handle], Duration::ZERO);
                self.check_wait(&[task], got, false);
            }
            Op::DrainAll => {
                let handles: Vec<_> = self.tasks.iter().map(|t| t.handle).collect();
                let got = self.sched.drain(&handles, Duration::ZERO);
                self.check_wait(&[0, 1, 2], got, false);
            }
            Op::Close { task, drop } => {
                let mode = if drop {
                    CloseMode::DropQueued
                } else {
                    CloseMode::Drain
                };
                let mut dropped = Vec::new();
                let got =
                    self.sched
                        .close(self.tasks[task].handle, mode, Duration::ZERO, &mut dropped);
                self.tasks[task].closed = true;
                let mut expect_dropped = BTreeSet::new();
                if drop {
                    let generation = self.tasks[task].generation;
                    for r in self.recs.iter_mut() {
                        if r.task == task
                            && r.generation == generation
                            && matches!(r.st, St::Queued | St::Backoff)
                        {
                            r.st = St::Dropped;
                            expect_dropped.insert(r.slot);
                        }
                    }
                    self.free_slots.extend(expect_dropped.iter().copied());
                }
                let got_dropped: BTreeSet<u32> = dropped.iter().copied().collect();
                assert_eq!(got_dropped.len(), dropped.len(), "a slot dropped twice");
                assert_eq!(got_dropped, expect_dropped);
                self.check_wait(&[task], got, drop);
            }
            Op::Remove { task } => {
                let t = &self.tasks[task];
                let busy = !t.closed || !self.unfinished(task).is_empty();
                let got = self.sched.remove_task(t.handle);
                if busy {
                    assert!(matches!(got, Err(Error::TaskBusy { .. })), "{got:?}");
                    return;
                }
                got.unwrap();
                let old = t.handle;
                assert_eq!(
                    self.sched.submit(old, 0, 1_000_000, None, 0),
                    Err(Error::UnknownTask)
                );
                let (id, opts) = (t.id, options(task));
                let t = &mut self.tasks[task];
                t.handle = self.sched.register_task(id, opts).unwrap();
                t.generation += 1;
                t.closed = false;
                t.failed = false;
                t.last_offset.clear();
            }
        }
    }

    /// What a submit to `task` answers now, by the model: the capacity after it, or which
    /// refusal.
    fn expected(&self, task: usize) -> Result<Capacity, &'static str> {
        let t = &self.tasks[task];
        let total = self.recs.iter().filter(|r| r.unfinished()).count() as u32;
        let mine = self.unfinished(task).len() as u32;
        if t.closed {
            Err("closed")
        } else if t.failed {
            Err("failed")
        } else if mine >= t.cap {
            Err("task cap")
        } else if total >= SLOTS {
            Err("global cap")
        } else if mine + 1 >= t.cap {
            Ok(Capacity::TaskFull)
        } else if total + 1 >= SLOTS {
            Ok(Capacity::GlobalFull)
        } else {
            Ok(Capacity::Available)
        }
    }

    fn is_refusal(kind: &str, e: &Error) -> bool {
        matches!(
            (kind, e),
            ("closed", Error::TaskClosed(_))
                | ("failed", Error::TaskFailed(_))
                | ("task cap", Error::TaskAtCapacity { .. })
                | ("global cap", Error::GlobalAtCapacity { .. })
        )
    }

    /// Records an accepted submission in the model.
    fn accept(&mut self, task: usize, sub: Submission) {
        let t = &mut self.tasks[task];
        t.last_offset.insert(sub.partition, sub.offset);
        self.free_slots.remove(&sub.slot);
        self.recs.push(Rec {
            task,
            generation: t.generation,
            partition: sub.partition,
            offset: sub.offset,
            lane: match sub.key {
                Some(h) => Some(h),
                None if t.unordered_nulls => None,
                None => Some(u64::MAX),
            },
            slot: sub.slot,
            st: St::Queued,
        });
    }

    fn submit(&mut self, task: usize, partition: u32, key: Option<u64>, gap: i64) {
        let t = &self.tasks[task];
        let offset = t.last_offset.get(&partition).map_or(gap - 1, |o| o + gap);
        let sub = Submission {
            partition,
            offset,
            key: key.map(|k| k % 4),
            slot: self.free_slots.first().copied().unwrap_or(0),
        };
        let got = self
            .sched
            .submit(t.handle, partition, offset, sub.key, sub.slot);
        match self.expected(task) {
            Err(kind) => assert!(
                got.as_ref().is_err_and(|e| Self::is_refusal(kind, e)),
                "expected {kind}, got {got:?}"
            ),
            Ok(cap) => {
                assert_eq!(got, Ok(cap));
                self.accept(task, sub);
                // The slot now in use is refused.
                assert!(self
                    .sched
                    .submit(
                        self.tasks[task].handle,
                        partition,
                        offset + 100,
                        None,
                        sub.slot
                    )
                    .is_err());
            }
        }
    }

    fn submit_batch(&mut self, task: usize, records: &[(u32, Option<u64>, i64)]) {
        // The batch as the model would submit it one by one; record i is only reached if all
        // before it were accepted, so offsets and slots advance as if they were.
        let mut offsets = self.tasks[task].last_offset.clone();
        let mut slots = self.free_slots.clone();
        let batch: Vec<Submission> = records
            .iter()
            .map(|&(partition, key, gap)| {
                let offset = offsets.get(&partition).map_or(gap - 1, |o| o + gap);
                offsets.insert(partition, offset);
                Submission {
                    partition,
                    offset,
                    key: key.map(|k| k % 4),
                    slot: slots.pop_first().unwrap_or(0),
                }
            })
            .collect();
        let (n, last) = self.sched.submit_batch(self.tasks[task].handle, &batch);
        for (i, &sub) in batch.iter().enumerate() {
            match self.expected(task) {
                Err(kind) => {
                    assert_eq!(n, i, "accepted count");
                    assert!(
                        last.as_ref().is_err_and(|e| Self::is_refusal(kind, e)),
                        "expected {kind}, got {last:?}"
                    );
                    return;
                }
                Ok(cap) => {
                    assert!(i < n, "record {i} refused: {last:?}");
                    if i + 1 == batch.len() {
                        assert_eq!(last, Ok(cap));
                    }
                    self.accept(task, sub);
                }
            }
        }
        assert_eq!(n, batch.len());
    }

    fn poll(&mut self, max: usize) {
        let runnable = self.runnable();
        let mut out = Vec::new();
        let n = self.sched.poll(&mut out, max, Duration::ZERO).unwrap();
        assert_eq!(n, out.len());
        assert_eq!(n, runnable.len().min(max), "runnable: {runnable:?}");
        let mut seen_lanes = BTreeSet::new();
        for slot in out {
            let i = self.rec_by_slot(slot).expect("polled slot not submitted");
            assert!(
                runnable.contains(&i),
                "slot {slot} handed out but not runnable"
            );
            let r = &self.recs[i];
            if let Some(l) = r.lane {
                assert!(
                    seen_lanes.insert((r.task, l)),
                    "two records of one key at once"
                );
            }
            self.recs[i].st = St::Running;
        }
    }

    /// Checks a zero-timeout drain or close result against the model.
    fn check_wait(&self, tasks: &[usize], got: Result<(), Error>, idle_only: bool) {
        for &t in tasks {
            let unfinished = self.unfinished(t);
            let running = unfinished.iter().filter(|r| r.st == St::Running).count();
            if self.tasks[t].failed && running == 0 && !idle_only {
                assert!(matches!(got, Err(Error::TaskFailed(_))), "{got:?}");
                return;
            }
        }
        let pending: Vec<usize> = tasks
            .iter()
            .copied()
            .filter(|&t| {
                let u = self.unfinished(t);
                if idle_only {
                    u.iter().any(|r| r.st == St::Running)
                } else {
                    !u.is_empty()
                }
            })
            .collect();
        if pending.is_empty() {
            assert_eq!(got, Ok(()));
            return;
        }
        match got {
            Err(Error::DrainTimeout { remaining, .. }) => {
                for r in remaining {
                    let t = self.tasks.iter().position(|m| m.id == r.task).unwrap();
                    let u = self.unfinished(t);
                    let running = u.iter().filter(|x| x.st == St::Running).count() as u32;
                    assert_eq!((r.queued, r.running), (u.len() as u32 - running, running));
                }
            }
            other => panic!("expected a drain timeout, got {other:?}"),
        }
    }

    /// Counts and watermarks per partition, and totals, agree with the model; the scheduler's
    /// own invariants hold.
    fn check(&self) {
        if let Err(broken) = self.sched.check_invariants() {
            panic!("invariant broken: {broken}");
        }
        for (ti, t) in self.tasks.iter().enumerate() {
            for p in 0..PARTITIONS {
                let recs: Vec<&Rec> = self
                    .recs
                    .iter()
                    .filter(|r| r.task == ti && r.generation == t.generation && r.partition == p)
                    .collect();
                let count = |s: St| recs.iter().filter(|r| r.st == s).count() as u64;
                let got = self.sched.partition_progress(t.handle, p).unwrap();
                assert_eq!(got.submitted, recs.len() as u64);
                assert_eq!(got.queued, count(St::Queued) + count(St::Backoff));
                assert_eq!(got.running, count(St::Running));
                assert_eq!(got.finished, count(St::Done));
                assert_eq!(got.failed, count(St::Failed));
                let lowest = recs.iter().find(|r| r.st != St::Done).map(|r| r.offset);
                assert_eq!(got.lowest_unfinished, lowest, "task {ti} partition {p}");
                assert_eq!(got.last_submitted, recs.last().map(|r| r.offset));
                assert_eq!(
                    got.committable(),
                    lowest.or(recs.last().map(|r| r.offset + 1))
                );
            }
            let unfinished = self.unfinished(ti);
            let has_room = (unfinished.len() as u32) < t.cap
                && self.recs.iter().filter(|r| r.unfinished()).count() < SLOTS as usize;
            assert_eq!(self.sched.has_capacity(t.handle), Ok(has_room));
        }
        let m = self.sched.metrics();
        let live = |s: St| self.recs.iter().filter(|r| r.st == s).count() as u64;
        assert_eq!(m.totals.queued as u64, live(St::Queued) + live(St::Backoff));
        assert_eq!(m.totals.running as u64, live(St::Running));
        assert_eq!(m.totals.finished, live(St::Done));
        assert_eq!(m.totals.failures, live(St::Failed));
        assert_eq!(m.totals.dropped, live(St::Dropped));
        assert_eq!(m.totals.submitted, self.recs.len() as u64);
        assert_eq!(m.tasks.len(), TASKS);
        // The key-depth histogram counts exactly the active lanes.
        let mut lanes = BTreeSet::new();
        for r in &self.recs {
            if let (Some(l), St::Queued | St::Running | St::Backoff) = (r.lane, r.st) {
                lanes.insert((r.task, r.generation, l));
            }
        }
        assert_eq!(m.key_depths.buckets.iter().sum::<u64>(), lanes.len() as u64);
        let keys: u32 = m.tasks.iter().map(|t| t.active_keys).sum();
        assert_eq!(keys as usize, lanes.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn scheduler_matches_the_model(ops in prop::collection::vec(op(), 1..160)) {
        let mut m = Model::new();
        for op in &ops {
            m.apply(op);
            m.check();
        }
        // Finally run everything to the end: every live record completes exactly once.
        loop {
            m.poll(SLOTS as usize);
            let running = m.running_idx();
            if running.is_empty() {
                break;
            }
            for i in running {
                m.sched.complete(m.recs[i].slot).unwrap();
                m.recs[i].st = St::Done;
                m.free_slots.insert(m.recs[i].slot);
            }
            m.check();
        }
        for (i, t) in m.tasks.iter().enumerate() {
            // A record in backoff for an hour holds its key (and the keys behind it) to the end.
            let in_backoff = m.unfinished(i).iter().any(|r| r.st == St::Backoff);
            let failed_or_stuck = t.failed || in_backoff;
            if !failed_or_stuck {
                prop_assert!(m.unfinished(i).is_empty(), "task {} left records behind", i);
            }
        }
    }
}
