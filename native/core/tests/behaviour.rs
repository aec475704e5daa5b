//! Deterministic behaviour: fairness, wake-ups, blocking drains and closes, shutdown, config.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use streamshard_core::{
    CloseMode, Error, NullKeyOrdering, Scheduler, SchedulerConfig, TaskId, TaskOptions,
};

fn sched(slots: u32) -> Scheduler {
    Scheduler::new(SchedulerConfig {
        max_inflight: slots,
        max_inflight_per_task: slots,
        timing_sample_shift: 0,
        ..SchedulerConfig::default()
    })
    .unwrap()
}

fn tid(s: u32, p: u32) -> TaskId {
    TaskId {
        subtopology: s,
        partition: p,
    }
}

const LONG: Duration = Duration::from_secs(10);

#[test]
fn a_busy_task_cannot_starve_another() {
    let s = sched(2_000);
    let busy = s.register_task(tid(0, 0), TaskOptions::default()).unwrap();
    let quiet = s.register_task(tid(0, 1), TaskOptions::default()).unwrap();
    for i in 0..1_000u32 {
        s.submit(busy, 0, i as i64, Some(i as u64), i).unwrap();
    }
    s.submit(quiet, 0, 0, Some(1), 1_500).unwrap();
    let mut out = Vec::new();
    s.poll(&mut out, 2, Duration::ZERO).unwrap();
    assert!(
        out.contains(&1_500),
        "quiet task's record not among the first two: {out:?}"
    );
}

#[test]
fn a_hot_key_cannot_starve_other_keys() {
    let s = sched(1_000);
    let t = s.register_task(tid(0, 0), TaskOptions::default()).unwrap();
    // 500 records of the hot key first, then one record each of 10 other keys.
    for i in 0..500u32 {
        s.submit(t, 0, i as i64, Some(7), i).unwrap();
    }
    for k in 0..10u32 {
        s.submit(t, 0, 500 + k as i64, Some(100 + k as u64), 500 + k)
            .unwrap();
    }
    // One worker: each key gets a turn before the hot key's second record.
    let mut order = Vec::new();
    let mut out = Vec::new();
    for _ in 0..11 {
        out.clear();
        assert_eq!(s.poll(&mut out, 1, Duration::ZERO).unwrap(), 1);
        order.push(out[0]);
        s.complete(out[0]).unwrap();
    }
    assert_eq!(order[0], 0);
    assert_eq!(&order[1..], &(500..510).collect::<Vec<u32>>()[..]);
    // Then the hot key goes on, in order.
    out.clear();
    s.poll(&mut out, 1, Duration::ZERO).unwrap();
    assert_eq!(out, vec![1]);
}

#[test]
fn poll_blocks_and_wakes_promptly_on_submit() {
    let s = Arc::new(sched(10));
    let t = s.register_task(tid(1, 0), TaskOptions::default()).unwrap();
    let s2 = s.clone();
    let poller = thread::spawn(move || {
        let mut out = Vec::new();
        let start = Instant::now();
        let n = s2.poll(&mut out, 4, LONG).unwrap();
        (n, out, start.elapsed())
    });
    thread::sleep(Duration::from_millis(50));
    s.submit(t, 0, 0, Some(3), 4).unwrap();
    let (n, out, waited) = poller.join().unwrap();
    assert_eq!((n, out), (1, vec![4]));
    assert!(
        waited < Duration::from_secs(5),
        "poller slept through the submit"
    );
}

#[test]
fn poll_wakes_when_a_key_unblocks() {
    let s = Arc::new(sched(10));
    let t = s.register_task(tid(1, 0), TaskOptions::default()).unwrap();
    s.submit(t, 0, 0, Some(3), 0).unwrap();
    s.submit(t, 0, 1, Some(3), 1).unwrap();
    let mut out = Vec::new();
    s.poll(&mut out, 4, Duration::ZERO).unwrap();
    assert_eq!(out, vec![0]);
    let s2 = s.clone();
    let poller = thread::spawn(move || {
        let mut out = Vec::new();
        s2.poll(&mut out, 4, LONG).unwrap();
        out
    });
    thread::sleep(Duration::from_millis(50));
    s.complete(0).unwrap();
    assert_eq!(poller.join().unwrap(), vec![1]);
}

