//! The scheduler on its own, on the workload streamshard exists for: 4 partitions (tasks), keys
//! Zipf-distributed over 10,000 customers, a 5 ms blocking "remote call" per record.
//!
//! It runs the same records twice: the way a stock Kafka Streams task does (one record at a
//! time per task, one thread per task), and through the scheduler with 64 worker threads. It
//! checks that every record ran exactly once and in order per key, and prints records/s.
//!
//! `cargo run --release -p streamshard-core --example demo [records] [workers] [latency-ms]`

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use streamshard_core::{Error, Scheduler, SchedulerConfig, TaskId, TaskOptions};
use streamshard_workload::{key_hash, KeyDist};

const PARTITIONS: usize = 4;

#[derive(Clone, Copy)]
struct Rec {
    partition: usize,
    offset: i64,
    key: u64,
    /// Per-key sequence number, 1-based.
    seq: u64,
}

fn make_input(records: usize) -> Vec<Rec> {
    let mut keys = KeyDist::Zipf {
        keys: 10_000,
        s: 1.1,
    }
    .sampler(11)
    .expect("valid distribution");
    let mut seqs = HashMap::new();
    let mut offsets = [0i64; PARTITIONS];
    (0..records)
        .map(|_| {
            let key = keys.next_key();
            // Kafka's default partitioner sends a key to one partition.
            let partition = (key_hash(key) % PARTITIONS as u64) as usize;
            let seq = seqs.entry(key).and_modify(|s| *s += 1).or_insert(1u64);
            offsets[partition] += 1;
            Rec {
                partition,
                offset: offsets[partition],
                key,
                seq: *seq,
            }
        })
        .collect()
}

/// Stock behaviour: each task handles its records one after another.
fn run_serial(input: &[Rec], latency: Duration) -> (Duration, HashMap<u64, u64>) {
    let start = Instant::now();
    let seen = Mutex::new(HashMap::new());
    thread::scope(|s| {
        for p in 0..PARTITIONS {
            let seen = &seen;
            s.spawn(move || {
                for r in input.iter().filter(|r| r.partition == p) {
                    thread::sleep(latency);
                    seen.lock().unwrap().insert(r.key, r.seq);
                }
            });
        }
    });
    (start.elapsed(), seen.into_inner().unwrap())
}

fn run_sharded(
    input: &[Rec],
    latency: Duration,
    workers: usize,
) -> Result<
    (
        Duration,
        HashMap<u64, u64>,
        streamshard_core::MetricsSnapshot,
    ),
    String,
