//! Drivers shared by the benchmarks: the same loops are timed by criterion (`cycle`, `threads`)
//! and counted by the allocation benchmark.

#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use streamshard_core::{
    Error, Scheduler, SchedulerConfig, Submission, TaskHandle, TaskId, TaskOptions,
};
use streamshard_workload::{key_hash, KeyDist};

/// Pre-drawn key hashes, so that drawing keys is not part of what is measured.
pub fn key_table(dist: &KeyDist, n: usize) -> Vec<u64> {
    let mut s = dist.sampler(0x5eed).expect("valid distribution");
    (0..n).map(|_| key_hash(s.next_key())).collect()
}

pub fn dists() -> Vec<(String, KeyDist)> {
    let mut v = Vec::new();
    for keys in [1u64, 1_000, 100_000] {
        v.push((format!("uniform/{keys}"), KeyDist::Uniform { keys }));
        if keys > 1 {
            v.push((format!("zipf1.1/{keys}"), KeyDist::Zipf { keys, s: 1.1 }));
        }
    }
    v
}

/// A scheduler with `tasks` registered tasks.
pub fn scheduler(slots: u32, tasks: u32) -> (Scheduler, Vec<TaskHandle>) {
    let s = Scheduler::new(SchedulerConfig {
        max_inflight: slots,
        max_inflight_per_task: slots,
        ..SchedulerConfig::default()
    })
    .expect("valid config");
    let handles = (0..tasks)
        .map(|p| {
            s.register_task(
                TaskId {
                    subtopology: 0,
                    partition: p,
                },
                TaskOptions::default(),
            )
            .expect("register")
        })
        .collect();
    (s, handles)
}

/// Single-threaded steady state: `window` records in flight; each step submits one record,
/// polls one and completes it. Returns the time of `iters` steps (after filling the window).
pub struct Cycle {
    sched: Scheduler,
    tasks: Vec<TaskHandle>,
    keys: Vec<u64>,
    free: Vec<u32>,
    out: Vec<u32>,
    next: usize,
    offset: i64,
}

impl Cycle {
    pub fn new(keys: Vec<u64>, window: u32) -> Self {
        // Two spare slots: one for the record being submitted, one for the record a
        // worker-style step still holds.
        let (sched, tasks) = scheduler(window + 2, 1);
        let mut c = Cycle {
            sched,
            tasks,
            keys,
            free: (0..window + 2).collect(),
            out: Vec::with_capacity(64),
            next: 0,
            offset: 0,
        };
        while c.free.len() > 2 {
            c.submit();
        }
        c
    }

    fn submit(&mut self) {
        let slot = self.free.pop().expect("a free slot");
        let key = self.keys[self.next];
        self.next = (self.next + 1) % self.keys.len();
        self.offset += 1;
        self.sched
            .submit(self.tasks[0], 0, self.offset, Some(key), slot)
            .expect("submit");
    }

    /// `iters` steps with the per-record API: submit, poll(1), complete.
    pub fn run(&mut self, iters: u64) -> Duration {
        let start = Instant::now();
        for _ in 0..iters {
            self.submit();
            self.out.clear();
            self.sched
                .poll(&mut self.out, 1, Duration::ZERO)
                .expect("poll");
            let slot = self.out[0];
            self.sched.complete(slot).expect("complete");
            self.free.push(slot);
        }
        start.elapsed()
    }

    /// `iters` steps the way a worker loop runs: submit, then `complete_and_poll` (which
    /// completes the record polled in the step before and polls the next under one lock).
    pub fn run_worker_style(&mut self, iters: u64) -> Duration {
        let mut done: [u32; 1] = [0];
        let mut have = false;
        let start = Instant::now();
        for _ in 0..iters {
            self.submit();
            self.out.clear();
            let finished: &[u32] = if have { &done } else { &[] };
            self.sched
                .complete_and_poll(finished, &mut self.out, 1, Duration::ZERO)
                .expect("complete_and_poll");
            if have {
                self.free.push(done[0]);
            }
            done[0] = self.out[0];
            have = true;
        }
        if have {
            self.sched.complete(done[0]).expect("complete");
            self.free.push(done[0]);
        }
        start.elapsed()
    }
}

/// One submitter and `pollers` worker threads; workers use `complete_and_poll` with batches of
/// `batch`; the submitter submits one record per call (`submit_batch == 1`) or that many per
/// `submit_batch` call (all of one task). Returns the wall time to push `records` through.
pub fn threaded(
    records: u64,
    keys: &[u64],
    pollers: usize,
    batch: usize,
    submit_batch: usize,
    slots: u32,
) -> Duration {
    let (sched, tasks) = scheduler(slots, 4);
    let sched = Arc::new(sched);
    let returned = Arc::new(Mutex::new(Vec::<u32>::with_capacity(slots as usize)));
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..pollers)
        .map(|_| {
            let (sched, returned, done, stop) =
                (sched.clone(), returned.clone(), done.clone(), stop.clone());
            thread::spawn(move || {
                let mut out = Vec::with_capacity(batch);
                let mut finished = Vec::with_capacity(batch);
                while !stop.load(Ordering::Relaxed) {
                    out.clear();
                    match sched.complete_and_poll(
                        &finished,
                        &mut out,
                        batch,
                        Duration::from_millis(1),
                    ) {
                        Ok(_) => {}
                        Err(Error::Shutdown) => break,
                        Err(e) => panic!("{e}"),
                    }
                    if !finished.is_empty() {
                        done.fetch_add(finished.len() as u64, Ordering::Relaxed);
                        returned
                            .lock()
                            .expect("free list")
                            .extend_from_slice(&finished);
                        finished.clear();
                    }
                    finished.extend_from_slice(&out);
                }
            })
        })
        .collect();
    let start = Instant::now();
    let mut free: Vec<u32> = (0..slots).collect();
    let mut offsets = [0i64; 4];
    let mut pending = Vec::with_capacity(submit_batch);
    for i in 0..records {
        let slot = loop {
            if let Some(s) = free.pop() {
                break s;
            }
            std::mem::swap(&mut free, &mut *returned.lock().expect("free list"));
            if free.is_empty() {
                thread::yield_now();
            }
        };
        let t = ((i / submit_batch as u64) % 4) as usize;
        offsets[t] += 1;
        let key = keys[(i as usize) % keys.len()];
        if submit_batch == 1 {
            sched
                .submit(tasks[t], 0, offsets[t], Some(key), slot)
                .expect("submit");
            continue;
        }
        pending.push(Submission {
            partition: 0,
            offset: offsets[t],
            key: Some(key),
            slot,
        });
        if pending.len() == submit_batch || i + 1 == records {
            let (n, r) = sched.submit_batch(tasks[t], &pending);
            assert_eq!(n, pending.len(), "{r:?}");
            pending.clear();
        }
    }
    while done.load(Ordering::Relaxed) < records {
        thread::yield_now();
    }
    let elapsed = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    sched.shutdown();
    for w in workers {
        w.join().expect("worker");
    }
    elapsed
}