#[test]
fn poll_times_out_empty() {
    let s = sched(10);
    let mut out = Vec::new();
    let start = Instant::now();
    assert_eq!(s.poll(&mut out, 4, Duration::from_millis(30)).unwrap(), 0);
    assert!(start.elapsed() >= Duration::from_millis(30));
}

#[test]
fn shutdown_releases_blocked_pollers_and_drains() {
    let s = Arc::new(sched(10));
    let t = s.register_task(tid(1, 0), TaskOptions::default()).unwrap();
    s.submit(t, 0, 0, Some(3), 0).unwrap();
    let pollers: Vec<_> = (0..3)
        .map(|_| {
            let s = s.clone();
            thread::spawn(move || {
                let mut out = Vec::new();
                loop {
                    match s.poll(&mut out, 1, LONG) {
                        Ok(_) => continue,
                        Err(e) => return e,
                    }
                }
            })
        })
        .collect();
    let s2 = s.clone();
    let drainer = thread::spawn(move || s2.drain(&[t], LONG));
    thread::sleep(Duration::from_millis(50));
    s.shutdown();
    for p in pollers {
        assert_eq!(p.join().unwrap(), Error::Shutdown);
    }
    assert_eq!(drainer.join().unwrap(), Err(Error::Shutdown));
    assert_eq!(s.submit(t, 0, 1, None, 1), Err(Error::Shutdown));
}

#[test]
fn drain_waits_for_running_records_then_returns() {
    let s = Arc::new(sched(10));
    let t = s.register_task(tid(1, 0), TaskOptions::default()).unwrap();
    for i in 0..3 {
        s.submit(t, 0, i, Some(i as u64), i as u32).unwrap();
    }
    let s2 = s.clone();
    let worker = thread::spawn(move || {
        let mut out = Vec::new();
        let mut done = 0;
        while done < 3 {
            out.clear();
            s2.poll(&mut out, 1, LONG).unwrap();
            thread::sleep(Duration::from_millis(20));
            s2.complete(out[0]).unwrap();
            done += 1;
        }
    });
    let start = Instant::now();
    s.drain(&[t], LONG).unwrap();
    assert!(start.elapsed() >= Duration::from_millis(40));
    let p = s.partition_progress(t, 0).unwrap();
    assert_eq!(
        (p.finished, p.lowest_unfinished, p.committable()),
        (3, None, Some(3))
    );
    worker.join().unwrap();
}

#[test]
fn drain_timeout_says_how_many_remain_and_where() {
    let s = sched(10);
    let t = s.register_task(tid(4, 2), TaskOptions::default()).unwrap();
    s.submit(t, 0, 10, Some(1), 0).unwrap();
    s.submit(t, 3, 42, Some(1), 1).unwrap();
    let mut out = Vec::new();
    s.poll(&mut out, 10, Duration::ZERO).unwrap();
    let err = s.drain(&[t], Duration::from_millis(20)).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("2 records unfinished"), "{text}");
    assert!(
        text.contains("task 4_2: 1 queued, 1 running, on 1 key;"),
        "{text}"
    );
    assert!(text.contains("partition 0 from offset 10"), "{text}");
    assert!(text.contains("partition 3 from offset 42"), "{text}");
}