> {
    let slots = 1_000u32;
    let sched = Arc::new(
        Scheduler::new(SchedulerConfig {
            max_inflight: slots,
            max_inflight_per_task: 250,
            ..SchedulerConfig::default()
        })
        .map_err(|e| e.to_string())?,
    );
    let tasks: Vec<_> = (0..PARTITIONS)
        .map(|p| {
            sched.register_task(
                TaskId {
                    subtopology: 0,
                    partition: p as u32,
                },
                TaskOptions::default(),
            )
        })
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let table: Arc<Vec<Mutex<Option<Rec>>>> =
        Arc::new((0..slots).map(|_| Mutex::new(None)).collect());
    let free = Arc::new(Mutex::new((0..slots).rev().collect::<Vec<u32>>()));
    let last_seq = Arc::new(Mutex::new(HashMap::<u64, u64>::new()));
    let violations = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let pool: Vec<_> = (0..workers)
        .map(|_| {
            let (sched, table, free, last_seq, violations) = (
                sched.clone(),
                table.clone(),
                free.clone(),
                last_seq.clone(),
                violations.clone(),
            );
            thread::spawn(move || {
                let mut out = Vec::with_capacity(1);
                let mut done = Vec::with_capacity(1);
                loop {
                    out.clear();
                    match sched.complete_and_poll(&done, &mut out, 1, Duration::from_millis(50)) {
                        Ok(_) => {}
                        Err(Error::Shutdown) => return,
                        Err(e) => panic!("worker: {e}"),
                    }
                    free.lock().unwrap().append(&mut done);
                    for &slot in &out {
                        let r = table[slot as usize].lock().unwrap().take().expect("record");
                        thread::sleep(latency); // the remote call
                        let mut seen = last_seq.lock().unwrap();
                        let last = seen.insert(r.key, r.seq).unwrap_or(0);
                        if r.seq != last + 1 {
                            violations.fetch_add(1, SeqCst);
                        }
                        done.push(slot);
                    }
                }
            })
        })
        .collect();
    for r in input {
        let slot = loop {
            if let Some(s) = free.lock().unwrap().pop() {
                break s;
            }
            thread::sleep(Duration::from_micros(200));
        };
        *table[slot as usize].lock().unwrap() = Some(*r);
        let h = tasks[r.partition];
        loop {
            match sched.submit(h, 0, r.offset, Some(key_hash(r.key)), slot) {
                Ok(_) => break,
                Err(Error::TaskAtCapacity { .. } | Error::GlobalAtCapacity { .. }) => {
                    thread::sleep(Duration::from_micros(200))
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    sched
        .drain(&tasks, Duration::from_secs(600))
        .map_err(|e| e.to_string())?;
    let elapsed = start.elapsed();
    let metrics = sched.metrics();
    sched.shutdown();
    for w in pool {
        w.join().map_err(|_| "worker panicked".to_string())?;
    }
    if violations.load(SeqCst) > 0 {
        return Err(format!(
            "{} per-key order violations",
            violations.load(SeqCst)
        ));
    }
    let seen = Arc::try_unwrap(last_seq)
        .map_err(|_| "workers still hold results".to_string())?
        .into_inner()
        .map_err(|e| e.to_string())?;
    Ok((elapsed, seen, metrics))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, default: u64| -> u64 {
        args.get(i)
            .map(|a| {
                a.parse()
                    .unwrap_or_else(|_| panic!("argument {i} must be a number: {a}"))
            })
            .unwrap_or(default)
    };
    let records = arg(1, 4_000) as usize;
    let workers = arg(2, 64) as usize;
    let latency = Duration::from_millis(arg(3, 5));
    println!(
        "{records} records, {PARTITIONS} partitions, Zipf(1.1) keys over 10,000 customers, \
         {} ms per record",
        latency.as_millis()
    );
    let input = make_input(records);
    let expected: HashMap<u64, u64> =
        input
            .iter()
            .map(|r| (r.key, r.seq))
            .fold(HashMap::new(), |mut m, (k, s)| {
                let e = m.entry(k).or_insert(0);
                *e = (*e).max(s);
                m
            });

    let (serial_time, serial_seen) = run_serial(&input, latency);
    let serial_rate = records as f64 / serial_time.as_secs_f64();
    println!(
        "stock (one record at a time per task): {:>8.0} records/s  ({:.2} s)",
        serial_rate,
        serial_time.as_secs_f64()
    );
    let (time, seen, metrics) = match run_sharded(&input, latency, workers) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("streamshard run failed: {e}");
            std::process::exit(1);
        }
    };
    let rate = records as f64 / time.as_secs_f64();
    println!(
        "streamshard scheduler, {workers} workers: {:>8.0} records/s  ({:.2} s)  = {:.1}x",
        rate,
        time.as_secs_f64(),
        rate / serial_rate
    );
    // Records of one key run one at a time: the hottest key bounds any per-key-ordered run.
    let hottest = expected.values().copied().max().unwrap_or(1);
    let bound_time = latency.as_secs_f64() * (hottest as f64).max(records as f64 / workers as f64);
    println!(
        "  bound for {workers} workers with per-key order: {:.0} records/s (the hottest key has \
         {hottest} of the {records} records); reached {:.0}%",
        records as f64 / bound_time,
        100.0 * bound_time / time.as_secs_f64()
    );
    let wait = &metrics.wait_ns;
    println!(
        "  wait before dispatch p50 {:.2} ms, p99 {:.2} ms; deepest key queue {}",
        wait.quantile(0.5).unwrap_or(0) as f64 / 1e6,
        wait.quantile(0.99).unwrap_or(0) as f64 / 1e6,
        metrics
            .tasks
            .iter()
            .map(|t| t.max_key_depth)
            .max()
            .unwrap_or(0)
    );
    if seen != expected || serial_seen != expected {
        eprintln!("FAILED: the runs did not process every record of every key");
        std::process::exit(1);
    }
    println!(
        "ok: both runs processed all {} keys completely, per-key order held",
        expected.len()
    );
}
