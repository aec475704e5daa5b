//! JNI entry points of `io.streamshard.scheduler.NativeScheduler` over `streamshard-core`.
//!
//! This crate knows nothing of scheduling: each entry point converts its arguments, calls the
//! core, and turns a core error into a Java exception. Only numbers cross the boundary (Java
//! keeps the records in its slot table). Every entry point runs inside `EnvUnowned::with_env`,
//! which catches panics; a panic becomes a `java.lang.RuntimeException`, never an unwind into
//! the JVM. Refusals the caller handles on its hot path (a full task, the global cap, shutdown
//! while polling) are return codes, not exceptions.
//!
//! The status listener (`status.rs`) and the native log bridge (`log.rs`) hang off the same
//! handle; they run only when Java turns them on.

mod log;
mod status;

use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jni::errors::ThrowRuntimeExAndDefault;
use jni::objects::{JClass, JIntArray, JLongArray, JString};
use jni::strings::JNIString;
use jni::sys::{jboolean, jint, jlong, jstring};
use jni::{jni_str, Env, EnvUnowned};
use streamshard_core::{
    Capacity, CloseMode, Error, NullKeyOrdering, PartitionProgress, Scheduler, SchedulerConfig,
    TaskHandle, TaskId, TaskOptions,
};
use streamshard_status::server::StatusServer;

/// `submit` answers: accepted (room left / task now full / global cap now reached) or refused.
pub const SUBMIT_AVAILABLE: jint = 0;
pub const SUBMIT_TASK_FULL: jint = 1;
pub const SUBMIT_GLOBAL_FULL: jint = 2;
pub const SUBMIT_REFUSED_TASK_CAP: jint = -1;
pub const SUBMIT_REFUSED_GLOBAL_CAP: jint = -2;

/// `completeAndPoll` answer when the scheduler is shut down.
pub const POLL_SHUTDOWN: jint = -1;

/// "No offset" in the `long[]` results.
pub const NO_OFFSET: jlong = jlong::MIN;

/// Throws the Java exception that matches a core error.
fn throw(env: &mut Env, e: &Error) {
    let class = match e {
        Error::InvalidConfig { .. } => jni_str!("java/lang/IllegalArgumentException"),
        Error::TaskFailed(_) => jni_str!("io/streamshard/scheduler/TaskFailedException"),
        Error::DrainTimeout { .. } => jni_str!("io/streamshard/scheduler/DrainTimeoutException"),
        Error::Shutdown => jni_str!("io/streamshard/scheduler/SchedulerShutdownException"),
        _ => jni_str!("io/streamshard/scheduler/SchedulerException"),
    };
    // If even throwing fails (class missing), a Java exception is pending all the same.
    let _ = env.throw_new(class, JNIString::from(e.to_string()));
}

pub(crate) fn throw_msg(env: &mut Env, msg: String) {
    let _ = env.throw_new(
        jni_str!("io/streamshard/scheduler/SchedulerException"),
        JNIString::from(msg),
    );
}

/// What a handle from `create` points to: the scheduler, and the status listener when one is on
/// (it reads the scheduler from its own thread, hence the `Arc`).
struct Native {
    scheduler: Arc<Scheduler>,
    status: Mutex<Option<StatusServer>>,
}

/// The state behind a handle from `create`.
///
/// The Java class owns the handle: it passes it only while open and calls `destroy` once, after
/// `shutdown` and after every thread that used it has stopped.
fn native<'a>(h: jlong) -> Option<&'a Native> {
    // SAFETY: a non-zero handle is a pointer from `Box::into_raw` in `create` that `destroy`
    // has not freed yet (the Java owner's contract above).
    unsafe { (h as *const Native).as_ref() }
}

/// The scheduler behind a handle from `create`.
fn sched<'a>(h: jlong) -> Option<&'a Scheduler> {
    native(h).map(|n| &*n.scheduler)
}

/// Runs `f` with the scheduler, or throws if the handle is 0.
fn with_sched<T: Default>(env: &mut Env, h: jlong, f: impl FnOnce(&mut Env, &Scheduler) -> T) -> T {
    match sched(h) {
        Some(s) => f(env, s),
        None => {
            throw_msg(env, "the scheduler is closed (handle 0)".into());
            T::default()
        }
    }
}

