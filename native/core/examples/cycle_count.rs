//! Runs the single-threaded submit → poll → complete cycle for a given number of records, for
//! counting instructions under `valgrind --tool=callgrind` (see scripts/bench-instructions.sh):
//! instruction counts are repeatable where wall-clock time on a shared 2-core machine is not.
//!
//! `cycle_count <uniform|zipf> <keys> <records> <per-call|worker-style>`

#[path = "../benches/common/mod.rs"]
mod common;

use streamshard_workload::KeyDist;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: cycle_count <uniform|zipf> <keys> <records> <per-call|worker-style>");
        std::process::exit(2);
    }
    let keys: u64 = args[2].parse().expect("keys must be a number");
    let records: u64 = args[3].parse().expect("records must be a number");
    let dist = match args[1].as_str() {
        "uniform" => KeyDist::Uniform { keys },
        "zipf" => KeyDist::Zipf { keys, s: 1.1 },
        other => panic!("unknown distribution {other}"),
    };
    let mut cycle = common::Cycle::new(common::key_table(&dist, 1 << 16), 64);
    match args[4].as_str() {
        "per-call" => cycle.run(records),
        "worker-style" => cycle.run_worker_style(records),
        other => panic!("unknown style {other}"),
    };
}
