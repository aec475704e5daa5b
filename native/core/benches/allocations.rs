//! Heap allocations per record in steady state, counted with a counting global allocator.
//! Prints one line per scenario; `tests/alloc.rs` asserts the single-threaded case is zero.

mod common;
#[path = "common/counting.rs"]
mod counting;

use counting::allocations;
use streamshard_workload::KeyDist;

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not: then a short smoke run.
    let full = std::env::args().any(|a| a == "--bench");
    let n: u64 = if full { 1_000_000 } else { 20_000 };
    for (name, dist) in common::dists() {
        let mut cyc = common::Cycle::new(common::key_table(&dist, 1 << 16), 64);
        cyc.run(n); // warm-up
        let before = allocations();
        cyc.run(n);
        let allocs = allocations() - before;
        println!(
            "allocations cycle/{name}: {allocs} in {n} records = {:.6} per record",
            allocs as f64 / n as f64
        );
    }
    // Multi-threaded: thread start-up and the free-slot list are the harness's own; the
    // difference between a short and a long run is what the scheduler adds per record.
    let keys = common::key_table(
        &KeyDist::Zipf {
            keys: 10_000,
            s: 1.1,
        },
        1 << 16,
    );
    let count = |records| {
        let before = allocations();
        common::threaded(records, &keys, 2, 32, 1, 4_096);
        allocations() - before
    };
    let short = count(n / 10);
    let long = count(n + n / 10);
    println!(
        "allocations 1sub-2poll/zipf1.1/10000: {short} for {} records, {long} for {} records: \
         {:.6} per extra record",
        n / 10,
        n + n / 10,
        long.saturating_sub(short) as f64 / n as f64
    );
}
