//! Single-threaded submit → poll → complete cycle, ns per record, by key count and distribution.

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn cycle(c: &mut Criterion) {
    let mut g = c.benchmark_group("cycle");
    g.throughput(Throughput::Elements(1));
    for (name, dist) in common::dists() {
        let mut cyc = common::Cycle::new(common::key_table(&dist, 1 << 16), 64);
        g.bench_function(name, |b| b.iter_custom(|iters| cyc.run(iters)));
    }
    g.finish();
    let mut g = c.benchmark_group("cycle-worker-style");
    g.throughput(Throughput::Elements(1));
    for (name, dist) in common::dists() {
        let mut cyc = common::Cycle::new(common::key_table(&dist, 1 << 16), 64);
        g.bench_function(name, |b| b.iter_custom(|iters| cyc.run_worker_style(iters)));
    }
    g.finish();
}

criterion_group!(benches, cycle);
criterion_main!(benches);