#[test]
fn close_drop_queued_returns_queued_slots_and_waits_for_running() {
    let s = Arc::new(sched(10));
    let t = s.register_task(tid(1, 0), TaskOptions::default()).unwrap();
    for i in 0..4 {
        s.submit(t, 0, i, Some(i as u64 % 2), i as u32).unwrap();
    }
    let mut out = Vec::new();
    s.poll(&mut out, 1, Duration::ZERO).unwrap();
    let running = out[0];
    let s2 = s.clone();
    let closer = thread::spawn(move || {
        let mut dropped = Vec::new();
        let r = s2.close(t, CloseMode::DropQueued, LONG, &mut dropped);
        (r, dropped)
    });
    thread::sleep(Duration::from_millis(30));
    assert!(
        !closer.is_finished(),
        "close returned while a record was running"
    );
    s.complete(running).unwrap();
    let (r, mut dropped) = closer.join().unwrap();
    r.unwrap();
    dropped.sort();
    let mut expect: Vec<u32> = (0..4).filter(|&x| x != running).collect();
    expect.sort();
    assert_eq!(dropped, expect);
    assert_eq!(
        s.submit(t, 0, 9, None, 9),
        Err(Error::TaskClosed(tid(1, 0)))
    );
    s.remove_task(t).unwrap();
    assert_eq!(s.has_capacity(t), Err(Error::UnknownTask));
    assert_eq!(s.metrics().totals.dropped, 3);
}

#[test]
fn failure_is_kept_for_the_owner_and_stops_the_task() {
    let s = sched(10);
    let t = s.register_task(tid(2, 5), TaskOptions::default()).unwrap();
    s.submit(t, 1, 100, Some(1), 0).unwrap();
    s.submit(t, 1, 101, Some(2), 1).unwrap();
    s.submit(t, 1, 102, Some(1), 2).unwrap();
    let mut out = Vec::new();
    s.poll(&mut out, 1, Duration::ZERO).unwrap();
    s.fail(out[0]).unwrap();
    let f = s.failure(t).unwrap().unwrap();
    assert_eq!(
        (f.task, f.partition, f.offset, f.slot),
        (tid(2, 5), 1, 100, 0)
    );
    assert_eq!(
        f.to_string(),
        "task 2_5 failed at partition 1 offset 100 (slot 0)"
    );
    // Nothing more is dispatched or accepted; the watermark stays at the failed offset.
    out.clear();
    assert_eq!(s.poll(&mut out, 10, Duration::ZERO).unwrap(), 0);
    assert!(matches!(
        s.submit(t, 1, 103, None, 3),
        Err(Error::TaskFailed(_))
    ));
    assert!(matches!(s.drain(&[t], LONG), Err(Error::TaskFailed(_))));
    assert_eq!(
        s.partition_progress(t, 1).unwrap().lowest_unfinished,
        Some(100)
    );
    let mut dropped = Vec::new();
    s.close(t, CloseMode::DropQueued, LONG, &mut dropped)
        .unwrap();
    dropped.sort();
    assert_eq!(dropped, vec![1, 2]);
}

#[test]
fn unordered_null_keys_run_together_serial_ones_do_not() {
    let s = sched(10);
    let serial = s.register_task(tid(0, 0), TaskOptions::default()).unwrap();
    let unordered = s
        .register_task(
            tid(0, 1),
            TaskOptions {
                null_keys: NullKeyOrdering::Unordered,
                max_inflight: None,
            },
        )
        .unwrap();
    for i in 0..3u32 {
        s.submit(serial, 0, i as i64, None, i).unwrap();
        s.submit(unordered, 0, i as i64, None, 3 + i).unwrap();
    }
    let mut out = Vec::new();
    s.poll(&mut out, 10, Duration::ZERO).unwrap();
    out.sort();
    assert_eq!(out, vec![0, 3, 4, 5]);
}

#[test]
fn caps_and_capacity_query() {
    let s = Scheduler::new(SchedulerConfig {
        max_inflight: 3,
        max_inflight_per_task: 2,
        ..SchedulerConfig::default()
    })
    .unwrap();
    let a = s.register_task(tid(0, 0), TaskOptions::default()).unwrap();
    let b = s.register_task(tid(0, 1), TaskOptions::default()).unwrap();
    assert_eq!(
        s.submit(a, 0, 0, Some(1), 0),
        Ok(streamshard_core::Capacity::Available)
    );
    assert_eq!(
        s.submit(a, 0, 1, Some(2), 1),
        Ok(streamshard_core::Capacity::TaskFull)
    );
    assert_eq!(s.has_capacity(a), Ok(false));
    assert!(matches!(
        s.submit(a, 0, 2, Some(3), 2),
        Err(Error::TaskAtCapacity { cap: 2, .. })
    ));
    assert_eq!(
        s.submit(b, 0, 0, Some(1), 2),
        Ok(streamshard_core::Capacity::GlobalFull)
    );
    assert_eq!(s.has_capacity(b), Ok(false));
    let mut out = Vec::new();
    s.poll(&mut out, 3, Duration::ZERO).unwrap();
    s.complete(0).unwrap();
    assert_eq!(s.has_capacity(a), Ok(true));
    assert_eq!(s.has_capacity(b), Ok(true));
}

