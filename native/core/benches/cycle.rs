//! Single-threaded submit → poll → complete cycle, ns per record, by key count and distribution.

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn cycle(c: &mut Criterion) {
    type Style = fn(&mut common::Cycle, u64) -> std::time::Duration;
    let styles: [(&str, Style); 2] = [
        ("cycle", common::Cycle::run),
        ("cycle-worker-style", common::Cycle::run_worker_style),
    ];
    for (group, style) in styles {
        let mut g = c.benchmark_group(group);
        g.throughput(Throughput::Elements(1));
        for (name, dist) in common::dists() {
            let mut cyc = common::Cycle::new(common::key_table(&dist, 1 << 16), 64);
            g.bench_function(name, |b| b.iter_custom(|iters| style(&mut cyc, iters)));
        }
        g.finish();
    }
}

criterion_group!(benches, cycle);
criterion_main!(benches);
