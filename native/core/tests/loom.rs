//! Model check of the wake-up and hand-off path with loom: every interleaving of a few threads
//! is explored. A lost wake-up shows up as a deadlock (loom's condvar waits ignore timeouts, so
//! a poller or drainer that is never signalled blocks forever), a record handed out twice or to
//! two threads of one key as a failed assertion.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p streamshard-core --test loom --release`
//! (scripts/test.sh does, in its own target directory).
#![cfg(loom)]

use std::time::Duration;

use loom::sync::atomic::{AtomicU32, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;
use streamshard_core::{
    take_owed_wakes, Error, Scheduler, SchedulerConfig, TaskHandle, TaskId, TaskOptions,
};

const FOREVER: Duration = Duration::from_secs(3600);

/// `wake_defer_ratio`: 0 wakes a sleeping worker for every task that gets ready work (the tests
/// that need records to run at once); 1 lets one ready record wait for one running record.
fn setup(wake_defer_ratio: u32) -> (Arc<Scheduler>, TaskHandle) {
    setup_with(SchedulerConfig {
        wake_defer_ratio,
        ..small()
    })
}

/// Four slots, one partition: small enough for loom to explore every interleaving.
fn small() -> SchedulerConfig {
    SchedulerConfig {
        max_inflight: 4,
        max_inflight_per_task: 4,
        max_tasks: 2,
        max_partitions_per_task: 1,
        timing_sample_shift: 0,
        wake_defer_ratio: 0,
        external_waits: false,
    }
}

fn setup_with(config: SchedulerConfig) -> (Arc<Scheduler>, TaskHandle) {
    let s = Scheduler::new(config).unwrap();
    let t = s
        .register_task(
            TaskId {
                subtopology: 0,
                partition: 0,
            },
            TaskOptions::default(),
        )
        .unwrap();
    (Arc::new(s), t)
}

/// A worker: polls one record at a time (blocking), completes it, until shut down. Counts how
/// many records it ran and checks no key is held twice (`held` has one bit per key). With
/// `meet > 0`, each of the first `meet` records waits until that many are running at once: a
/// worker that should have been woken but was not then never arrives, and loom reports the
/// deadlock.
fn worker(
    s: Arc<Scheduler>,
    held: Arc<AtomicU32>,
    ran: Arc<AtomicU32>,
    key_of: fn(u32) -> u32,
    meet: u32,
) {
    let mut out = Vec::new();
    let mut done: Vec<u32> = Vec::new();
    loop {
        out.clear();
        match s.complete_and_poll(&done, &mut out, 1, FOREVER) {
            Ok(_) => {}
            Err(Error::Shutdown) => return,
            Err(e) => panic!("{e}"),
        }
        done.clear();
        for &slot in &out {
            let bit = 1 << key_of(slot);
            assert_eq!(held.fetch_or(bit, SeqCst) & bit, 0, "key held twice");
            let n = ran.fetch_add(1, SeqCst) + 1;
            if n <= meet {
                while ran.load(SeqCst) < meet {
                    thread::yield_now();
                }
            }
            held.fetch_and(!bit, SeqCst);
            done.push(slot);
        }
    }
}

/// Model-checks `f`. A bound of two preemptions per execution finds the classic lost-wake-up
/// orderings and keeps the search to seconds.
fn check(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(f);
}

/// A [`worker`] thread on its own clones of the shared state.
fn spawn_worker(
    s: &Arc<Scheduler>,
    held: &Arc<AtomicU32>,
    ran: &Arc<AtomicU32>,
    key_of: fn(u32) -> u32,
) -> thread::JoinHandle<()> {
    let (s, held, ran) = (s.clone(), held.clone(), ran.clone());
    thread::spawn(move || worker(s, held, ran, key_of, 0))
}

fn run(
    records: &'static [(u32, u64)],
    workers: usize,
    key_of: fn(u32) -> u32,
    meet: u32,
    wake_defer_ratio: u32,
) {
    check(move || {
        let (s, t) = setup(wake_defer_ratio);
        let held = Arc::new(AtomicU32::new(0));
        let ran = Arc::new(AtomicU32::new(0));
        let pool: Vec<_> = (0..workers)
            .map(|_| {
                let (s, held, ran) = (s.clone(), held.clone(), ran.clone());
                thread::spawn(move || worker(s, held, ran, key_of, meet))
            })
            .collect();
        for (i, &(slot, key)) in records.iter().enumerate() {
            s.submit(t, 0, i as i64, Some(key), slot).unwrap();
        }
        // Returns only if every record was dispatched and completed: a lost wake-up of a
        // worker or of this drainer deadlocks, which loom reports.
        s.drain(&[t], FOREVER).unwrap();
        assert_eq!(ran.load(SeqCst), records.len() as u32);
        s.shutdown();
        for w in pool {
            w.join().unwrap();
        }
    });
}

#[test]
fn two_keys_two_workers_submit_wakes_a_sleeping_worker() {
    run(&[(0, 0), (1, 1)], 2, |slot| slot, 0, 0);
}

#[test]
fn two_keys_two_workers_run_at_once() {
    // The first worker takes one record and leaves one behind: it must wake the other worker
    // (or the other must find it), or the two never run together.
    run(&[(0, 0), (1, 1)], 2, |slot| slot, 2, 0);
}

#[test]
fn one_key_completion_hands_the_next_record_over() {
    // Both records of key 0: the second becomes ready only when the first completes.
    run(&[(0, 0), (1, 0)], 2, |_| 0, 0, 0);
}

#[test]
fn one_worker_three_records_chain() {
    run(
        &[(0, 0), (1, 1), (2, 0)],
        1,
        |slot| if slot == 1 { 1 } else { 0 },
        0,
        0,
    );
}

#[test]
fn a_submitter_at_its_cap_is_woken_by_a_completion() {
    // The task is at its cap (4 of 4): the submitter waits for room; the worker's completion
    // must wake it (a lost wake-up deadlocks), and the record it then submits runs too.
    check(|| {
        let (s, t) = setup(0);
        let held = Arc::new(AtomicU32::new(0));
        let ran = Arc::new(AtomicU32::new(0));
        for i in 0..4u32 {
            s.submit(t, 0, i as i64, Some(i as u64), i).unwrap();
        }
        let w = spawn_worker(&s, &held, &ran, |slot| slot % 4);
        assert!(s.wait_for_room(&[t], FOREVER).unwrap());
        // Room means a place is free; the slot of a finished record is free again.
        let free = (0..4u32)
            .find(|&slot| s.submit(t, 0, 10 + slot as i64, Some(3), slot).is_ok())
            .expect("room, but no slot accepted");
        let _ = free;
        s.drain(&[t], FOREVER).unwrap();
        assert_eq!(ran.load(SeqCst), 5);
        s.shutdown();
        w.join().unwrap();
    });
}

#[test]
fn deferred_work_is_taken_by_the_running_worker() {
    // Ratio 1: the second record may become ready while the first runs and the other worker
    // sleeps; no one wakes that worker, so the first one must take the record when it finishes
    // (a deferral that loses it deadlocks). The same with three records and one key between.
    run(&[(0, 0), (1, 1)], 2, |slot| slot, 0, 1);
    run(
        &[(0, 0), (1, 1), (2, 0)],
        2,
        |slot| if slot == 1 { 1 } else { 0 },
        0,
        1,
    );
}

/// This thread runs record 0 (key 0) as a worker would and ends it with `end`, never polling
/// again, while a worker sleeps and a record of key 1 is submitted; the drain must return with
/// `runs` records run by the worker (a lost wake-up deadlocks).
fn ended_here(wake_defer_ratio: u32, end: fn(&Scheduler, u32), runs: u32) {
    check(move || {
        let (s, t) = setup(wake_defer_ratio);
        let held = Arc::new(AtomicU32::new(0));
        let ran = Arc::new(AtomicU32::new(0));
        s.submit(t, 0, 0, Some(0), 0).unwrap();
        let mut out = Vec::new();
        assert_eq!(s.poll(&mut out, 1, Duration::ZERO).unwrap(), 1);
        let w = spawn_worker(&s, &held, &ran, |slot| slot);
        s.submit(t, 0, 1, Some(1), 1).unwrap();
        end(&s, out[0]);
        s.drain(&[t], FOREVER).unwrap();
        assert_eq!(ran.load(SeqCst), runs);
        s.shutdown();
        w.join().unwrap();
    });
}

#[test]
fn complete_alone_wakes_a_worker_for_deferred_work() {
    // Record 1 became ready while record 0 ran (deferred: ratio 1); `complete` alone must get a
    // sleeping worker woken for it.
    ended_here(1, |s, slot| s.complete(slot).unwrap(), 1);
}

#[test]
fn a_retry_due_at_once_wakes_a_worker() {
    // Record 0 is sent back, due at once, instead of completed: ready again, it must get a
    // sleeping worker woken (with and without deferral), and record 1 runs too.
    for ratio in [0, 1] {
        ended_here(ratio, |s, slot| s.retry(slot, Duration::ZERO).unwrap(), 2);
    }
}

/// Permits for parked virtual workers, as the JVM's `Semaphore` in `ShardExecutor`: `release(n)`
/// for the wake-ups a scheduler call owes, `acquire` to park (under loom the wait has no
/// timeout, so a wake-up that is owed but never paid deadlocks).
struct Permits {
    n: loom::sync::Mutex<u32>,
    cv: loom::sync::Condvar,
}

impl Permits {
    fn new() -> Self {
        Permits {
            n: loom::sync::Mutex::new(0),
            cv: loom::sync::Condvar::new(),
        }
    }

    fn release(&self, k: u32) {
        if k > 0 {
            *self.n.lock().unwrap() += k;
            self.cv.notify_all();
        }
    }

    fn acquire(&self) {
        let mut n = self.n.lock().unwrap();
        while *n == 0 {
            n = self.cv.wait(n).unwrap();
        }
        *n -= 1;
    }
}

/// A virtual worker (`ShardExecutor.parkingLoop`): never waits in the scheduler; finding nothing
/// it parks on `permits`, and pays every wake-up its calls owe.
fn parking_worker(
    s: Arc<Scheduler>,
    permits: Arc<Permits>,
    held: Arc<AtomicU32>,
    ran: Arc<AtomicU32>,
) {
    let mut out = Vec::new();
    let mut done: Vec<u32> = Vec::new();
    let mut idle = false;
    loop {
        out.clear();
        let polled = match s.poll_or_idle(&done, idle, &mut out, 1) {
            Ok(p) => p,
            Err(Error::Shutdown) => return,
            Err(e) => panic!("{e}"),
        };
        done.clear();
        permits.release(take_owed_wakes());
        idle = polled.taken == 0;
        if idle {
            permits.acquire();
            continue;
        }
        let slot = out[0];
        let bit = 1 << slot;
        assert_eq!(held.fetch_or(bit, SeqCst) & bit, 0, "key held twice");
        ran.fetch_add(1, SeqCst);
        held.fetch_and(!bit, SeqCst);
        done.push(slot);
    }
}

#[test]
fn parked_virtual_workers_are_woken_for_every_record() {
    // Two parking workers, records of two keys submitted while they may be parked or polling:
    // every submission's owed wake-up must reach one of them, or the drain never returns.
    check(|| {
        let (s, t) = setup_with(SchedulerConfig {
            external_waits: true,
            ..small()
        });
        let permits = Arc::new(Permits::new());
        let held = Arc::new(AtomicU32::new(0));
        let ran = Arc::new(AtomicU32::new(0));
        let pool: Vec<_> = (0..2)
            .map(|_| {
                let (s, p, h, r) = (s.clone(), permits.clone(), held.clone(), ran.clone());
                thread::spawn(move || parking_worker(s, p, h, r))
            })
            .collect();
        for slot in 0..2u32 {
            s.submit(t, 0, slot as i64, Some(slot as u64), slot)
                .unwrap();
            permits.release(take_owed_wakes());
        }
        s.drain(&[t], FOREVER).unwrap();
        assert_eq!(ran.load(SeqCst), 2);
        s.shutdown();
        // Shutdown wakes every parked worker, as ShardExecutor.shutdown does.
        permits.release(2);
        for w in pool {
            w.join().unwrap();
        }
    });
}