#[test]
fn bad_config_and_input_are_errors_not_panics() {
    for (cfg, name) in [
        (
            SchedulerConfig {
                max_inflight: 0,
                ..Default::default()
            },
            "max_inflight",
        ),
        (
            SchedulerConfig {
                max_inflight_per_task: 0,
                ..Default::default()
            },
            "max_inflight_per_task",
        ),
        (
            SchedulerConfig {
                max_tasks: 0,
                ..Default::default()
            },
            "max_tasks",
        ),
        (
            SchedulerConfig {
                max_partitions_per_task: 1 << 20,
                ..Default::default()
            },
            "max_partitions_per_task",
        ),
        (
            SchedulerConfig {
                timing_sample_shift: 60,
                ..Default::default()
            },
            "timing_sample_shift",
        ),
    ] {
        match Scheduler::new(cfg) {
            Err(Error::InvalidConfig { name: n, .. }) => assert_eq!(n, name),
            other => panic!("expected invalid {name}, got {:?}", other.err()),
        }
    }
    let s = Scheduler::new(SchedulerConfig {
        max_inflight: 4,
        max_tasks: 1,
        max_partitions_per_task: 2,
        ..Default::default()
    })
    .unwrap();
    let t = s.register_task(tid(0, 0), TaskOptions::default()).unwrap();
    assert_eq!(
        s.register_task(tid(0, 0), TaskOptions::default()),
        Err(Error::TaskExists(tid(0, 0)))
    );
    assert_eq!(
        s.register_task(tid(0, 1), TaskOptions::default()),
        Err(Error::TooManyTasks { max: 1 })
    );
    assert!(matches!(
        s.register_task(
            tid(0, 1),
            TaskOptions {
                max_inflight: Some(0),
                ..Default::default()
            }
        ),
        Err(Error::InvalidConfig { .. })
    ));
    assert_eq!(
        s.submit(t, 0, 0, None, 4),
        Err(Error::SlotOutOfRange { slot: 4, slots: 4 })
    );
    assert_eq!(
        s.submit(t, 2, 0, None, 0),
        Err(Error::PartitionOutOfRange {
            partition: 2,
            max: 2
        })
    );
    let bogus = streamshard_core::TaskHandle::from_raw(u64::MAX);
    assert_eq!(s.submit(bogus, 0, 0, None, 0), Err(Error::UnknownTask));
    assert_eq!(s.has_capacity(bogus), Err(Error::UnknownTask));
    assert_eq!(
        s.complete(u32::MAX),
        Err(Error::SlotOutOfRange {
            slot: u32::MAX,
            slots: 4
        })
    );
    assert_eq!(s.fail(0), Err(Error::SlotNotRunning(0)));
    assert!(matches!(s.remove_task(t), Err(Error::TaskBusy { .. })));
    assert_eq!(streamshard_core::TaskHandle::from_raw(t.to_raw()), t);
}

