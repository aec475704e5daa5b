//! The scheduler's shell: the lock, the spin policy, the condition variables and who waits on
//! them, and the lock-free metrics. The scheduling itself (slots, lanes, ready lists, the ring)
//! is `state/`: each operation here takes the lock, runs one of its transitions, and turns
//! what the transition reports into wake-ups (`signal`, after unlocking) and published counters.
//! See the crate documentation for the locking design and the invariants.
//!
//! By role: the spin policy (`spin.rs`), who waits for work and whom to wake (`wakeups.rs`),
//! the waits of drains, closes and submitters at a cap (`waits.rs`), the lock-free metrics
//! (`publish.rs`); the scheduler's operations here.

mod publish;
mod spin;
mod waits;
mod wakeups;

use publish::bump;
use spin::Spin;
use waits::NO_DEADLINE;
pub use wakeups::take_owed_wakes;
use wakeups::{Waiters, Wake};

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use crate::config::{SchedulerConfig, TaskOptions};
use crate::error::{Error, TaskFailure, TaskId};
use crate::histogram::AtomicHistogram;
use crate::metrics::{pack_id, TaskCounters, TotalCounters};
use crate::partition::PartitionProgress;
pub use crate::state::{Capacity, Submission, TaskHandle};
use crate::state::{Limits, Outcome, Readied, State};
use crate::sync::{AtomicBool, Condvar, Mutex, MutexGuard};

/// How [`Scheduler::close`] treats records that have not started yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseMode {
    /// Run every submitted record to its end, then close.
    Drain,
    /// Discard queued records (their slots are returned); wait only for running ones.
    DropQueued,
}

/// What [`Scheduler::poll_or_idle`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Polled {
    /// Records taken (their slots appended to the caller's buffer); 0: the caller is idle now.
    pub taken: usize,
    /// When idle: how soon the earliest record in backoff becomes ready, if one is in backoff.
    pub due_in: Option<Duration>,
}

/// What the lock guards.
struct Locked {
    st: State,
    w: Waiters,
}

