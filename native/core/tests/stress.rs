//! Multi-threaded stress: two submitters (two tasks each), three pollers, Zipf keys.
//!
//! Workers check with atomics that a (task, key) is never held by two threads at once and that
//! each key's records arrive with consecutive sequence numbers (so in order, none lost, none
//! twice). Submitters drain their tasks now and then, as a commit would, and check that the
//! watermark is then past everything submitted. Every 13th record of a key is retried once
//! (back to its key's lane for up to a millisecond, its worker free) before it runs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use streamshard_core::{
    CloseMode, Error, Scheduler, SchedulerConfig, TaskHandle, TaskId, TaskOptions,
};
use streamshard_workload::KeyDist;

const KEYS: usize = 2_000;
const TASKS: usize = 4;
const SUBMITTERS: usize = 2;
const POLLERS: usize = 3;
const PER_TASK: u64 = 40_000;
const SLOTS_PER_SUBMITTER: u32 = 150;

struct Shared {
    sched: Scheduler,
    /// Payload per slot: task << 56 | key << 32 | seq.
    payload: Vec<AtomicU64>,
    in_use: Vec<AtomicBool>,
    last_seq: Vec<AtomicU64>,
    /// Per slot: its record was retried once already.
    retried: Vec<AtomicBool>,
    retries: AtomicU64,
    free: Vec<Mutex<Vec<u32>>>,
    processed: AtomicU64,
    violations: Mutex<Vec<String>>,
}

fn idx(task: usize, key: usize) -> usize {
    task * KEYS + key
}

/// Runs a record; false if it is to be retried instead (its first attempt, every 13th of a key).
fn work(sh: &Shared, slot: u32) -> bool {
    let p = sh.payload[slot as usize].load(SeqCst);
    let (task, key, seq) = (
        (p >> 56) as usize,
        ((p >> 32) & 0xFF_FFFF) as usize,
        p & 0xFFFF_FFFF,
    );
    let i = idx(task, key);
    if sh.in_use[i].swap(true, SeqCst) {
        sh.violations
            .lock()
            .unwrap()
            .push(format!("task {task} key {key} on two threads"));
    }
    if seq % 13 == 0 && !sh.retried[slot as usize].swap(true, SeqCst) {
        sh.in_use[i].store(false, SeqCst);
        return false;
    }
    let last = sh.last_seq[i].load(SeqCst);
    if seq != last + 1 {
        sh.violations
            .lock()
            .unwrap()
            .push(format!("task {task} key {key}: seq {seq} after {last}"));
    }
    sh.last_seq[i].store(seq, SeqCst);
    // A little work so that records overlap.
    let mut x = seq;
    for _ in 0..(seq % 64) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
    std::hint::black_box(x);
    sh.in_use[i].store(false, SeqCst);
    sh.processed.fetch_add(1, SeqCst);
    true
}

/// Sends a record back for up to a millisecond (its key waits, the worker goes on).
fn retry(sh: &Shared, slot: u32) {
    sh.retries.fetch_add(1, SeqCst);
    let delay = Duration::from_micros(slot as u64 % 3 * 500);
    sh.sched.retry(slot, delay).unwrap();
}

fn release(sh: &Shared, slot: u32) {
    sh.free[slot as usize / SLOTS_PER_SUBMITTER as usize]
        .lock()
        .unwrap()
        .push(slot);
}

