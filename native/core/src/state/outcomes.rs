//! What a transition reports to the shell: how a record ended, which record became ready, how a
//! key's depth moved. The shell (`scheduler/`) decides whom to wake and what to publish from it.

use super::Capacity;

/// How a running record ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Completed,
    Failed,
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
