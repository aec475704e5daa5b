//! The entry points only tests call (`NativeScheduler`'s test-only methods, grouped there too):
//! the batch form of the worker's call and two views of the counters. The
//! product's calls are in `lib.rs`.

use jni::objects::{JClass, JIntArray, JLongArray};
use jni::sys::{jint, jlong};
use jni::EnvUnowned;
use streamshard_core::{Error, PartitionProgress, TaskHandle};

use crate::entry::{count_within, entry, nanos, scheduler};
use crate::{metrics_longs, BUFFERS, NO_OFFSET, POLL_SHUTDOWN};

/// Completes `done[0..done_count]`, then waits up to `timeout_nanos` for runnable records and
/// writes up to `out.length` slots into `out`. Returns how many, or `POLL_SHUTDOWN`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_completeAndPoll<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    done: JIntArray<'c>,
    done_count: jint,
    out: JIntArray<'c>,
    timeout_nanos: jlong,
) -> jint {
    entry(env, |env| {
        let s = scheduler(h)?;
        let done_count = count_within("doneCount", done_count, "done", done.len(env)?)?;
        let max = out.len(env)?;
        BUFFERS.with(|b| {
            let (done_buf, out_buf) = &mut *b.borrow_mut();
            done_buf.resize(done_count, 0);
            if done_count > 0 {
                done.get_region(env, 0, u32_as_i32(done_buf))?;
            }
            out_buf.clear();
            match s.complete_and_poll(done_buf, out_buf, max, nanos(timeout_nanos)) {
                Ok(n) => {
                    if n > 0 {
                        out.set_region(env, 0, u32_as_i32(out_buf))?;
                    }
                    Ok(n as jint)
                }
                Err(Error::Shutdown) => Ok(POLL_SHUTDOWN),
                Err(e) => Err(e.into()),
            }
        })
    })
}

/// Views a `u32` slice as `i32`. Slots are non-negative; a negative one from Java becomes a
/// large `u32`, which the core refuses as out of range.
fn u32_as_i32(v: &mut [u32]) -> &mut [i32] {
    // SAFETY: u32 and i32 have identical size and alignment and no invalid bit patterns; the
    // returned slice borrows `v` mutably for its whole life.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut i32, v.len()) }
}

fn offset_or_none(o: Option<i64>) -> jlong {
    o.unwrap_or(NO_OFFSET)
}

/// Writes `[submitted, queued, running, finished, failed, lowestUnfinished, lastSubmitted,
/// committable]` into `out` (offsets `Long.MIN_VALUE` when there is none).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_partitionProgress<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    task: jlong,
    partition: jint,
    out: JLongArray<'c>,
) {
    entry(env, |env| {
        let p = scheduler(h)?
            .partition_progress(TaskHandle::from_raw(task as u64), partition as u32)?;
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
        Ok(())
    })
}

/// Writes totals `[submitted, finished, failures, dropped, queued, running]` into `out`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_totals<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    out: JLongArray<'c>,
) {
    entry(env, |env| {
        // The first six longs of `metrics0`'s layout are these totals.
        let v = metrics_longs(&scheduler(h)?.metrics(), 6);
        out.set_region(env, 0, &v)?;
        Ok(())
    })
}