#[test]
fn metrics_report_distributions_and_depths() {
    let s = sched(100);
    let t = s.register_task(tid(0, 0), TaskOptions::default()).unwrap();
    for i in 0..10u32 {
        s.submit(t, 0, i as i64, Some(1), i).unwrap();
    }
    let m = s.metrics();
    assert_eq!(m.tasks[0].max_key_depth, 10);
    assert_eq!(m.tasks[0].active_keys, 1);
    assert_eq!(m.key_depths.nonzero().len(), 1);
    let (lo, hi, n) = m.key_depths.nonzero()[0];
    assert!(lo <= 10 && 10 <= hi && n == 1);
    let mut out = Vec::new();
    for _ in 0..10 {
        out.clear();
        s.poll(&mut out, 1, Duration::ZERO).unwrap();
        thread::sleep(Duration::from_millis(1));
        s.complete(out[0]).unwrap();
    }
    let m = s.metrics();
    assert_eq!(m.wait_ns.count, 10);
    assert_eq!(m.run_ns.count, 10);
    assert!(
        m.run_ns.quantile(0.5).unwrap() >= 1_000_000,
        "{:?}",
        m.run_ns.quantile(0.5)
    );
    assert_eq!(m.tasks[0].finished, 10);
    assert_eq!(m.key_depths.buckets.iter().sum::<u64>(), 0);
}

#[test]
fn each_task_reports_its_own_sampled_wait_and_run_times() {
    let s = sched(100);
    let slow = s.register_task(tid(0, 0), TaskOptions::default()).unwrap();
    let quick = s.register_task(tid(0, 1), TaskOptions::default()).unwrap();
    for i in 0..4u32 {
        s.submit(slow, 0, i as i64, Some(i as u64), i).unwrap();
    }
    s.submit(quick, 0, 0, Some(1), 10).unwrap();
    let mut out = Vec::new();
    s.poll(&mut out, 5, Duration::ZERO).unwrap();
    assert_eq!(out.len(), 5);
    s.complete(10).unwrap(); // the quick task's record, at once
    thread::sleep(Duration::from_millis(20));
    for slot in 0..4u32 {
        s.complete(slot).unwrap();
    }
    let m = s.metrics();
    let of = |t: TaskId| m.tasks.iter().find(|x| x.task == t).unwrap().clone();
    let (a, b) = (of(tid(0, 0)), of(tid(0, 1)));
    assert_eq!(
        (a.wait.count, a.run.count),
        (4, 4),
        "every record sampled (shift 0)"
    );
    assert_eq!((b.wait.count, b.run.count), (1, 1));
    assert!(a.run.max_ns >= 20_000_000, "slow run {:?}", a.run);
    assert!(a.run.mean_ns().unwrap() >= 20_000_000.0);
    assert!(
        b.run.max_ns < 20_000_000,
        "the quick task's run is its own: {:?}",
        b.run
    );
    assert!(a.run.max_ns as f64 >= a.run.mean_ns().unwrap());
    // The scheduler-wide histogram saw all five.
    assert_eq!(m.run_ns.count, 5);
    assert_eq!(m.wait_ns.count, 5);
}

/// A submitter at a task's cap waits for room for a run of records (a quarter of the cap), not
/// for the first free place, and not past its timeout.
#[test]
fn wait_for_room_wants_a_quarter_of_the_cap() {
    let s = Arc::new(sched(100));
    let t = s
        .register_task(
            tid(0, 0),
            TaskOptions {
                max_inflight: Some(8),
                ..TaskOptions::default()
            },
        )
        .unwrap();
    assert!(
        s.wait_for_room(&[t], Duration::ZERO).unwrap(),
        "empty task has room"
    );
    for i in 0..8u32 {
        s.submit(t, 0, i as i64, Some(i as u64), i).unwrap();
    }
    let started = Instant::now();
    assert!(!s.wait_for_room(&[t], Duration::from_millis(50)).unwrap());
    assert!(started.elapsed() >= Duration::from_millis(50));
    let mut out = Vec::new();
    s.poll(&mut out, 8, Duration::ZERO).unwrap();
    assert_eq!(out.len(), 8);
    // One free place is not yet room (2 wanted): the waiter goes on waiting.
    s.complete(out[0]).unwrap();
    assert!(!s.wait_for_room(&[t], Duration::from_millis(20)).unwrap());
    // Whether the waiter returned after the second completion: a flag set just before it (the
    // scheduler's lock orders the two), not the waiter's clock, which starts a thread start-up
    // later than the main thread's sleep and failed under load.
    let completed = Arc::new(AtomicBool::new(false));
    let (s2, completed2) = (s.clone(), completed.clone());
    let waiter = thread::spawn(move || {
        let started = Instant::now();
        let room = s2.wait_for_room(&[t], LONG).unwrap();
        (room, completed2.load(Ordering::SeqCst), started.elapsed())
    });
    thread::sleep(Duration::from_millis(100));
    completed.store(true, Ordering::SeqCst);
    s.complete(out[1]).unwrap();
    let (room, after_completion, waited) = waiter.join().unwrap();
    assert!(room);
    assert!(
        after_completion,
        "woke before the room was there, after {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(5),
        "not woken by the completion: {waited:?}"
    );
    // The one-shot want is cleared: no waiter left, nothing watched.
    s.complete(out[2]).unwrap();
}

