//! Pollers that wait outside the scheduler (`SchedulerConfig::external_waits`, the JVM's virtual
//! workers): who is counted idle, which operation owes a wake-up, and that no wake-up is lost
//! when many pollers park and unpark themselves.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use streamshard_core::{take_owed_wakes, Error, Scheduler, SchedulerConfig, TaskId, TaskOptions};

fn sched(slots: u32, wake_defer_ratio: u32) -> Scheduler {
    Scheduler::new(SchedulerConfig {
        max_inflight: slots,
        max_inflight_per_task: slots,
        wake_defer_ratio,
        external_waits: true,
        ..SchedulerConfig::default()
    })
    .unwrap()
}

fn tid(p: u32) -> TaskId {
    TaskId {
        subtopology: 0,
        partition: p,
    }
}

#[test]
fn an_idle_poller_is_owed_one_wake_up_by_the_submit_that_readies_work() {
    let s = sched(16, 0);
    let t = s.register_task(tid(0), TaskOptions::default()).unwrap();
    let mut out = Vec::new();
    let p = s.poll_or_idle(&[], false, &mut out, 1).unwrap();
    assert_eq!(
        (p.taken, p.due_in),
        (0, None),
        "nothing ready: idle, nothing due"
    );
    assert_eq!(take_owed_wakes(), 0);

    s.submit(t, 0, 0, Some(1), 0).unwrap();
    assert_eq!(
        take_owed_wakes(),
        1,
        "the idle poller is woken for the first ready record"
    );
    assert_eq!(take_owed_wakes(), 0, "taking the count resets it");
    // A second record of the same task joins the ring the woken poller will serve: no wake-up.
    s.submit(t, 0, 1, Some(2), 1).unwrap();
    assert_eq!(take_owed_wakes(), 0, "wake-ups chain from the woken poller");

    // The woken poller takes one record and, leaving one behind with nobody else idle, owes none.
    let p = s.poll_or_idle(&[], true, &mut out, 1).unwrap();
    assert_eq!(p.taken, 1);
    assert_eq!(take_owed_wakes(), 0);
    // Its next call completes that record and takes the other.
    let done = out[0];
    out.clear();
    let p = s.poll_or_idle(&[done], false, &mut out, 1).unwrap();
    assert_eq!(p.taken, 1);
    s.check_invariants().unwrap();
}

#[test]
fn a_poller_that_leaves_work_behind_owes_a_wake_up_to_another_idle_one() {
    let s = sched(16, 0);
    let t = s.register_task(tid(0), TaskOptions::default()).unwrap();
    let mut out = Vec::new();
    // Two pollers go idle.
    s.poll_or_idle(&[], false, &mut out, 1).unwrap();
    s.poll_or_idle(&[], false, &mut out, 1).unwrap();
    s.submit(t, 0, 0, Some(1), 0).unwrap();
    s.submit(t, 0, 1, Some(2), 1).unwrap();
    assert_eq!(
        take_owed_wakes(),
        1,
        "one wake-up for the task entering the ring"
    );
    // The woken one takes a record and leaves the other behind: it owes the second idle poller
    // a wake-up.
    let p = s.poll_or_idle(&[], true, &mut out, 1).unwrap();
    assert_eq!(p.taken, 1);
    assert_eq!(take_owed_wakes(), 1, "the chained wake-up");
    let p = s.poll_or_idle(&[], true, &mut out, 1).unwrap();
    assert_eq!(p.taken, 1);
    assert_eq!(take_owed_wakes(), 0);
    // A task entering the ring wakes a poller of its own.
    let u = s.register_task(tid(1), TaskOptions::default()).unwrap();
    s.poll_or_idle(&[], false, &mut out, 1).unwrap();
    s.submit(u, 0, 0, Some(1), 2).unwrap();
    assert_eq!(take_owed_wakes(), 1);
    s.check_invariants().unwrap();
}

#[test]
fn an_idle_poller_learns_when_a_record_in_backoff_is_due() {
    let s = sched(16, 0);
    let t = s.register_task(tid(0), TaskOptions::default()).unwrap();
    s.submit(t, 0, 0, Some(1), 0).unwrap();
    take_owed_wakes();
    let mut out = Vec::new();
    assert_eq!(s.poll_or_idle(&[], false, &mut out, 1).unwrap().taken, 1);
    s.retry(out[0], Duration::from_millis(300)).unwrap();
    let p = s.poll_or_idle(&[], false, &mut out, 1).unwrap();
    assert_eq!(p.taken, 0);
    let due = p.due_in.expect("a record is in backoff");
    assert!(
        due > Duration::from_millis(200) && due <= Duration::from_millis(300),
        "due in {due:?}"
    );
    thread::sleep(due);
    out.clear();
    let p = s.poll_or_idle(&[], true, &mut out, 1).unwrap();
    assert_eq!(
        (p.taken, out[0]),
        (1, 0),
        "the retried record runs once due"
    );
}

#[test]
fn shutdown_answers_every_poller_and_owes_nothing() {
    let s = sched(16, 0);
    let mut out = Vec::new();
    s.poll_or_idle(&[], false, &mut out, 1).unwrap();
    s.shutdown();
    assert!(matches!(
        s.poll_or_idle(&[], true, &mut out, 1),
        Err(Error::Shutdown)
    ));
    assert_eq!(take_owed_wakes(), 0);
}

