//! One submitter and two pollers on this machine: records per second, submitting one record
//! per call and sixteen per `submit_batch` call.

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use streamshard_workload::KeyDist;

fn threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("threads");
    const RECORDS: u64 = 200_000;
    g.throughput(Throughput::Elements(RECORDS));
    g.sample_size(20);
    for (name, dist) in [
        ("uniform/100000", KeyDist::Uniform { keys: 100_000 }),
        (
            "zipf1.1/10000",
            KeyDist::Zipf {
                keys: 10_000,
                s: 1.1,
            },
        ),
    ] {
        let keys = common::key_table(&dist, 1 << 16);
        for submit_batch in [1usize, 16] {
            let label = format!("1sub-2poll/submit-batch-{submit_batch}/{name}");
            g.bench_function(label, |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| common::threaded(RECORDS, &keys, 2, 32, submit_batch, 4_096))
                        .sum()
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, threads);
criterion_main!(benches);
