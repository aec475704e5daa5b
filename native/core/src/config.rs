//! Scheduler and task settings, checked once when they are given.

use crate::error::Error;

/// Settings of one [`Scheduler`](crate::Scheduler).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// Cap on submitted-but-unfinished records over all tasks. It is also the size of the slot
    /// table: slots are numbers in `0..max_inflight`.
    pub max_inflight: u32,
    /// Default cap on submitted-but-unfinished records of one task (a task may override it).
    pub max_inflight_per_task: u32,
    /// How many tasks may be registered at once.
    pub max_tasks: u32,
    /// Partition numbers a task may use are `0..max_partitions_per_task`.
    pub max_partitions_per_task: u32,
    /// Record wait and run times of every `2^timing_sample_shift`-th record (0 = every record).
    /// Reading the clock costs about 30 ns and a timed record reads it three times, so the
    /// default times one record in 8: the distributions stay representative at a fraction of
    /// the cost.
    pub timing_sample_shift: u8,
    /// A record that becomes ready wakes no sleeping poller while `queued × wake_defer_ratio ≤
    /// running` (`queued`: unfinished records not running, ready or behind their key): one of
    /// the running records' workers takes it when it finishes, after on average
    /// `1 / wake_defer_ratio` of a record's run time. That saves a futex wake-up and a context switch per record when
    /// workers are many and the submitter is the bottleneck. 0 = always wake (no deferral).
    pub wake_defer_ratio: u32,
    /// Pollers wait outside the scheduler ([`Scheduler::poll_or_idle`]): a caller whose threads
    /// must not block inside it (virtual threads pin their carrier while in native code) parks
    /// them itself. A wake-up is then owed to the caller of the operation that decided it
    /// ([`take_owed_wakes`](crate::take_owed_wakes)) instead of signalled on a condition variable.
    pub external_waits: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            max_inflight: 10_000,
            max_inflight_per_task: 1_000,
            max_tasks: 4_096,
            max_partitions_per_task: 1_024,
            timing_sample_shift: 3,
            wake_defer_ratio: 16,
            external_waits: false,
        }
    }
}

/// Upper bound for `max_inflight`: slots are `u32` and the slot table is allocated up front.
pub const MAX_SLOTS: u32 = 1 << 24;
/// Upper bound for `max_tasks`.
pub const MAX_TASKS: u32 = 1 << 20;
/// Upper bound for `max_partitions_per_task`.
pub const MAX_PARTITIONS: u32 = 1 << 16;

impl SchedulerConfig {
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |name: &'static str, reason: String| Err(Error::InvalidConfig { name, reason });
        if self.max_inflight == 0 || self.max_inflight > MAX_SLOTS {
            return bad(
                "max_inflight",
                format!("must be within 1..={MAX_SLOTS}, got {}", self.max_inflight),
            );
        }
        if self.max_inflight_per_task == 0 {
            return bad("max_inflight_per_task", "must be at least 1, got 0".into());
        }
        if self.max_tasks == 0 || self.max_tasks > MAX_TASKS {
            return bad(
                "max_tasks",
                format!("must be within 1..={MAX_TASKS}, got {}", self.max_tasks),
            );
        }
        if self.max_partitions_per_task == 0 || self.max_partitions_per_task > MAX_PARTITIONS {
            return bad(
                "max_partitions_per_task",
                format!(
                    "must be within 1..={MAX_PARTITIONS}, got {}",
                    self.max_partitions_per_task
                ),
            );
        }
        if self.timing_sample_shift > 16 {
            return bad(
                "timing_sample_shift",
                format!("must be within 0..=16, got {}", self.timing_sample_shift),
            );
        }
        Ok(())
    }
}

/// How records without a key are ordered within a task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NullKeyOrdering {
    /// All null-key records of a task share one serial lane (like one key).
    #[default]
    Serial,
    /// Null-key records run in any order, any number at once.
    Unordered,
}

/// Settings of one task, given at registration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskOptions {
    pub null_keys: NullKeyOrdering,
    /// Overrides [`SchedulerConfig::max_inflight_per_task`] for this task.
    pub max_inflight: Option<u32>,
}
