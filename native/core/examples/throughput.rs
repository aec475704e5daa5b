//! One submitter and N pollers: records/s over repeated runs (median, min, max), a quicker and
//! more robust read on a noisy 2-core machine than a criterion sample.
//!
//! `throughput [uniform|zipf] [keys] [submit-batch] [runs] [pollers] [records]`

#[path = "../benches/common/mod.rs"]
mod common;

use streamshard_workload::KeyDist;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_string());
    let keys: u64 = arg(2, "100000").parse().expect("keys");
    let dist = match arg(1, "uniform").as_str() {
        "uniform" => KeyDist::Uniform { keys },
        "zipf" => KeyDist::Zipf { keys, s: 1.1 },
        other => panic!("unknown distribution {other}"),
    };
    let submit_batch: usize = arg(3, "1").parse().expect("submit-batch");
    let runs: usize = arg(4, "15").parse().expect("runs");
    let pollers: usize = arg(5, "2").parse().expect("pollers");
    let records: u64 = arg(6, "200000").parse().expect("records");
    let table = common::key_table(&dist, 1 << 16);
    let mut rates: Vec<f64> = (0..runs)
        .map(|_| {
            let t = common::threaded(records, &table, pollers, 32, submit_batch, 4_096);
            records as f64 / t.as_secs_f64()
        })
        .collect();
    rates.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{} keys={keys} submit-batch={submit_batch} pollers={pollers}: median {:.2} M records/s (min {:.2}, max {:.2}, {runs} runs of {records})",
        arg(1, "uniform"),
        rates[runs / 2] / 1e6,
        rates[0] / 1e6,
        rates[runs - 1] / 1e6
    );
}
