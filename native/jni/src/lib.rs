//! JNI entry points of `io.streamshard.scheduler.NativeScheduler` over `streamshard-core`.
//!
//! This crate knows nothing of scheduling: each entry point converts its arguments, calls the
//! core, and returns. Only numbers cross the boundary (Java keeps the records in its slot table).
//! Every entry point is `entry(env, |env| ...)` (`entry.rs`): one error path maps every error to
//! its Java exception and catches panics, so nothing unwinds into the JVM. Refusals the caller
//! handles on its hot path (a full task, the global cap, shutdown while polling) are return
//! codes, not exceptions.
//!
//! The status listener (`status.rs`) and the native log bridge (`log.rs`) hang off the same
//! handle; they run only when Java turns them on. The entry points only tests call are in
//! `for_tests.rs`.

mod entry;
mod for_tests;
mod log;
mod status;

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use jni::objects::{JClass, JIntArray, JLongArray, JString};
use jni::sys::{jboolean, jint, jlong, jstring};
use jni::EnvUnowned;
use streamshard_core::{
    take_owed_wakes, Capacity, CloseMode, Error, NullKeyOrdering, Scheduler, SchedulerConfig,
    TaskHandle, TaskId, TaskOptions,
};
use streamshard_status::server::StatusServer;

use entry::{
    count_within, entry, millis, nanos, non_negative, positive, scheduler, task_handles, Thrown,
};

/// `submit` answers: accepted (room left / task now full / global cap now reached) or refused.
pub const SUBMIT_AVAILABLE: jint = 0;
pub const SUBMIT_TASK_FULL: jint = 1;
pub const SUBMIT_GLOBAL_FULL: jint = 2;
pub const SUBMIT_REFUSED_TASK_CAP: jint = -1;
pub const SUBMIT_REFUSED_GLOBAL_CAP: jint = -2;

/// `completeAndPoll` answer when the scheduler is shut down.
pub const POLL_SHUTDOWN: jint = -1;

/// `completeOneAndPoll` answer when no record became runnable within the timeout.
pub const POLL_NONE: jint = -2;

/// "No offset" in the `long[]` results.
pub const NO_OFFSET: jlong = jlong::MIN;