#[test]
fn zipf_keys_many_threads_order_exclusivity_no_loss() {
    let sh = Arc::new(Shared {
        sched: Scheduler::new(SchedulerConfig {
            max_inflight: SLOTS_PER_SUBMITTER * SUBMITTERS as u32,
            max_inflight_per_task: 64,
            // With 3 pollers the default ratio never defers; 1 defers whenever as many records
            // run as wait, so deferred wake-ups run under real contention too.
            wake_defer_ratio: 1,
            ..SchedulerConfig::default()
        })
        .unwrap(),
        payload: (0..SLOTS_PER_SUBMITTER as usize * SUBMITTERS)
            .map(|_| AtomicU64::new(0))
            .collect(),
        in_use: (0..TASKS * KEYS).map(|_| AtomicBool::new(false)).collect(),
        last_seq: (0..TASKS * KEYS).map(|_| AtomicU64::new(0)).collect(),
        retried: (0..SLOTS_PER_SUBMITTER as usize * SUBMITTERS)
            .map(|_| AtomicBool::new(false))
            .collect(),
        retries: AtomicU64::new(0),
        free: (0..SUBMITTERS)
            .map(|s| {
                let base = s as u32 * SLOTS_PER_SUBMITTER;
                Mutex::new((base..base + SLOTS_PER_SUBMITTER).collect())
            })
            .collect(),
        processed: AtomicU64::new(0),
        violations: Mutex::new(Vec::new()),
    });
    let handles: Vec<TaskHandle> = (0..TASKS)
        .map(|t| {
            sh.sched
                .register_task(
                    TaskId {
                        subtopology: 0,
                        partition: t as u32,
                    },
                    TaskOptions::default(),
                )
                .unwrap()
        })
        .collect();

    let pollers: Vec<_> = (0..POLLERS)
        .map(|w| {
            let sh = sh.clone();
            thread::spawn(move || {
                let mut out = Vec::new();
                let mut done = Vec::new();
                loop {
                    out.clear();
                    // Alternate styles: batched complete+poll, and one-by-one.
                    let r = if w % 2 == 0 {
                        let r = sh.sched.complete_and_poll(
                            &done,
                            &mut out,
                            8,
                            Duration::from_millis(5),
                        );
                        for &s in &done {
                            release(&sh, s);
                        }
                        done.clear();
                        r
                    } else {
                        sh.sched.poll(&mut out, 1 + w, Duration::from_millis(5))
                    };
                    match r {
                        Ok(_) => {}
                        Err(Error::Shutdown) => return,
                        Err(e) => panic!("poll: {e}"),
                    }
                    for &slot in &out {
                        if !work(&sh, slot) {
                            retry(&sh, slot);
                            continue;
                        }
                        if w % 2 == 0 {
                            done.push(slot);
                        } else {
                            sh.sched.complete(slot).unwrap();
                            release(&sh, slot);
                        }
                    }
                }
            })
        })
        .collect();

    // The scheduler's invariants, checked under its lock every millisecond while it runs.
    let checking = Arc::new(AtomicBool::new(true));
    let checker = {
        let (sh, checking) = (sh.clone(), checking.clone());
        thread::spawn(move || {
            let mut checks = 0u64;
            while checking.load(SeqCst) {
                if let Err(broken) = sh.sched.check_invariants() {
                    panic!("invariant broken after {checks} checks: {broken}");
                }
                checks += 1;
                thread::sleep(Duration::from_millis(1));
            }
            checks
        })
    };

    let submitters: Vec<_> = (0..SUBMITTERS)
        .map(|s| {
            let sh = sh.clone();
            let mine: Vec<(usize, TaskHandle)> = (0..TASKS)
                .filter(|t| t % SUBMITTERS == s)
                .map(|t| (t, handles[t]))
                .collect();
            thread::spawn(move || {
                let mut keys = KeyDist::Zipf {
                    keys: KEYS as u64,
                    s: 1.1,
                }
                .sampler(s as u64 + 1)
                .unwrap();
                let mut seqs = vec![0u64; TASKS * KEYS];
                let mut offsets = [[0i64; 2]; TASKS];
                let mut sent = [0u64; TASKS];
                let mut turn = 0usize;
                while sent.iter().sum::<u64>() < PER_TASK * mine.len() as u64 {
                    turn += 1;
                    let (t, h) = mine[turn % mine.len()];
                    if sent[t] == PER_TASK {
                        continue;
                    }
                    if !sh.sched.has_capacity(h).unwrap() {
                        thread::yield_now();
                        continue;
                    }
                    let Some(slot) = sh.free[s].lock().unwrap().pop() else {
                        thread::yield_now();
                        continue;
                    };
                    let key = keys.next_key() as usize;
                    let seq = seqs[idx(t, key)] + 1;
                    let p = turn % 2;
                    let offset = offsets[t][p] + 1 + (turn % 3) as i64; // gaps
                    sh.payload[slot as usize]
                        .store((t as u64) << 56 | (key as u64) << 32 | seq, SeqCst);
                    sh.retried[slot as usize].store(false, SeqCst);
                    match sh.sched.submit(
                        h,
                        p as u32,
                        offset,
                        Some(streamshard_workload::key_hash(key as u64)),
                        slot,
                    ) {
                        Ok(_) => {
                            seqs[idx(t, key)] = seq;
                            offsets[t][p] = offset;
                            sent[t] += 1;
                        }
                        Err(Error::GlobalAtCapacity { .. } | Error::TaskAtCapacity { .. }) => {
                            sh.free[s].lock().unwrap().push(slot);
                            thread::yield_now();
                        }
                        Err(e) => panic!("submit: {e}"),
                    }
                    // A commit now and then: drain, then the watermark is past everything.
                    if sent[t] % 5_000 == 0 {
                        sh.sched.drain(&[h], Duration::from_secs(30)).unwrap();
                        for part in 0..2u32 {
                            let pr = sh.sched.partition_progress(h, part).unwrap();
                            assert_eq!(pr.lowest_unfinished, None);
                            assert_eq!(pr.queued + pr.running, 0);
                            assert_eq!(pr.committable(), pr.last_submitted.map(|o| o + 1));
                        }
                    }
                }
                seqs
            })
        })
        .collect();

    let mut expected = vec![0u64; TASKS * KEYS];
    for s in submitters {
        for (i, v) in s.join().unwrap().into_iter().enumerate() {
            expected[i] = expected[i].max(v);
        }
    }
    sh.sched.drain(&handles, Duration::from_secs(60)).unwrap();
    checking.store(false, SeqCst);
    let checks = checker.join().expect("the invariant checker");
    assert!(checks > 0, "the invariants were never checked");
    sh.sched.check_invariants().unwrap();
    assert_eq!(sh.processed.load(SeqCst), PER_TASK * TASKS as u64);
    assert!(
        sh.retries.load(SeqCst) > PER_TASK / 20,
        "retries: {}",
        sh.retries.load(SeqCst)
    );
    let violations = sh.violations.lock().unwrap().clone();
    assert!(
        violations.is_empty(),
        "{} violations, first: {:?}",
        violations.len(),
        &violations[..violations.len().min(5)]
    );
    for (i, &e) in expected.iter().enumerate() {
        assert_eq!(sh.last_seq[i].load(SeqCst), e, "task/key index {i}");
    }
    for &h in &handles {
        sh.sched
            .close(h, CloseMode::Drain, Duration::from_secs(5), &mut Vec::new())
            .unwrap();
        sh.sched.remove_task(h).unwrap();
    }
    let m = sh.sched.metrics();
    assert_eq!(m.totals.finished, PER_TASK * TASKS as u64);
    assert_eq!((m.totals.queued, m.totals.running), (0, 0));
    sh.sched.shutdown();
    for p in pollers {
        p.join().unwrap();
    }
}
