//! How threads spin before they sleep: on the scheduler's lock, and for work.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::TryLockError;
use std::time::{Duration, Instant};

use super::Locked;
use crate::sync::{yield_now, AtomicBool, Mutex, MutexGuard, LOCK_SPINS, SPIN_LOOKS};

/// How threads spin before they sleep: on the lock, and for work.
pub(super) struct Spin;

impl Spin {
    /// How long an out-of-work poller spins before it sleeps.
    pub(super) const FOR_WORK: Duration = Duration::from_micros(10);

    /// Takes the lock, spinning a little first. Critical sections are short (a poller's batch is
    /// a few microseconds): spinning for about that long is far cheaper than sleeping in the
    /// kernel and being woken. No code under the lock calls out or panics on caller input, so a
    /// poisoned lock can only follow a bug inside this crate; the state is still the last
    /// consistent one written.
    pub(super) fn lock(m: &Mutex<Locked>) -> MutexGuard<'_, Locked> {
        for i in 0..LOCK_SPINS {
            match m.try_lock() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    for _ in 0..(1 << i.min(6)) {
                        std::hint::spin_loop();
                    }
                }
            }
        }
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Watches `hint` for up to `budget`, yielding the CPU between looks.
    pub(super) fn for_work(hint: &AtomicBool, budget: Duration) {
        let start = Instant::now();
        for i in 0..SPIN_LOOKS {
            if hint.load(Relaxed) {
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
}
