//! Who waits for work, and whom to wake: the wake-up policy (lib.rs, "Locking design").

use std::cell::Cell;
use std::sync::atomic::Ordering::Relaxed;

use super::{Locked, Scheduler};
use crate::state::{Readied, State};

/// Who waits, kept under the lock beside the state: the wake-up policy's inputs.
#[derive(Default)]
pub(super) struct Waiters {
    pub(super) idle_pollers: u32,
    /// A poller is spinning outside the lock, watching `ready_hint` (at most one at a time).
    pub(super) spinning: bool,
    /// Ready work is in the ring that no sleeping poller was woken for, because running
    /// records' workers were to take it (`defer_wake`). While set, every record made ready
    /// checks again whether to wake one; cleared by a wake-up and when the ring empties.
    pub(super) wake_deferred: bool,
    pub(super) drain_waiters: u32,
    /// Submitters blocked in `wait_for_room`.
    pub(super) room_waiters: u32,
    /// Free global places a room waiter needs (0: none waits for the global cap).
    pub(super) room_global_want: u32,
}

/// Condition variables to signal once the lock is released.
#[derive(Clone, Copy, Default)]
#[must_use]
pub(super) struct Wake {
    pub(super) work: bool,
    pub(super) drains: bool,
    pub(super) room: bool,
}

impl Wake {
    pub(super) fn add(&mut self, other: Wake) {
        self.work |= other.work;
        self.drains |= other.drains;
        self.room |= other.room;
    }
}

impl Scheduler {
    /// A record became ready: whether to wake a sleeping poller for it (the caller signals after
    /// unlocking, so the woken thread does not run into the lock still held).
    pub(super) fn wake_for_ready(&self, g: &mut Locked, r: Readied) -> bool {
        match r {
            Readied::Held => return false,
            Readied::EnteredRing => self.ready_hint.store(true, Relaxed),
            // Whoever put the task into the ring woke a poller for it (or one was spinning, or
            // none was idle); wake-ups chain from there.
            Readied::AlreadyInRing if !g.w.wake_deferred => return false,
            Readied::AlreadyInRing => {}
        }
        // A spinning poller will see the hint; otherwise wake a sleeping one, unless a running
        // record's worker will take it soon.
        if g.w.idle_pollers == 0 || g.w.spinning {
            return false;
        }
        let defer = self.defer_wake(&g.st);
        g.w.wake_deferred = defer;
        !defer
    }

    /// Whether ready work may wait for a running record's worker instead of waking a sleeping
    /// poller: `queued × wake_defer_ratio ≤ running` (`queued` counts every record not running,
    /// ready or behind its key, so it never under-counts the ready ones). Safe for progress:
    /// it needs `running > 0`, and every worker polls again after it completes
    /// (`complete_and_poll`); `complete` and `fail` alone wake without deferral
    /// ([`Self::wake_leftover`]).
    pub(super) fn defer_wake(&self, st: &State) -> bool {
        let ratio = self.config.wake_defer_ratio;
        let queued = st.unfinished.saturating_sub(st.running);
        ratio > 0 && st.running > 0 && (queued as u64) * (ratio as u64) <= st.running as u64
    }

    /// Whether there is ready work, a sleeping poller for it, and no spinning one that will see it.
    pub(super) fn sleeper_for_ready(g: &Locked) -> bool {
        g.st.has_ready() && g.w.idle_pollers > 0 && !g.w.spinning
    }

    /// After `complete` or `fail` (whose caller does not poll next): a sleeping poller for any
    /// ready work, deferred or not, so no ready record waits on a worker that will not come.
    pub(super) fn wake_leftover(g: &mut Locked) -> bool {
        let wake = Self::sleeper_for_ready(g);
        g.w.wake_deferred &= !wake;
        wake
    }

    /// Signals after the lock is released. With external waits the work wake-up is owed to this
    /// operation's caller instead ([`take_owed_wakes`]).
    pub(super) fn signal(&self, wake: Wake) {
        if wake.work {
            if self.config.external_waits {
                OWED.with(|o| o.set(o.get().saturating_add(1)));
            } else {
                self.work_cv.notify_one();
            }
        }
        if wake.drains {
            self.drain_cv.notify_all();
        }
        if wake.room {
            self.room_cv.notify_all();
        }
    }
}

#[cfg(not(loom))]
thread_local! {
    /// Wake-ups this thread's scheduler operations decided and its caller has not yet taken
    /// ([`take_owed_wakes`]); only with `SchedulerConfig::external_waits`.
    static OWED: Cell<u32> = const { Cell::new(0) };
}

// Under loom every modelled thread runs on one OS thread: the count must be loom's per-thread.
#[cfg(loom)]
loom::thread_local! {
    static OWED: Cell<u32> = Cell::new(0);
}

/// With [`SchedulerConfig::external_waits`](crate::SchedulerConfig::external_waits): how many
/// idle pollers the operations this thread just ran decided to wake (each counted itself idle in
/// [`Scheduler::poll_or_idle`] and waits outside the scheduler), and resets the count. The caller
/// wakes that many of its parked pollers (any of them: a wake-up is not addressed). Take it after
/// every operation, on the thread that ran it.
pub fn take_owed_wakes() -> u32 {
    OWED.with(|o| o.replace(0))
}
