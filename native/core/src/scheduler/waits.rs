//! The waits of callers other than pollers: a drain or close until a task is empty or idle, and
//! a submitter at a cap until there is room.

use std::time::{Duration, Instant};

use super::publish::bump;
use super::{CloseMode, Locked, Scheduler};
use crate::error::Error;
use crate::state::{State, Task, TaskHandle};
use crate::sync::MutexGuard;

/// How long a wait without a deadline sleeps at a time: every wake-up re-checks its condition,
/// so any bound is correct; an hour keeps `Instant + Duration` far from overflow.
pub(super) const NO_DEADLINE: Duration = Duration::from_secs(3600);

/// Wait condition of a drain or close.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Until {
    /// Nothing queued or running (a failed task: nothing running; it then reports its failure).
    Empty,
    /// Nothing running.
    Idle,
}

impl Scheduler {
    /// Waits until every record submitted to `tasks` has completed, or `timeout` passes.
    ///
    /// A failed task dispatches nothing more, so for it the drain ends when none of its
    /// records is running, with [`Error::TaskFailed`]. On timeout the error lists what remains
    /// in each task and from which offset. Submitting to a task while draining it is allowed;
    /// the drain then also waits for those records.
    pub fn drain(&self, tasks: &[TaskHandle], timeout: Duration) -> Result<(), Error> {
        let g = self.lock();
        self.wait(g, tasks, Until::Empty, timeout)
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
        let mut g = self.lock();
        g.st.task(h)?.closed = true;
        let until = match mode {
            CloseMode::Drain => Until::Empty,
            CloseMode::DropQueued => {
                let before = dropped.len();
                for m in g.st.drop_queued(h.index, dropped) {
                    self.move_depth(m);
                }
                bump(&self.totals.dropped, (dropped.len() - before) as u64);
                Until::Idle
            }
        };
        self.publish_task(&g.st, h.index);
        self.publish_totals(&g.st);
        self.wait(g, &[h], until, timeout)
    }

    pub(super) fn wait(
        &self,
        mut g: MutexGuard<'_, Locked>,
        tasks: &[TaskHandle],
        until: Until,
        timeout: Duration,
    ) -> Result<(), Error> {
        let start = Instant::now();
        let deadline = start.checked_add(timeout);
        loop {
            if g.st.shutdown {
                return Err(Error::Shutdown);
            }
            let mut pending = false;
            for &h in tasks {
                let t = g.st.task(h)?;
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
                        let t = g.st.task(h)?;
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
                None => NO_DEADLINE,
            };
            g.w.drain_waiters += 1;
            g = match self.drain_cv.wait_timeout(g, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
            g.w.drain_waiters -= 1;
        }
    }

    // ------------------------------------------------------------------ room below a cap

    /// How many free places a submitter waiting at a cap wants before it goes on: a quarter of
    /// the smaller cap, at least one, so that one wake-up pays for a run of submits.
    pub(super) fn room_wanted(&self, cap: u32) -> u32 {
        (cap.min(self.config.max_inflight) / 4).max(1)
    }

    /// Free places for task `t`, under both caps.
    pub(super) fn room_of(&self, st: &State, t: &Task) -> u32 {
        t.cap
            .saturating_sub(t.unfinished())
            .min(self.config.max_inflight.saturating_sub(st.unfinished))
    }

    /// After a record of task `ti` ended, with a room waiter: whether to wake it. One-shot per
    /// watched task and for the global want, so a wait costs one wake-up, not one per record.
    pub(super) fn room_freed(&self, g: &mut Locked, ti: u32) -> bool {
        let free_global = self.config.max_inflight.saturating_sub(g.st.unfinished);
        let mut wake = false;
        if g.w.room_global_want > 0 && free_global >= g.w.room_global_want {
            g.w.room_global_want = 0;
            wake = true;
        }
        let room = match g.st.tasks[ti as usize].as_ref() {
            Some(t) if t.room_want > 0 => {
                t.failure.is_some() || self.room_of(&g.st, t) >= t.room_want
            }
            _ => false,
        };
        if room {
            if let Some(t) = g.st.tasks[ti as usize].as_mut() {
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
        let mut g = self.lock();
        let deadline = Instant::now().checked_add(timeout);
        let mut waiting = false;
        let result = loop {
            if g.st.shutdown {
                break Err(Error::Shutdown);
            }
            let mut ready = false;
            let mut global_want = 0u32;
            for &h in tasks {
                let Some(t) = g.st.task_ref(h) else {
                    ready = true;
                    break;
                };
                let want = self.room_wanted(t.cap);
                if t.closed || t.failure.is_some() || self.room_of(&g.st, t) >= want {
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
                None => NO_DEADLINE,
            };
            for &h in tasks {
                if let Ok(t) = g.st.task(h) {
                    t.room_want = self.room_wanted(t.cap);
                }
            }
            let w = &mut g.w;
            if global_want > 0 && (w.room_global_want == 0 || global_want < w.room_global_want) {
                w.room_global_want = global_want;
            }
            if !waiting {
                w.room_waiters += 1;
                waiting = true;
            }
            g = match self.room_cv.wait_timeout(g, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        };
        if waiting {
            g.w.room_waiters -= 1;
            for &h in tasks {
                if let Ok(t) = g.st.task(h) {
                    t.room_want = 0;
                }
            }
            if g.w.room_waiters == 0 {
                g.w.room_global_want = 0;
            }
        }
        result
    }
}