/// A task held by the global cap wakes its waiter when another task's records end.
#[test]
fn wait_for_room_wakes_on_the_global_cap_freeing() {
    let s = Arc::new(
        Scheduler::new(SchedulerConfig {
            max_inflight: 8,
            max_inflight_per_task: 8,
            timing_sample_shift: 0,
            ..SchedulerConfig::default()
        })
        .unwrap(),
    );
    let full = s.register_task(tid(0, 0), TaskOptions::default()).unwrap();
    let held = s.register_task(tid(0, 1), TaskOptions::default()).unwrap();
    for i in 0..8u32 {
        s.submit(full, 0, i as i64, Some(i as u64), i).unwrap();
    }
    assert!(!s.wait_for_room(&[held], Duration::from_millis(20)).unwrap());
    let s2 = s.clone();
    let waiter = thread::spawn(move || {
        let started = Instant::now();
        (s2.wait_for_room(&[held], LONG).unwrap(), started.elapsed())
    });
    thread::sleep(Duration::from_millis(50));
    let mut out = Vec::new();
    s.poll(&mut out, 2, Duration::ZERO).unwrap();
    for slot in out {
        s.complete(slot).unwrap();
    }
    let (room, waited) = waiter.join().unwrap();
    assert!(room);
    assert!(
        waited < Duration::from_secs(5),
        "not woken by the other task's completions: {waited:?}"
    );
}

/// A failure, a close, a removed task or a shutdown ends the wait: the submitter must go on.
#[test]
fn wait_for_room_ends_on_failure_close_and_shutdown() {
    let s = Arc::new(sched(8));
    let t = s.register_task(tid(0, 0), TaskOptions::default()).unwrap();
    for i in 0..8u32 {
        s.submit(t, 0, i as i64, Some(i as u64), i).unwrap();
    }
    let s2 = s.clone();
    let waiter = thread::spawn(move || s2.wait_for_room(&[t], LONG));
    thread::sleep(Duration::from_millis(50));
    let mut out = Vec::new();
    s.poll(&mut out, 1, Duration::ZERO).unwrap();
    s.fail(out[0]).unwrap();
    assert!(waiter.join().unwrap().unwrap(), "failure ends the wait");
    assert!(
        s.wait_for_room(&[t], LONG).unwrap(),
        "a failed task never blocks a waiter"
    );

    let w = s.register_task(tid(0, 3), TaskOptions::default()).unwrap();
    assert!(
        !s.wait_for_room(&[w], Duration::from_millis(20)).unwrap(),
        "held by the global cap"
    );
    s.close(w, CloseMode::Drain, LONG, &mut Vec::new()).unwrap();
    assert!(
        s.wait_for_room(&[w], LONG).unwrap(),
        "a closed task never blocks a waiter"
    );
    s.remove_task(w).unwrap();
    assert!(
        s.wait_for_room(&[w], LONG).unwrap(),
        "nor does a removed one"
    );

    let u = s.register_task(tid(0, 1), TaskOptions::default()).unwrap();
    let v = s.register_task(tid(0, 2), TaskOptions::default()).unwrap();
    let s3 = s.clone();
    let started = Instant::now();
    // The global cap: t's 7 queued records leave one place, and u and v want two each.
    let waiter = thread::spawn(move || s3.wait_for_room(&[u, v], LONG));
    thread::sleep(Duration::from_millis(50));
    s.shutdown();
    assert!(matches!(waiter.join().unwrap(), Err(Error::Shutdown)));
    assert!(started.elapsed() < Duration::from_secs(5));
}