/// Per-key FIFO scheduler of records. See the crate documentation.
pub struct Scheduler {
    config: SchedulerConfig,
    limits: Limits,
    inner: Mutex<Locked>,
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

impl Scheduler {
    pub fn new(config: SchedulerConfig) -> Result<Self, Error> {
        config.validate()?;
        Ok(Scheduler {
            counters: (0..config.max_tasks)
                .map(|_| TaskCounters::default())
                .collect(),
            limits: Limits {
                max_inflight: config.max_inflight,
                max_partitions: config.max_partitions_per_task,
                timing_every: 1u64 << config.timing_sample_shift,
            },
            inner: Mutex::new(Locked {
                st: State::new(config.max_inflight),
                w: Waiters::default(),
            }),
            config,
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

    fn lock(&self) -> MutexGuard<'_, Locked> {
        Spin::lock(&self.inner)
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    // ------------------------------------------------------------------ the task table

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
        let mut g = self.lock();
        let h =
            g.st.register(id, options.null_keys, cap, self.config.max_tasks)?;
        let c = &self.counters[h.index as usize];
        c.id.store(pack_id(id), Relaxed);
        c.cap.store(cap, Relaxed);
        c.generation.store(h.generation, Relaxed);
        if let Some(t) = g.st.tasks[h.index as usize].as_ref() {
            self.publish(h.index, t);
            Self::publish_wait(c, t);
            Self::publish_run(c, t);
        }
        c.live.store(true, Relaxed);
        Ok(h)
    }

    pub fn find_task(&self, id: TaskId) -> Option<TaskHandle> {
        self.lock().st.handle_of(id)
    }

    /// Removes a closed task that has nothing queued or running. Its handle becomes invalid.
    pub fn remove_task(&self, h: TaskHandle) -> Result<(), Error> {
        let generation = self.lock().st.remove(h)?;
        let c = &self.counters[h.index as usize];
        c.live.store(false, Relaxed);
        c.generation.store(generation, Relaxed);
        Ok(())
    }

    // ------------------------------------------------------------------ submit

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
        let s = Submission {
            partition,
            offset,
            key,
            slot,
        };
        let mut g = self.lock();
        let mut wake = Wake::default();
        let r = self.submit_locked(&mut g, h, s, &mut wake);
        drop(g);
        self.signal(wake);
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
        let mut g = self.lock();
        let mut wake = Wake::default();
        let mut last = Ok(Capacity::Available);
        let mut n = 0;
        for &r in records {
            last = self.submit_locked(&mut g, h, r, &mut wake);
            if last.is_err() {
                break;
            }
            n += 1;
        }
        drop(g);
        self.signal(wake);
        (n, last)
    }

    fn submit_locked(
        &self,
        g: &mut Locked,
        h: TaskHandle,
        s: Submission,
        wake: &mut Wake,
    ) -> Result<Capacity, Error> {
        let done = g.st.submit(h, s, self.limits, || self.now_ns())?;
        bump(&self.totals.submitted, 1);
        if let Some(m) = done.depth {
            self.move_depth(m);
        }
        if let Some(r) = done.readied {
            wake.work |= self.wake_for_ready(g, r);
        }
        self.publish_task(&g.st, h.index);
        self.publish_totals(&g.st);
        Ok(done.capacity)
    }

    // ------------------------------------------------------------------ poll and complete

    /// Moves up to `max` ready records to running, one per task per turn of the ring, and
    /// appends their slots to `out`.
    fn take_ready(&self, g: &mut Locked, out: &mut Vec<u32>, max: usize) -> usize {
        let mut n = 0;
        let mut now = 0;
        if g.st.next_due().is_some() {
            now = self.now_ns();
            // This poller takes the records it readies; the wake-up chain covers the rest.
            let counters = &self.counters;
            let _ =
                g.st.release_due(now, |ti, n| counters[ti as usize].backoff.store(n, Relaxed));
            self.ready_hint.store(g.st.has_ready(), Relaxed);
        }
        while n < max {
            let Some(d) = g.st.dispatch() else {
                break;
            };
            let st = &mut g.st;
            let (Some(t), e) = (
                st.tasks[d.task as usize].as_mut(),
                &mut st.slots[d.slot as usize],
            ) else {
                unreachable!("a dispatched record's task is registered");
            };
            let c = &self.counters[d.task as usize];
            if e.timed {
                if now == 0 {
                    now = self.now_ns();
                }
                e.dispatched_ns = now;
                let waited = now.saturating_sub(e.submitted_ns);
                self.wait_ns.record_exclusive(waited);
                t.wait.add(waited);
                Self::publish_wait(c, t);
            }
            c.queued.store(t.queued, Relaxed);
            c.running.store(t.running, Relaxed);
            out.push(d.slot);
            n += 1;
        }
        if n > 0 {
            self.publish_totals(&g.st);
        }
        let ready = g.st.has_ready();
        self.ready_hint.store(ready, Relaxed);
        if !ready {
            g.w.wake_deferred = false;
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
        let mut g = self.lock();
        let mut wake = match self.finish_all(&mut g, done) {
            Ok(w) => w,
            Err((w, e)) => {
                drop(g);
                self.signal(w);
                return Err(e);
            }
        };
        if max == 0 {
            wake.work |= Self::wake_leftover(&mut g);
            drop(g);
            self.signal(wake);
            return Ok(0);
        }
        // This poller takes work itself: it wakes another one only for work it leaves behind.
        wake.work = false;
        let mut deadline = None;
        let mut spun = false;
        loop {
            if g.st.shutdown {
                drop(g);
                self.signal(wake);
                return Err(Error::Shutdown);
            }
            let n = self.take_ready(&mut g, out, max);
            if n > 0 {
                // Chain the wake-up: more ready work than this poller took, more than the
                // running records' workers will take soon.
                wake.work = self.chain_wake(&mut g);
                drop(g);
                self.signal(wake);
                return Ok(n);
            }
            if wake.drains {
                self.drain_cv.notify_all();
                wake.drains = false;
            }
            let now = Instant::now();
            let deadline = *deadline.get_or_insert_with(|| now.checked_add(timeout));
            let mut left = match deadline {
                Some(d) if d <= now => return Ok(0),
                Some(d) => d - now,
                None => NO_DEADLINE,
            };
            if let Some(due) = g.st.next_due() {
                // A record in backoff becomes ready then: be awake to take it.
                left = left.min(Duration::from_nanos(due.saturating_sub(self.now_ns())));
            }
            if !spun && !g.w.spinning {
                // Spin briefly before sleeping: work that arrives within the spin costs no
                // futex wake-up and no context switch, for the submitter or for us.
                spun = true;
                g.w.spinning = true;
                drop(g);
                Spin::for_work(&self.ready_hint, left.min(Spin::FOR_WORK));
                g = self.lock();
                g.w.spinning = false;
                continue;
            }
            g.w.idle_pollers += 1;
            g = match self.work_cv.wait_timeout(g, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
            g.w.idle_pollers -= 1;
        }
    }

    /// The worker's call with external waits ([`SchedulerConfig::external_waits`]): completes
    /// `done` (as [`complete_and_poll`](Self::complete_and_poll)) and takes up to `max` ready
    /// records without waiting. `was_idle`: the caller counted itself idle in its previous call
    /// and has woken since (by a wake-up or its own timeout). When nothing is ready the caller
    /// is counted idle (`idle_pollers`) until its next call, and the answer says when the
    /// earliest record in backoff becomes due: the caller parks until woken or until then.
    pub fn poll_or_idle(
        &self,
        done: &[u32],
        was_idle: bool,
        out: &mut Vec<u32>,
        max: usize,
    ) -> Result<Polled, Error> {
        debug_assert!(
            self.config.external_waits,
            "poll_or_idle needs external waits"
        );
        debug_assert!(max > 0, "a poller takes at least one record");
        let mut g = self.lock();
        if was_idle {
            debug_assert!(g.w.idle_pollers > 0, "an idle poller was counted");
            g.w.idle_pollers = g.w.idle_pollers.saturating_sub(1);
        }
        let mut wake = match self.finish_all(&mut g, done) {
            Ok(w) => w,
            Err((w, e)) => {
                drop(g);
                self.signal(w);
                return Err(e);
            }
        };
        // This poller takes work itself: it wakes another one only for work it leaves behind.
        wake.work = false;
        if g.st.shutdown {
            drop(g);
            self.signal(wake);
            return Err(Error::Shutdown);
        }
        let n = self.take_ready(&mut g, out, max);
        let mut due_in = None;
        if n > 0 {
            wake.work = self.chain_wake(&mut g);
        } else {
            g.w.idle_pollers += 1;
            if let Some(due) = g.st.next_due() {
                due_in = Some(Duration::from_nanos(due.saturating_sub(self.now_ns())));
            }
        }
        drop(g);
        self.signal(wake);
        Ok(Polled { taken: n, due_in })
    }

    /// Marks a running record as successfully finished; the next record of its key (if any)
    /// becomes ready.
    pub fn complete(&self, slot: u32) -> Result<(), Error> {
        self.end(slot, Outcome::Completed)
    }

    /// Marks a running record as failed. The task fails: it keeps where it first failed for its
    /// owner (see [`failure`](Self::failure)), accepts no more records and dispatches none of
    /// its queued ones; the failed offset holds the partition's watermark. No retry. What the
    /// record threw stays with the caller (the JVM keeps the exception), never copied here.
    pub fn fail(&self, slot: u32) -> Result<(), Error> {
        self.end(slot, Outcome::Failed)
    }

    /// Sends a running record back to wait `delay` before it runs again (a retry): its key's
    /// later records keep waiting behind it, its offset holds the partition's watermark, and
    /// the worker that ran it is free at once. Once due, a poller dispatches it like any ready
    /// record (to any worker). A drain waits for it as for any unfinished record; a close that
    /// drops queued records drops it.
    pub fn retry(&self, slot: u32, delay: Duration) -> Result<(), Error> {
        let mut g = self.lock();
        let now = self.now_ns();
        let due = now.saturating_add(u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX));
        let r = g.st.retry(slot, due, self.config.max_inflight)?;
        let ti = r.task;
        if let (Some(dispatched), Some(t)) = (r.dispatched_ns, g.st.tasks[ti as usize].as_mut()) {
            let ran = now.saturating_sub(dispatched);
            self.run_ns.record_exclusive(ran);
            t.run.add(ran);
            Self::publish_run(&self.counters[ti as usize], t);
        }
        let mut wake = Wake {
            // A failed task's drain ends once none of its records runs.
            drains: g.w.drain_waiters > 0 && r.task_idle,
            ..Wake::default()
        };
        if delay.is_zero() {
            wake.work = self.release_due(&mut g, now);
        } else if r.earliest && g.w.idle_pollers > 0 {
            // A sleeping poller waits for the earliest due time: it is earlier now.
            wake.work = true;
        }
        wake.work |= Self::wake_leftover(&mut g);
        self.publish_task(&g.st, ti);
        self.publish_totals(&g.st);
        drop(g);
        self.signal(wake);
        Ok(())
    }

    /// Makes the records in backoff that are due at `now` ready; whether to wake a poller.
    fn release_due(&self, g: &mut Locked, now: u64) -> bool {
        let counters = &self.counters;
        let (n, entered) =
            g.st.release_due(now, |ti, b| counters[ti as usize].backoff.store(b, Relaxed));
        if n == 0 {
            return false;
        }
        let r = if entered {
            Readied::EnteredRing
        } else {
            Readied::AlreadyInRing
        };
        self.wake_for_ready(g, r)
    }

    /// `complete` or `fail`, whose caller does not poll next.
    fn end(&self, slot: u32, outcome: Outcome) -> Result<(), Error> {
        let mut g = self.lock();
        let mut wake = self.finish(&mut g, slot, outcome)?;
        wake.work |= Self::wake_leftover(&mut g);
        drop(g);
        self.signal(wake);
        Ok(())
    }

    /// Completes `done` in order; at the first error, stops and returns it with the wake-ups
    /// the completions before it decided.
    fn finish_all(&self, g: &mut Locked, done: &[u32]) -> Result<Wake, (Wake, Error)> {
        let mut wake = Wake::default();
        for &slot in done {
            match self.finish(g, slot, Outcome::Completed) {
                Ok(w) => wake.add(w),
                Err(e) => return Err((wake, e)),
            }
        }
        Ok(wake)
    }

    /// After a poller took work: whether to wake another for the ready work it left behind,
    /// more than the running records' workers will take soon.
    fn chain_wake(&self, g: &mut Locked) -> bool {
        if !Self::sleeper_for_ready(g) {
            return false;
        }
        let defer = self.defer_wake(&g.st);
        g.w.wake_deferred = defer;
        !defer
    }

    /// Ends a running record; returns whom to wake once the lock is released.
    fn finish(&self, g: &mut Locked, slot: u32, outcome: Outcome) -> Result<Wake, Error> {
        let done = g.st.finish(slot, outcome, self.config.max_inflight)?;
        let ti = done.task;
        if let (Some(dispatched), Some(t)) = (done.dispatched_ns, g.st.tasks[ti as usize].as_mut())
        {
            let ran = self.now_ns().saturating_sub(dispatched);
            self.run_ns.record_exclusive(ran);
            t.run.add(ran);
            Self::publish_run(&self.counters[ti as usize], t);
        }
        match outcome {
            Outcome::Completed => bump(&self.totals.finished, 1),
            Outcome::Failed => bump(&self.totals.failures, 1),
        }
        if let Some(m) = done.depth {
            self.move_depth(m);
        }
        let drains = g.w.drain_waiters > 0 && done.task_idle;
        let room = g.w.room_waiters > 0 && self.room_freed(g, ti);
        let work = match done.readied {
            Some(r) => self.wake_for_ready(g, r),
            None => false,
        };
        self.publish_task(&g.st, ti);
        self.publish_totals(&g.st);
        Ok(Wake { work, drains, room })
    }

    // ------------------------------------------------------------------ reading a task

    /// The first failure of a task, if it failed.
    pub fn failure(&self, h: TaskHandle) -> Result<Option<TaskFailure>, Error> {
        Ok(self.lock().st.task(h)?.failure.as_deref().cloned())
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
        let mut g = self.lock();
        let t = g.st.task(h)?;
        Ok(t.partitions
            .get(partition as usize)
            .map(|p| p.progress)
            .unwrap_or_default())
    }

    /// Progress of every partition the task has received records for.
    pub fn partitions(&self, h: TaskHandle) -> Result<Vec<(u32, PartitionProgress)>, Error> {
        let mut g = self.lock();
        let t = g.st.task(h)?;
        Ok(t.partitions
            .iter()
            .enumerate()
            .filter(|(_, p)| p.progress.submitted > 0)
            .map(|(i, p)| (i as u32, p.progress))
            .collect())
    }

    // ------------------------------------------------------------------ shutdown, metrics

    /// Stops the scheduler: every blocked and later `poll`, `drain` and `close` returns
    /// [`Error::Shutdown`], and nothing more is accepted. Records still held stay where they are.
    pub fn shutdown(&self) {
        self.lock().st.shutdown = true;
        self.work_cv.notify_all();
        self.drain_cv.notify_all();
        self.room_cv.notify_all();
    }

    pub fn is_shutdown(&self) -> bool {
        self.lock().st.shutdown
    }

    /// Checks every invariant of the crate documentation over the whole state, and that the
    /// published counters agree with it: O(slots + keys), for tests (the model and stress tests
    /// call it after every step). Returns the first one broken. Only in debug builds.
    #[cfg(any(test, debug_assertions))]
    pub fn check_invariants(&self) -> Result<(), String> {
        let g = self.lock();
        g.st.check_invariants(self.config.max_inflight)?;
        for (i, t) in g.st.tasks.iter().enumerate() {
            let Some(t) = t else { continue };
            let c = &self.counters[i];
            let published = (
                c.queued.load(Relaxed),
                c.running.load(Relaxed),
                c.submitted.load(Relaxed),
                c.finished.load(Relaxed),
                c.failures.load(Relaxed),
                c.dropped.load(Relaxed),
            );
            let actual = (
                t.queued,
                t.running,
                t.submitted,
                t.finished,
                t.failures,
                t.dropped,
            );
            if published != actual || !c.live.load(Relaxed) {
                return Err(format!(
                    "task {}: published counters {published:?}, state {actual:?}",
                    t.id
                ));
            }
        }
        let totals = (
            self.totals.queued.load(Relaxed),
            self.totals.running.load(Relaxed),
        );
        if totals != (g.st.unfinished - g.st.running, g.st.running) {
            return Err(format!(
                "published totals (queued, running) {totals:?}, state {} unfinished, {} running",
                g.st.unfinished, g.st.running
            ));
        }
        Ok(())
    }
}
