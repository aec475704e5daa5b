//! Errors. Every misuse is reported as a value; nothing in this crate panics on caller input.

use std::fmt;

/// A Kafka Streams task id: sub-topology and partition numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId {
    pub subtopology: u32,
    pub partition: u32,
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", self.subtopology, self.partition)
    }
}

/// Where a task first failed: the record's position. What it threw is the caller's to keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskFailure {
    pub task: TaskId,
    pub partition: u32,
    pub offset: i64,
    pub slot: u32,
}

impl fmt::Display for TaskFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "task {} failed at partition {} offset {} (slot {})",
            self.task, self.partition, self.offset, self.slot
        )
    }
}

/// What is left in one task when a drain or close times out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remaining {
    pub task: TaskId,
    pub queued: u32,
    pub running: u32,
    /// Of the queued ones, those waiting to be retried (after a backoff).
    pub backoff: u32,
    /// Keys with unfinished records (a key behind a stuck record counts once).
    pub keys: u32,
    /// `(partition, lowest unfinished offset)` for each partition with unfinished records.
    pub partitions: Vec<(u32, i64)>,
}

impl fmt::Display for Remaining {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "task {}: {} queued, {} running, on {} key{}",
            self.task,
            self.queued,
            self.running,
            self.keys,
            if self.keys == 1 { "" } else { "s" }
        )?;
        if self.backoff > 0 {
            write!(f, "; {} waiting to be retried", self.backoff)?;
        }
        for (p, o) in &self.partitions {
            write!(f, "; partition {p} from offset {o}")?;
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    InvalidConfig {
        name: &'static str,
        reason: String,
    },
    /// The handle names no registered task (never registered, or removed since).
    UnknownTask,
    TaskExists(TaskId),
    TooManyTasks {
        max: u32,
    },
    TaskClosed(TaskId),
    TaskFailed(Box<TaskFailure>),
    /// The task already has its cap of unfinished records.
    TaskAtCapacity {
        task: TaskId,
        cap: u32,
    },
    /// All tasks together already have the global cap of unfinished records.
    GlobalAtCapacity {
        cap: u32,
    },
    SlotOutOfRange {
        slot: u32,
        slots: u32,
    },
    SlotInUse(u32),
    /// `complete`/`fail` on a slot that is not running.
    SlotNotRunning(u32),
    PartitionOutOfRange {
        partition: u32,
        max: u32,
    },
    /// Offsets of one partition of a task must be submitted in increasing order.
    OffsetNotIncreasing {
        task: TaskId,
        partition: u32,
        last: i64,
        offset: i64,
    },
    /// The task still has unfinished records, or is not closed.
    TaskBusy {
        task: TaskId,
        queued: u32,
        running: u32,
    },
    DrainTimeout {
        waited_ms: u64,
        remaining: Vec<Remaining>,
    },
    Shutdown,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidConfig { name, reason } => write!(f, "invalid {name}: {reason}"),
            Error::UnknownTask => write!(f, "unknown task handle (never registered or removed)"),
            Error::TaskExists(t) => write!(f, "task {t} is already registered"),
            Error::TooManyTasks { max } => write!(f, "cannot register more than {max} tasks"),
            Error::TaskClosed(t) => write!(f, "task {t} is closed and accepts no records"),
            Error::TaskFailed(failure) => write!(f, "{failure}"),
            Error::TaskAtCapacity { task, cap } => {
                write!(f, "task {task} is at its cap of {cap} unfinished records")
            }
            Error::GlobalAtCapacity { cap } => {
                write!(f, "the scheduler is at its cap of {cap} unfinished records")
            }
            Error::SlotOutOfRange { slot, slots } => {
                write!(f, "slot {slot} is out of range (slots are 0..{slots})")
            }
            Error::SlotInUse(s) => write!(f, "slot {s} is already in use"),
            Error::SlotNotRunning(s) => write!(f, "slot {s} is not running"),
            Error::PartitionOutOfRange { partition, max } => {
                write!(
                    f,
                    "partition {partition} is out of range (partitions are 0..{max})"
                )
            }
            Error::OffsetNotIncreasing {
                task,
                partition,
                last,
                offset,
            } => write!(
                f,
                "task {task} partition {partition}: offset {offset} submitted after offset {last}"
            ),
            Error::TaskBusy {
                task,
                queued,
                running,
            } => write!(
                f,
                "task {task} is busy ({queued} queued, {running} running) or not closed"
            ),
            Error::DrainTimeout {
                waited_ms,
                remaining,
            } => {
                let n: u64 = remaining
                    .iter()
                    .map(|r| r.queued as u64 + r.running as u64)
                    .sum();
                write!(
                    f,
                    "drain timed out after {waited_ms} ms with {n} records unfinished"
                )?;
                for r in remaining {
                    write!(f, " [{r}]")?;
                }
                Ok(())
            }
            Error::Shutdown => write!(f, "the scheduler is shut down"),
        }
    }
}

impl std::error::Error for Error {}
