//! The steady-state submit → poll → complete cycle allocates nothing.
//!
//! A counting global allocator (this test binary only) counts heap allocations while the cycle
//! runs with a thousand records in flight over 100,000 Zipf-distributed keys, four tasks and
//! three partitions each, after a warm-up that lets hash maps and queues reach their high-water
//! capacity.

#[path = "../benches/common/mod.rs"]
mod common;
#[path = "../benches/common/counting.rs"]
mod counting;

use std::time::Duration;

use counting::allocations;
use streamshard_workload::{key_hash, KeyDist};

#[test]
fn steady_state_cycle_allocates_nothing() {
    const WINDOW: u32 = 1_000;
    let (s, tasks) = common::scheduler(WINDOW + 1, 4);
    let mut keys = KeyDist::Zipf {
        keys: 100_000,
        s: 1.1,
    }
    .sampler(3)
    .unwrap();
    let mut free: Vec<u32> = (0..=WINDOW).collect();
    let mut out = Vec::with_capacity(16);
    let mut offset = 0i64;
    let mut step = |n: u64| -> u64 {
        let before = allocations();
        for _ in 0..n {
            offset += 1;
            let slot = free.pop().unwrap();
            let t = tasks[(offset % 4) as usize];
            let key = Some(key_hash(keys.next_key()));
            s.submit(t, (offset % 3) as u32, offset, key, slot).unwrap();
            if free.is_empty() {
                out.clear();
                let got = s.poll(&mut out, 1, Duration::ZERO).unwrap();
                assert_eq!(got, 1);
                s.complete(out[0]).unwrap();
                free.push(out[0]);
            }
        }
        allocations() - before
    };
    step(300_000);
    let allocs = step(300_000);
    assert_eq!(
        allocs, 0,
        "{allocs} allocations in 300,000 steady-state records"
    );
}