/// What a handle from `create` points to: the scheduler, and the status listener when one is on
/// (it reads the scheduler from its own thread, hence the `Arc`).
pub(crate) struct Native {
    scheduler: Arc<Scheduler>,
    status: Mutex<Option<StatusServer>>,
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_create0<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    max_inflight: jint,
    max_inflight_per_task: jint,
    max_tasks: jint,
    max_partitions_per_task: jint,
    timing_sample_shift: jint,
    external_waits: jboolean,
) -> jlong {
    entry(env, |_| {
        let config = SchedulerConfig {
            max_inflight: positive("max_inflight", max_inflight)?,
            max_inflight_per_task: positive("max_inflight_per_task", max_inflight_per_task)?,
            max_tasks: positive("max_tasks", max_tasks)?,
            max_partitions_per_task: positive("max_partitions_per_task", max_partitions_per_task)?,
            timing_sample_shift: non_negative("timing_sample_shift", timing_sample_shift)?.min(255)
                as u8,
            external_waits,
            // Deferring a wake-up relies on idle workers' periodic wake-ups to bound a deferred
            // record's wait; parked virtual workers have none (a wake-up is cheap for them), so
            // every ready record wakes one.
            wake_defer_ratio: if external_waits {
                0
            } else {
                SchedulerConfig::default().wake_defer_ratio
            },
        };
        let native = Native {
            scheduler: Arc::new(Scheduler::new(config)?),
            status: Mutex::new(None),
        };
        Ok(Box::into_raw(Box::new(native)) as jlong)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_destroy<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
) {
    entry(env, |_| {
        if h != 0 {
            // SAFETY: `h` came from `Box::into_raw` in `create`; the Java owner calls `destroy`
            // once, after every user of the handle has stopped.
            let n = unsafe { Box::from_raw(h as *mut Native) };
            if let Some(status) = n.status.lock().ok().and_then(|mut s| s.take()) {
                status.stop();
            }
            n.scheduler.shutdown();
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_shutdown<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
) {
    entry(env, |_| {
        scheduler(h)?.shutdown();
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_registerTask<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    subtopology: jint,
    partition: jint,
    unordered_null_keys: jboolean,
    max_inflight: jint,
) -> jlong {
    entry(env, |_| {
        let s = scheduler(h)?;
        let id = TaskId {
            subtopology: non_negative("subtopology", subtopology)?,
            partition: non_negative("partition", partition)?,
        };
        let options = TaskOptions {
            null_keys: if unordered_null_keys {
                NullKeyOrdering::Unordered
            } else {
                NullKeyOrdering::Serial
            },
            max_inflight: (max_inflight > 0).then_some(max_inflight as u32),
        };
        Ok(s.register_task(id, options)?.to_raw() as jlong)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_removeTask<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    task: jlong,
) {
    entry(env, |_| {
        Ok(scheduler(h)?.remove_task(TaskHandle::from_raw(task as u64))?)
    })
}

#[allow(clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_submit<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    task: jlong,
    partition: jint,
    offset: jlong,
    has_key: jboolean,
    key_hash: jlong,
    slot: jint,
) -> jint {
    entry(env, |_| {
        let key = has_key.then_some(key_hash as u64);
        let task = TaskHandle::from_raw(task as u64);
        let code = match scheduler(h)?.submit(task, partition as u32, offset, key, slot as u32) {
            Ok(Capacity::Available) => SUBMIT_AVAILABLE,
            Ok(Capacity::TaskFull) => SUBMIT_TASK_FULL,
            Ok(Capacity::GlobalFull) => SUBMIT_GLOBAL_FULL,
            Err(Error::TaskAtCapacity { .. }) => return Ok(SUBMIT_REFUSED_TASK_CAP),
            Err(Error::GlobalAtCapacity { .. }) => return Ok(SUBMIT_REFUSED_GLOBAL_CAP),
            Err(e) => return Err(e.into()),
        };
        Ok(code | owed_wakes() << SUBMIT_WAKES_SHIFT)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_hasCapacity<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    task: jlong,
) -> jboolean {
    entry(env, |_| {
        Ok(scheduler(h)?.has_capacity(TaskHandle::from_raw(task as u64))?)
    })
}

thread_local! {
    /// Per-thread buffers of `completeAndPoll` and `completeOneAndPoll`, reused so the calls
    /// allocate nothing.
    static BUFFERS: RefCell<(Vec<u32>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// The worker's call: completes `done` (none if negative), then waits up to `timeout_nanos` for
/// one runnable record. Returns its slot, `POLL_NONE` or `POLL_SHUTDOWN`. No JNI array calls:
/// one record per call is what a worker takes, and the four array calls of `completeAndPoll`
/// cost about as much as the scheduler's own work.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_completeOneAndPoll<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    done: jint,
    timeout_nanos: jlong,
) -> jint {
    entry(env, |_| {
        let s = scheduler(h)?;
        with_one_done(done, |finished, out_buf| {
            match s.complete_and_poll(finished, out_buf, 1, nanos(timeout_nanos)) {
                Ok(0) => Ok(POLL_NONE),
                Ok(_) => Ok(out_buf[0] as jint),
                Err(Error::Shutdown) => Ok(POLL_SHUTDOWN),
                Err(e) => Err(e.into()),
            }
        })
    })
}

/// The worker's call with external waits (virtual workers, which must not block in native
/// code): completes `done` (none if negative) and takes one ready record without waiting
/// (`Scheduler::poll_or_idle`). `was_idle`: this worker was idle after its previous call.
/// Returns the slot in the low 32 bits and the wake-ups it owes other idle workers above
/// them; `POLL_SHUTDOWN`; or, when nothing is ready and the worker is idle now,
/// `POLL_IDLE - n` where `n` is how many nanoseconds until the earliest record in backoff is
/// due (`IDLE_NOTHING_DUE` if none is): the worker parks until woken or until then.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_pollOrIdle<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    done: jint,
    was_idle: jboolean,
) -> jlong {
    entry(env, |_| {
        let s = scheduler(h)?;
        with_one_done(done, |finished, out_buf| {
            match s.poll_or_idle(finished, was_idle, out_buf, 1) {
                Ok(p) if p.taken > 0 => {
                    Ok(jlong::from(out_buf[0]) | jlong::from(owed_wakes()) << 32)
                }
                Ok(p) => {
                    let due = p.due_in.map_or(IDLE_NOTHING_DUE, |d| {
                        jlong::try_from(d.as_nanos())
                            .map_or(IDLE_NOTHING_DUE - 1, |n| n.min(IDLE_NOTHING_DUE - 1))
                    });
                    Ok(POLL_IDLE - due)
                }
                Err(Error::Shutdown) => Ok(jlong::from(POLL_SHUTDOWN)),
                Err(e) => Err(e.into()),
            }
        })
    })
}

/// A worker's call: `done` as the records to complete (none if negative) and this thread's
/// cleared output buffer.
fn with_one_done<R>(done: jint, f: impl FnOnce(&[u32], &mut Vec<u32>) -> R) -> R {
    let finished = [done as u32];
    let finished: &[u32] = if done >= 0 { &finished } else { &[] };
    BUFFERS.with(|b| {
        let (_, out_buf) = &mut *b.borrow_mut();
        out_buf.clear();
        f(finished, out_buf)
    })
}

/// `pollOrIdle`: the worker is idle (`POLL_IDLE - nanos until the earliest due record`).
pub const POLL_IDLE: jlong = -2;

/// `pollOrIdle`: idle, and no record is in backoff.
pub const IDLE_NOTHING_DUE: jlong = jlong::MAX - 2;

/// `submit`'s answer carries the wake-ups it owes idle workers from this bit up.
pub const SUBMIT_WAKES_SHIFT: jint = 4;

/// The wake-ups this thread's last scheduler operation owes idle workers (external waits only),
/// capped where they would not fit the answer (a wake-up is only ever one or two).
fn owed_wakes() -> jint {
    take_owed_wakes().min(1 << 20) as jint
}

/// Ends a running record with `end` (complete or fail); returns the wake-ups owed to idle workers.
fn end_record(
    env: EnvUnowned<'_>,
    h: jlong,
    slot: jint,
    end: fn(&Scheduler, u32) -> Result<(), Error>,
) -> jint {
    entry(env, |_| {
        end(scheduler(h)?, slot as u32)?;
        Ok(owed_wakes())
    })
}

/// Marks a running record finished without polling (a worker that leaves the pool's places when
/// `workers=auto` lowers the limit). Returns the wake-ups owed to idle workers.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_complete<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    slot: jint,
) -> jint {
    end_record(env, h, slot, Scheduler::complete)
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_fail<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    slot: jint,
) -> jint {
    end_record(env, h, slot, Scheduler::fail)
}

/// Sends a running record back to wait `delay_nanos` (0: ready at once; negative counts as 0)
/// before it is dispatched again (see `Scheduler::retry`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_retry<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    slot: jint,
    delay_nanos: jlong,
) -> jint {
    entry(env, |_| {
        scheduler(h)?.retry(slot as u32, nanos(delay_nanos))?;
        Ok(owed_wakes())
    })
}

/// Waits up to `timeout_nanos` until one of `tasks[0..count]` has room for a run of records (see
/// `Scheduler::wait_for_room`). Returns false on timeout; true on room, and after shutdown.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_waitForRoom<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    tasks: JLongArray<'c>,
    count: jint,
    timeout_nanos: jlong,
) -> jboolean {
    entry(env, |env| {
        let count = count_within("count", count, "tasks", tasks.len(env)?)?;
        let handles = task_handles(env, &tasks, count)?;
        match scheduler(h)?.wait_for_room(&handles, nanos(timeout_nanos)) {
            Err(Error::Shutdown) => Ok(true),
            room => Ok(room?),
        }
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_drain<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    tasks: JLongArray<'c>,
    timeout_millis: jlong,
) {
    entry(env, |env| {
        let count = tasks.len(env)?;
        let handles = task_handles(env, &tasks, count)?;
        Ok(scheduler(h)?.drain(&handles, millis(timeout_millis))?)
    })
}

/// Closes a task. `mode` is Java's `CloseMode` code, one per variant of the core's
/// [`CloseMode`]: 0 `Drain`, 1 `DropQueued`. With `DropQueued`, the discarded slots are written to
/// `dropped` (followed by -1 if there is room) before any wait error is thrown, so the caller can
/// always release them. Returns how many were dropped.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_close<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    task: jlong,
    mode: jint,
    timeout_millis: jlong,
    dropped: JIntArray<'c>,
) -> jint {
    entry(env, |env| {
        let s = scheduler(h)?;
        let mode = match mode {
            0 => CloseMode::Drain,
            1 => CloseMode::DropQueued,
            m => {
                return Err(Thrown::Argument(format!(
                    "close mode {m}: 0 (Drain) or 1 (DropQueued)"
                )))
            }
        };
        let mut slots = Vec::new();
        let result = s.close(
            TaskHandle::from_raw(task as u64),
            mode,
            millis(timeout_millis),
            &mut slots,
        );
        let room = if dropped.is_null() {
            0
        } else {
            dropped.len(env)?
        };
        let mut written: Vec<jint> = slots.iter().take(room).map(|&x| x as jint).collect();
        if written.len() < room {
            written.push(-1);
        }
        if !written.is_empty() {
            dropped.set_region(env, 0, &written)?;
        }
        if slots.len() > room {
            return Err(Thrown::Scheduler(format!(
                "close dropped {} queued records but the array holds only {room} slots",
                slots.len()
            )));
        }
        result?;
        Ok(slots.len() as jint)
    })
}

/// Where the task first failed, as text, or null.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_failure<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    task: jlong,
) -> jstring {
    entry(env, |env| {
        match scheduler(h)?.failure(TaskHandle::from_raw(task as u64))? {
            Some(f) => Ok(JString::from_str(env, f.to_string())?.into_raw()),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// Longs before the per-task rows of `metrics0`'s output.
const METRICS_HEAD: usize = 13;
/// Longs per task row of `metrics0`'s output.
const METRICS_ROW: usize = 20;

/// Writes a lock-free copy of the scheduler's counters into `out`:
/// `[submitted, finished, failures, dropped, queued, running, waitCount, waitSumNs, waitMaxNs,
/// runCount, runSumNs, runMaxNs, tasks]`, then per live task `[subtopology, partition, closed,
/// failed, queued, running, submitted, finished, failures, dropped, activeKeys, maxKeyDepth,
/// waitCount, waitSumNs, waitMaxNs, runCount, runSumNs, runMaxNs, retries, backoff]` (sampled
/// times; records sent back to wait for a retry, and those waiting now), as
/// many rows as fit. Returns the number of live tasks (more than were written if `out` is short).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_metrics0<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    out: JLongArray<'c>,
) -> jint {
    entry(env, |env| {
        let m = scheduler(h)?.metrics();
        let v = metrics_longs(&m, out.len(env)?);
        out.set_region(env, 0, &v)?;
        Ok(m.tasks.len() as jint)
    })
}

/// `metrics0`'s layout, at most `capacity` longs (whole rows only).
pub(crate) fn metrics_longs(m: &streamshard_core::MetricsSnapshot, capacity: usize) -> Vec<jlong> {
    let t = &m.totals;
    let mut v: Vec<jlong> = vec![
        t.submitted as jlong,
        t.finished as jlong,
        t.failures as jlong,
        t.dropped as jlong,
        t.queued as jlong,
        t.running as jlong,
        m.wait_ns.count as jlong,
        m.wait_ns.sum as jlong,
        m.wait_ns.max as jlong,
        m.run_ns.count as jlong,
        m.run_ns.sum as jlong,
        m.run_ns.max as jlong,
        m.tasks.len() as jlong,
    ];
    debug_assert_eq!(v.len(), METRICS_HEAD);
    v.truncate(capacity);
    for task in &m.tasks {
        if v.len() + METRICS_ROW > capacity {
            break;
        }
        v.extend_from_slice(&[
            task.task.subtopology as jlong,
            task.task.partition as jlong,
            task.closed as jlong,
            task.failed as jlong,
            task.queued as jlong,
            task.running as jlong,
            task.submitted as jlong,
            task.finished as jlong,
            task.failures as jlong,
            task.dropped as jlong,
            task.active_keys as jlong,
            task.max_key_depth as jlong,
            task.wait.count as jlong,
            task.wait.sum_ns as jlong,
            task.wait.max_ns as jlong,
            task.run.count as jlong,
            task.run.sum_ns as jlong,
            task.run.max_ns as jlong,
            task.retries as jlong,
            task.backoff as jlong,
        ]);
    }
    v
}

thread_local! {
    /// This thread's `/proc/thread-self/schedstat`, opened on first use and closed when the
    /// thread ends; `None` inside once it could not be opened.
    static SCHEDSTAT: RefCell<Option<Option<std::fs::File>>> = const { RefCell::new(None) };
}

/// The calling thread's total time runnable but waiting for a CPU (ns): the second number of
/// `/proc/thread-self/schedstat`, read with one `pread` on a descriptor kept per thread. -1 where
/// that file cannot be opened or read (not Linux, or no schedstats).
fn run_queue_wait_ns() -> jlong {
    use std::os::unix::fs::FileExt;
    SCHEDSTAT.with(|cell| {
        let mut slot = cell.borrow_mut();
        let file =
            slot.get_or_insert_with(|| std::fs::File::open("/proc/thread-self/schedstat").ok());
        let Some(f) = file.as_ref() else {
            return -1;
        };
        let mut buf = [0u8; 96];
        let n = match f.read_at(&mut buf, 0) {
            Ok(n) => n,
            Err(_) => return -1,
        };
        parse_schedstat(&buf[..n]).unwrap_or(-1)
    })
}

/// The second field of a schedstat line ("run_ns wait_ns timeslices\n").
fn parse_schedstat(line: &[u8]) -> Option<jlong> {
    let text = std::str::from_utf8(line).ok()?;
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_runQueueWait0<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
) -> jlong {
    entry(env, |_| Ok(run_queue_wait_ns()))
}

#[cfg(test)]
mod run_queue_tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_second_schedstat_number_is_the_wait() {
        assert_eq!(parse_schedstat(b"123456 7890 12\n"), Some(7890));
        assert_eq!(parse_schedstat(b"123456\n"), None);
        assert_eq!(parse_schedstat(b"a b c"), None);
    }

    #[test]
    fn the_wait_is_read_again_on_each_call() {
        let first = run_queue_wait_ns();
        if first < 0 {
            return; // no schedstats on this kernel: the caller's fallback is tested in Java
        }
        // Runnable threads competing for fewer CPUs than they are make this one wait.
        let spin = || {
            let t = std::time::Instant::now();
            while t.elapsed() < Duration::from_millis(200) {
                std::hint::black_box(0u64);
            }
        };
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let others: Vec<_> = (0..2 * cpus).map(|_| std::thread::spawn(spin)).collect();
        spin();
        others.into_iter().for_each(|t| t.join().unwrap());
        let second = run_queue_wait_ns();
        assert!(
            second > first,
            "a fresh read each call: {first} then {second}"
        );
    }
}
