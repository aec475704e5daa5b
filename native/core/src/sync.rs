//! The synchronisation primitives of the scheduler's wake-up and hand-off path, swapped for
//! loom's model-checked versions when built with `--cfg loom` (see `tests/loom.rs`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicBool;
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread::yield_now;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::AtomicBool;
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;

/// Attempts to take the lock by spinning before blocking on it (none under loom, where each
/// attempt would multiply the interleavings to explore without exercising anything new). Few:
/// with many workers on two cores the holder is often not running, and spinning then only
/// delays the futex sleep.
#[cfg(not(loom))]
pub(crate) const LOCK_SPINS: u32 = 6;
#[cfg(loom)]
pub(crate) const LOCK_SPINS: u32 = 0;

/// How many times an out-of-work poller looks at the ready hint before it sleeps (bounded by
/// time as well, see `SPIN`); once under loom.
#[cfg(not(loom))]
pub(crate) const SPIN_LOOKS: u32 = u32::MAX;
#[cfg(loom)]
pub(crate) const SPIN_LOOKS: u32 = 1;