// ---------------------------------------------------------------------- retries (backoff)

fn invariants(s: &Scheduler) {
    if let Err(broken) = s.check_invariants() {
        panic!("invariant broken: {broken}");
    }
}

#[test]
fn a_retried_record_frees_its_worker_holds_its_key_and_runs_again_when_due() {
    let s = sched(10);
    let t = s.register_task(tid(3, 0), TaskOptions::default()).unwrap();
    s.submit(t, 0, 10, Some(1), 0).unwrap();
    s.submit(t, 0, 11, Some(1), 1).unwrap(); // behind offset 10 (same key)
    s.submit(t, 0, 12, Some(2), 2).unwrap();
    let mut out = Vec::new();
    s.poll(&mut out, 10, Duration::ZERO).unwrap();
    out.sort();
    assert_eq!(out, [0, 2]);
    let retried = Instant::now();
    s.retry(0, Duration::from_millis(50)).unwrap();
    invariants(&s);
    let m = s.metrics();
    let row = m.tasks.iter().find(|x| x.task == tid(3, 0)).unwrap();
    assert_eq!((row.retries, row.backoff), (1, 1), "published at once");
    // Its worker is free; nothing of key 1 runs meanwhile, key 2 goes on.
    out.clear();
    assert_eq!(s.poll(&mut out, 10, Duration::ZERO).unwrap(), 0);
    s.complete(2).unwrap();
    let p = s.partition_progress(t, 0).unwrap();
    assert_eq!((p.queued, p.running, p.finished), (2, 0, 1));
    assert_eq!(
        p.committable(),
        Some(10),
        "the retried offset holds the watermark"
    );
    // Due after 50 ms: a poller waiting meanwhile takes it then, not before.
    out.clear();
    assert_eq!(s.poll(&mut out, 10, LONG).unwrap(), 1);
    assert_eq!(out, [0]);
    assert!(retried.elapsed() >= Duration::from_millis(50));
    invariants(&s);
    let m = s.metrics();
    let row = m.tasks.iter().find(|x| x.task == tid(3, 0)).unwrap();
    assert_eq!(
        (row.retries, row.backoff),
        (1, 0),
        "out of backoff once due"
    );
    s.complete(0).unwrap();
    out.clear();
    s.poll(&mut out, 10, Duration::ZERO).unwrap();
    assert_eq!(
        out,
        [1],
        "the key's next record only after the retried one finished"
    );
    s.complete(1).unwrap();
    assert_eq!(s.partition_progress(t, 0).unwrap().committable(), Some(13));
    invariants(&s);
}

#[test]
fn a_sleeping_poller_wakes_for_a_retry_due_before_its_timeout() {
    let s = Arc::new(sched(4));
    let t = s.register_task(tid(3, 1), TaskOptions::default()).unwrap();
    s.submit(t, 0, 0, Some(7), 0).unwrap();
    let mut out = Vec::new();
    s.poll(&mut out, 1, Duration::ZERO).unwrap();
    let s2 = Arc::clone(&s);
    let poller = thread::spawn(move || {
        let mut got = Vec::new();
        let started = Instant::now();
        s2.poll(&mut got, 1, LONG).unwrap();
        (got, started.elapsed())
    });
    thread::sleep(Duration::from_millis(50)); // the poller is asleep, for up to 10 s
    s.retry(0, Duration::from_millis(20)).unwrap();
    let (got, waited) = poller.join().unwrap();
    assert_eq!(got, [0]);
    assert!(waited < Duration::from_secs(5), "waited {waited:?}");
    s.complete(0).unwrap();
    invariants(&s);
}