fn positive(env: &mut Env, name: &str, v: jint) -> Option<u32> {
    if v > 0 {
        Some(v as u32)
    } else {
        throw(
            env,
            &Error::InvalidConfig {
                name: "argument",
                reason: format!("{name} must be positive, got {v}"),
            },
        );
        None
    }
}

fn non_negative(env: &mut Env, name: &str, v: jint) -> Option<u32> {
    if v >= 0 {
        Some(v as u32)
    } else {
        throw_msg(env, format!("{name} must not be negative, got {v}"));
        None
    }
}

fn millis(ms: jlong) -> Duration {
    Duration::from_millis(ms.max(0) as u64)
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_create0<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    max_inflight: jint,
    max_inflight_per_task: jint,
    max_tasks: jint,
    max_partitions_per_task: jint,
    timing_sample_shift: jint,
) -> jlong {
    env.with_env(|env| -> jni::errors::Result<jlong> {
        let fields = [
            ("max_inflight", max_inflight),
            ("max_inflight_per_task", max_inflight_per_task),
            ("max_tasks", max_tasks),
            ("max_partitions_per_task", max_partitions_per_task),
        ];
        let mut v = [0u32; 4];
        for (i, (name, value)) in fields.into_iter().enumerate() {
            match positive(env, name, value) {
                Some(x) => v[i] = x,
                None => return Ok(0),
            }
        }
        let Some(shift) = non_negative(env, "timing_sample_shift", timing_sample_shift) else {
            return Ok(0);
        };
        let config = SchedulerConfig {
            max_inflight: v[0],
            max_inflight_per_task: v[1],
            max_tasks: v[2],
            max_partitions_per_task: v[3],
            timing_sample_shift: shift.min(255) as u8,
            ..SchedulerConfig::default()
        };
        match Scheduler::new(config) {
            Ok(s) => Ok(Box::into_raw(Box::new(Native {
                scheduler: Arc::new(s),
                status: Mutex::new(None),
            })) as jlong),
            Err(e) => {
                throw(env, &e);
                Ok(0)
            }
        }
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_destroy<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
) {
    env.with_env(|_env| -> jni::errors::Result<()> {
        if h != 0 {
            // SAFETY: `h` came from `Box::into_raw` in `create`; the Java owner calls `destroy`
            // once, after every user of the handle has stopped.
            let n = unsafe { Box::from_raw(h as *mut Native) };
            if let Some(status) = n.status.lock().ok().and_then(|mut s| s.take()) {
                status.stop();
            }
            n.scheduler.shutdown();
            drop(n);
        }
        Ok(())
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_shutdown<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
) {
    env.with_env(|env| -> jni::errors::Result<()> {
        with_sched(env, h, |_, s| s.shutdown());
        Ok(())
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_registerTask<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    subtopology: jint,
    partition: jint,
    unordered_null_keys: jboolean,
    max_inflight: jint,
) -> jlong {
    env.with_env(|env| -> jni::errors::Result<jlong> {
        Ok(with_sched(env, h, |env, s| {
            let (Some(subtopology), Some(partition)) = (
                non_negative(env, "subtopology", subtopology),
                non_negative(env, "partition", partition),
            ) else {
                return 0;
            };
            let options = TaskOptions {
                null_keys: if unordered_null_keys {
                    NullKeyOrdering::Unordered
                } else {
                    NullKeyOrdering::Serial
                },
                max_inflight: (max_inflight > 0).then_some(max_inflight as u32),
            };
            let id = TaskId {
                subtopology,
                partition,
            };
            match s.register_task(id, options) {
                Ok(t) => t.to_raw() as jlong,
                Err(e) => {
                    throw(env, &e);
                    0
                }
            }
        }))
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_removeTask<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    task: jlong,
) {
    env.with_env(|env| -> jni::errors::Result<()> {
        with_sched(env, h, |env, s| {
            if let Err(e) = s.remove_task(TaskHandle::from_raw(task as u64)) {
                throw(env, &e);
            }
        });
        Ok(())
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

#[allow(clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_submit<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    task: jlong,
    partition: jint,
    offset: jlong,
    has_key: jboolean,
    key_hash: jlong,
    slot: jint,
) -> jint {
    env.with_env(|env| -> jni::errors::Result<jint> {
        Ok(with_sched(env, h, |env, s| {
            let key = has_key.then_some(key_hash as u64);
            match s.submit(
                TaskHandle::from_raw(task as u64),
                partition as u32,
                offset,
                key,
                slot as u32,
            ) {
                Ok(Capacity::Available) => SUBMIT_AVAILABLE,
                Ok(Capacity::TaskFull) => SUBMIT_TASK_FULL,
                Ok(Capacity::GlobalFull) => SUBMIT_GLOBAL_FULL,
                Err(Error::TaskAtCapacity { .. }) => SUBMIT_REFUSED_TASK_CAP,
                Err(Error::GlobalAtCapacity { .. }) => SUBMIT_REFUSED_GLOBAL_CAP,
                Err(e) => {
                    throw(env, &e);
                    0
                }
            }
        }))
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_hasCapacity<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    task: jlong,
) -> jboolean {
    env.with_env(|env| -> jni::errors::Result<jboolean> {
        Ok(with_sched(env, h, |env, s| {
            match s.has_capacity(TaskHandle::from_raw(task as u64)) {
                Ok(b) => b,
                Err(e) => {
                    throw(env, &e);
                    false
                }
            }
        }))
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

thread_local! {
    /// Per-thread buffers of `completeAndPoll`, reused so the call allocates nothing.
    static BUFFERS: RefCell<(Vec<u32>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Completes `done[0..done_count]`, then waits up to `timeout_nanos` for runnable records and
/// writes up to `out.length` slots into `out`. Returns how many, or `POLL_SHUTDOWN`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_completeAndPoll<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    done: JIntArray<'c>,
    done_count: jint,
    out: JIntArray<'c>,
    timeout_nanos: jlong,
) -> jint {
    env.with_env(|env| -> jni::errors::Result<jint> {
        let Some(s) = sched(h) else {
            throw_msg(env, "the scheduler is closed (handle 0)".into());
            return Ok(0);
        };
        let Some(done_count) = non_negative(env, "doneCount", done_count) else {
            return Ok(0);
        };
        let room = done.len(env)?;
        if done_count as usize > room {
            let _ = env.throw_new(
                jni_str!("java/lang/ArrayIndexOutOfBoundsException"),
                JNIString::from(format!("doneCount {done_count} exceeds done.length {room}")),
            );
            return Ok(0);
        }
        let max = out.len(env)?;
        BUFFERS.with(|b| {
            let (done_buf, out_buf) = &mut *b.borrow_mut();
            done_buf.resize(done_count as usize, 0);
            if done_count > 0 {
                // SAFETY of the cast: jint and u32 have the same size and alignment; slots are
                // non-negative, and a negative one is refused by the core as out of range.
                let as_jint: &mut [jint] = bytemuck_u32_as_i32(done_buf);
                done.get_region(env, 0, as_jint)?;
            }
            out_buf.clear();
            let timeout = Duration::from_nanos(timeout_nanos.max(0) as u64);
            match s.complete_and_poll(done_buf, out_buf, max, timeout) {
                Ok(n) => {
                    if n > 0 {
                        out.set_region(env, 0, bytemuck_u32_as_i32(out_buf))?;
                    }
                    Ok(n as jint)
                }
                Err(Error::Shutdown) => Ok(POLL_SHUTDOWN),
                Err(e) => {
                    throw(env, &e);
                    Ok(0)
                }
            }
        })
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// `completeOneAndPoll` answer when no record became runnable within the timeout.
pub const POLL_NONE: jint = -2;

/// The worker's common case of `completeAndPoll` without arrays: completes `done` (none if
/// negative), then waits up to `timeout_nanos` for one runnable record. Returns its slot,
/// `POLL_NONE` or `POLL_SHUTDOWN`. No JNI array calls: one record per call is what a worker
/// takes, and the four array calls cost about as much as the scheduler's own work.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_completeOneAndPoll<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    done: jint,
    timeout_nanos: jlong,
) -> jint {
    env.with_env(|env| -> jni::errors::Result<jint> {
        Ok(with_sched(env, h, |env, s| {
            let finished = [done as u32];
            let finished: &[u32] = if done >= 0 { &finished } else { &[] };
            let timeout = Duration::from_nanos(timeout_nanos.max(0) as u64);
            BUFFERS.with(|b| {
                let (_, out_buf) = &mut *b.borrow_mut();
                out_buf.clear();
                match s.complete_and_poll(finished, out_buf, 1, timeout) {
                    Ok(0) => POLL_NONE,
                    Ok(_) => out_buf[0] as jint,
                    Err(Error::Shutdown) => POLL_SHUTDOWN,
                    Err(e) => {
                        throw(env, &e);
                        POLL_NONE
                    }
                }
            })
        }))
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// Views a `u32` slice as `i32` (same size and alignment, every bit pattern valid).
fn bytemuck_u32_as_i32(v: &mut [u32]) -> &mut [i32] {
    // SAFETY: u32 and i32 have identical size and alignment and no invalid bit patterns; the
    // returned slice borrows `v` mutably for its whole life.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut i32, v.len()) }
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_complete<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    slot: jint,
) {
    env.with_env(|env| -> jni::errors::Result<()> {
        with_sched(env, h, |env, s| {
            if let Err(e) = s.complete(slot as u32) {
                throw(env, &e);
            }
        });
        Ok(())
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_fail<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    slot: jint,
    message: JString<'c>,
) {
    env.with_env(|env| -> jni::errors::Result<()> {
        let text = if message.is_null() {
            String::from("(no message)")
        } else {
            message.try_to_string(env)?
        };
        with_sched(env, h, |env, s| {
            if let Err(e) = s.fail(slot as u32, &text) {
                throw(env, &e);
            }
        });
        Ok(())
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// Waits up to `timeout_nanos` until one of `tasks[0..count]` has room for a run of records (see
/// `Scheduler::wait_for_room`). Returns false on timeout; true on room, and after shutdown.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_waitForRoom<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    tasks: JLongArray<'c>,
    count: jint,
    timeout_nanos: jlong,
) -> jboolean {
    env.with_env(|env| -> jni::errors::Result<jboolean> {
        let Some(count) = non_negative(env, "count", count) else {
            return Ok(false);
        };
        let len = tasks.len(env)?;
        if count as usize > len {
            let _ = env.throw_new(
                jni_str!("java/lang/ArrayIndexOutOfBoundsException"),
                JNIString::from(format!("count {count} exceeds tasks.length {len}")),
            );
            return Ok(false);
        }
        let mut raw = vec![0 as jlong; count as usize];
        tasks.get_region(env, 0, &mut raw)?;
        let handles: Vec<TaskHandle> = raw
            .iter()
            .map(|&t| TaskHandle::from_raw(t as u64))
            .collect();
        let timeout = Duration::from_nanos(timeout_nanos.max(0) as u64);
        Ok(with_sched(env, h, |env, s| {
            match s.wait_for_room(&handles, timeout) {
                Ok(room) => room,
                Err(Error::Shutdown) => true,
                Err(e) => {
                    throw(env, &e);
                    false
                }
            }
        }))
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_drain<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    tasks: JLongArray<'c>,
    timeout_millis: jlong,
) {
    env.with_env(|env| -> jni::errors::Result<()> {
        let n = tasks.len(env)?;
        let mut raw = vec![0 as jlong; n];
        tasks.get_region(env, 0, &mut raw)?;
        let handles: Vec<TaskHandle> = raw
            .iter()
            .map(|&t| TaskHandle::from_raw(t as u64))
            .collect();
        with_sched(env, h, |env, s| {
            if let Err(e) = s.drain(&handles, millis(timeout_millis)) {
                throw(env, &e);
            }
        });
        Ok(())
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// Closes a task. With `dropQueued`, the discarded slots are written to `dropped` (followed by
/// -1 if there is room) before any wait error is thrown, so the caller can always release them.
/// Returns how many were dropped.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_close<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    task: jlong,
    drop_queued: jboolean,
    timeout_millis: jlong,
    dropped: JIntArray<'c>,
) -> jint {
    env.with_env(|env| -> jni::errors::Result<jint> {
        let Some(s) = sched(h) else {
            throw_msg(env, "the scheduler is closed (handle 0)".into());
            return Ok(0);
        };
        let mode = if drop_queued {
            CloseMode::DropQueued
        } else {
            CloseMode::Drain
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
            throw_msg(
                env,
                format!(
                    "close dropped {} queued records but the array holds only {room} slots",
                    slots.len()
                ),
            );
        } else if let Err(e) = result {
            throw(env, &e);
        }
        Ok(slots.len() as jint)
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

fn offset_or_none(o: Option<i64>) -> jlong {
    o.unwrap_or(NO_OFFSET)
}

/// Writes `[submitted, queued, running, finished, failed, lowestUnfinished, lastSubmitted,
/// committable]` into `out` (offsets `Long.MIN_VALUE` when there is none).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_partitionProgress<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    task: jlong,
    partition: jint,
    out: JLongArray<'c>,
) {
    env.with_env(|env| -> jni::errors::Result<()> {
        let Some(s) = sched(h) else {
            throw_msg(env, "the scheduler is closed (handle 0)".into());
            return Ok(());
        };
        match s.partition_progress(TaskHandle::from_raw(task as u64), partition as u32) {
            Ok(p) => {
                let PartitionProgress {
                    submitted,
                    queued,
                    running,
                    finished,
                    failed,
                    lowest_unfinished,
                    last_submitted,
                } = p;
                let v = [
                    submitted as jlong,
                    queued as jlong,
                    running as jlong,
                    finished as jlong,
                    failed as jlong,
                    offset_or_none(lowest_unfinished),
                    offset_or_none(last_submitted),
                    offset_or_none(p.committable()),
                ];
                out.set_region(env, 0, &v)?;
            }
            Err(e) => throw(env, &e),
        }
        Ok(())
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// The task's first failure as text, or null.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_failure<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    task: jlong,
) -> jstring {
    env.with_env(|env| -> jni::errors::Result<jstring> {
        let Some(s) = sched(h) else {
            throw_msg(env, "the scheduler is closed (handle 0)".into());
            return Ok(std::ptr::null_mut());
        };
        match s.failure(TaskHandle::from_raw(task as u64)) {
            Ok(Some(f)) => Ok(JString::from_str(env, f.to_string())?.into_raw()),
            Ok(None) => Ok(std::ptr::null_mut()),
            Err(e) => {
                throw(env, &e);
                Ok(std::ptr::null_mut())
            }
        }
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// Writes totals `[submitted, finished, failures, dropped, queued, running]` into `out`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_totals<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    out: JLongArray<'c>,
) {
    env.with_env(|env| -> jni::errors::Result<()> {
        let Some(s) = sched(h) else {
            throw_msg(env, "the scheduler is closed (handle 0)".into());
            return Ok(());
        };
        let t = s.metrics().totals;
        let v = [
            t.submitted as jlong,
            t.finished as jlong,
            t.failures as jlong,
            t.dropped as jlong,
            t.queued as jlong,
            t.running as jlong,
        ];
        out.set_region(env, 0, &v)?;
        Ok(())
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// Longs before the per-task rows of `metrics0`'s output.
const METRICS_HEAD: usize = 13;
/// Longs per task row of `metrics0`'s output.
const METRICS_ROW: usize = 18;

/// Writes a lock-free copy of the scheduler's counters into `out`:
/// `[submitted, finished, failures, dropped, queued, running, waitCount, waitSumNs, waitMaxNs,
/// runCount, runSumNs, runMaxNs, tasks]`, then per live task `[subtopology, partition, closed,
/// failed, queued, running, submitted, finished, failures, dropped, activeKeys, maxKeyDepth,
/// waitCount, waitSumNs, waitMaxNs, runCount, runSumNs, runMaxNs]` (sampled times), as
/// many rows as fit. Returns the number of live tasks (more than were written if `out` is short).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_metrics0<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    out: JLongArray<'c>,
) -> jint {
    env.with_env(|env| -> jni::errors::Result<jint> {
        let Some(s) = sched(h) else {
            throw_msg(env, "the scheduler is closed (handle 0)".into());
            return Ok(0);
        };
        let m = s.metrics();
        let capacity = out.len(env)?;
        let v = metrics_longs(&m, capacity);
        out.set_region(env, 0, &v)?;
        Ok(m.tasks.len() as jint)
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// `metrics0`'s layout, at most `capacity` longs (whole rows only).
fn metrics_longs(m: &streamshard_core::MetricsSnapshot, capacity: usize) -> Vec<jlong> {
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
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
) -> jlong {
    env.with_env(|_env| -> jni::errors::Result<jlong> { Ok(run_queue_wait_ns()) })
        .resolve::<ThrowRuntimeExAndDefault>()
}

#[cfg(test)]
mod run_queue_tests {
    use super::*;

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