/// The caller's side of external waits, as the JVM does it: a counting semaphore of wake-ups.
#[derive(Default)]
struct Permits {
    n: Mutex<u64>,
    cv: Condvar,
}

impl Permits {
    fn release(&self, k: u32) {
        if k > 0 {
            *self.n.lock().unwrap() += k as u64;
            self.cv.notify_all();
        }
    }

    /// Waits for a permit up to `timeout`; true if one was taken.
    fn acquire(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut n = self.n.lock().unwrap();
        while *n == 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            n = self.cv.wait_timeout(n, deadline - now).unwrap().0;
        }
        *n -= 1;
        true
    }
}

/// Many pollers park on the caller's side with a timeout far longer than the test: a lost
/// wake-up would leave ready records unrun until it, and the test fails on its deadline.
/// Records of 64 keys, submitted from one thread in bursts (so pollers keep running dry and
/// parking); per-key order and one record per key at a time are checked as they run.
#[test]
fn no_wake_up_is_lost_among_many_parked_pollers() {
    const SLOTS: u32 = 256;
    const KEYS: u64 = 64;
    const RECORDS: u64 = 20_000;
    for ratio in [0, 16] {
        let s = Arc::new(sched(SLOTS, ratio));
        let t = s.register_task(tid(0), TaskOptions::default()).unwrap();
        let permits = Arc::new(Permits::default());
        // Per key: the next offset expected to run, and whether one is running.
        let next: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(AtomicU64::new).collect());
        let busy: Arc<Vec<AtomicBool>> =
            Arc::new((0..KEYS).map(|_| AtomicBool::new(false)).collect());
        let offsets: Arc<Vec<AtomicU64>> =
            Arc::new((0..SLOTS).map(|_| AtomicU64::new(0)).collect());
        // Slots whose record the scheduler has as finished: free for the submitter again.
        let free = Arc::new(Mutex::new((0..SLOTS).rev().collect::<Vec<u32>>()));
        let ran = Arc::new(AtomicU64::new(0));
        let pollers: Vec<_> = (0..16)
            .map(|_| {
                let s = s.clone();
                let permits = permits.clone();
                let (next, busy, offsets) = (next.clone(), busy.clone(), offsets.clone());
                let (free, ran) = (free.clone(), ran.clone());
                thread::spawn(move || {
                    let mut out = Vec::new();
                    let mut done: Option<u32> = None;
                    let mut idle = false;
                    loop {
                        out.clear();
                        let finished: &[u32] = match &done {
                            Some(d) => std::slice::from_ref(d),
                            None => &[],
                        };
                        let p = match s.poll_or_idle(finished, idle, &mut out, 1) {
                            Ok(p) => p,
                            Err(Error::Shutdown) => return,
                            Err(e) => panic!("{e}"),
                        };
                        permits.release(take_owed_wakes());
                        if let Some(d) = done.take() {
                            free.lock().unwrap().push(d);
                        }
                        if p.taken == 0 {
                            idle = true;
                            permits.acquire(Duration::from_secs(60));
                            continue;
                        }
                        idle = false;
                        let slot = out[0];
                        let offset = offsets[slot as usize].load(Ordering::Acquire);
                        let key = (offset % KEYS) as usize;
                        assert!(
                            !busy[key].swap(true, Ordering::AcqRel),
                            "key {key} on two pollers at once"
                        );
                        assert_eq!(
                            next[key].fetch_add(KEYS, Ordering::AcqRel),
                            offset,
                            "key {key} out of order"
                        );
                        if offset % 97 == 0 {
                            thread::sleep(Duration::from_micros(200));
                        }
                        busy[key].store(false, Ordering::Release);
                        ran.fetch_add(1, Ordering::Relaxed);
                        done = Some(slot);
                    }
                })
            })
            .collect();

        let deadline = Instant::now() + Duration::from_secs(30);
        for offset in 0..RECORDS {
            let slot = loop {
                if let Some(slot) = free.lock().unwrap().pop() {
                    break slot;
                }
                assert!(
                    Instant::now() < deadline,
                    "stalled: {} of {RECORDS} ran (a lost wake-up)",
                    ran.load(Ordering::Relaxed)
                );
                thread::yield_now();
            };
            offsets[slot as usize].store(offset, Ordering::Release);
            s.submit(t, 0, offset as i64, Some(offset % KEYS), slot)
                .unwrap();
            permits.release(take_owed_wakes());
            if offset % 500 == 499 {
                // A burst ends: let the pollers run dry and park.
                thread::sleep(Duration::from_millis(2));
            }
        }
        s.drain(&[t], Duration::from_secs(30)).unwrap_or_else(|e| {
            panic!(
                "drain (a lost wake-up?): {e}; {} ran",
                ran.load(Ordering::Relaxed)
            )
        });
        assert_eq!(ran.load(Ordering::Relaxed), RECORDS);
        s.shutdown();
        permits.release(1_000);
        for p in pollers {
            p.join().unwrap();
        }
        s.check_invariants().unwrap();
    }
}