#[test]
fn a_drain_waits_for_records_in_backoff_and_a_dropping_close_drops_them() {
    let s = sched(8);
    let t = s
        .register_task(
            tid(3, 2),
            TaskOptions {
                null_keys: NullKeyOrdering::Unordered,
                ..TaskOptions::default()
            },
        )
        .unwrap();
    s.submit(t, 0, 0, Some(1), 0).unwrap();
    s.submit(t, 0, 1, Some(1), 1).unwrap();
    s.submit(t, 1, 0, None, 2).unwrap(); // unordered null key: no lane
    let mut out = Vec::new();
    s.poll(&mut out, 10, Duration::ZERO).unwrap();
    out.sort();
    assert_eq!(out, [0, 2]);
    s.retry(0, Duration::from_secs(3600)).unwrap();
    s.retry(2, Duration::from_secs(3600)).unwrap();
    invariants(&s);
    match s.drain(&[t], Duration::from_millis(30)) {
        Err(Error::DrainTimeout { remaining, .. }) => {
            assert_eq!(
                (
                    remaining[0].queued,
                    remaining[0].running,
                    remaining[0].backoff
                ),
                (3, 0, 2)
            );
            assert!(
                remaining[0].to_string().contains("2 waiting to be retried"),
                "{}",
                remaining[0]
            );
        }
        other => panic!("expected a drain timeout, got {other:?}"),
    }
    let mut dropped = Vec::new();
    s.close(t, CloseMode::DropQueued, LONG, &mut dropped)
        .unwrap();
    dropped.sort();
    assert_eq!(dropped, [0, 1, 2]);
    invariants(&s);
    s.remove_task(t).unwrap();
    // The slots are free again: a new task takes them, and nothing stale comes due.
    let u = s.register_task(tid(3, 3), TaskOptions::default()).unwrap();
    s.submit(u, 0, 0, Some(1), 0).unwrap();
    out.clear();
    assert_eq!(s.poll(&mut out, 10, Duration::ZERO).unwrap(), 1);
    invariants(&s);
}

#[test]
fn a_retry_needs_a_running_record() {
    let s = sched(4);
    let t = s.register_task(tid(3, 4), TaskOptions::default()).unwrap();
    assert_eq!(s.retry(0, Duration::ZERO), Err(Error::SlotNotRunning(0)));
    assert!(matches!(
        s.retry(9, Duration::ZERO),
        Err(Error::SlotOutOfRange { .. })
    ));
    s.submit(t, 0, 0, Some(1), 0).unwrap();
    assert_eq!(
        s.retry(0, Duration::ZERO),
        Err(Error::SlotNotRunning(0)),
        "queued, not running"
    );
    let mut out = Vec::new();
    s.poll(&mut out, 1, Duration::ZERO).unwrap();
    // Due at once: ready again without a wait.
    s.retry(0, Duration::ZERO).unwrap();
    out.clear();
    assert_eq!(s.poll(&mut out, 1, Duration::ZERO).unwrap(), 1);
    s.complete(0).unwrap();
    invariants(&s);
}

#[test]
fn a_record_in_backoff_of_a_failed_task_is_not_dispatched() {
    let s = sched(4);
    let t = s.register_task(tid(3, 5), TaskOptions::default()).unwrap();
    s.submit(t, 0, 0, Some(1), 0).unwrap();
    s.submit(t, 0, 1, Some(2), 1).unwrap();
    let mut out = Vec::new();
    s.poll(&mut out, 2, Duration::ZERO).unwrap();
    s.retry(0, Duration::from_millis(10)).unwrap();
    s.fail(1).unwrap();
    // Nothing runs: the drain reports the failure rather than waiting for the retry.
    assert!(matches!(s.drain(&[t], LONG), Err(Error::TaskFailed(_))));
    out.clear();
    assert_eq!(s.poll(&mut out, 2, Duration::from_millis(50)).unwrap(), 0);
    invariants(&s);
    let mut dropped = Vec::new();
    let _ = s.close(t, CloseMode::DropQueued, LONG, &mut dropped);
    assert_eq!(dropped, [0]);
    invariants(&s);
}
