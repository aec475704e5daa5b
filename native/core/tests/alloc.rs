//! The steady-state submit → poll → complete cycle allocates nothing.
//!
//! A counting global allocator (this test binary only) counts heap allocations while the cycle
//! runs with a thousand records in flight over 100,000 Zipf-distributed keys, after a warm-up
//! that lets hash maps and queues reach their high-water capacity.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use streamshard_core::{Scheduler, SchedulerConfig, TaskId, TaskOptions};
use streamshard_workload::{key_hash, KeyDist};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn steady_state_cycle_allocates_nothing() {
    const WINDOW: u32 = 1_000;
    let s = Scheduler::new(SchedulerConfig {
        max_inflight: WINDOW + 1,
        max_inflight_per_task: WINDOW + 1,
        ..SchedulerConfig::default()
    })
    .unwrap();
    let tasks: Vec<_> = (0..4)
        .map(|p| {
            s.register_task(
                TaskId {
                    subtopology: 0,
                    partition: p,
                },
                TaskOptions::default(),
            )
            .unwrap()
        })
        .collect();
    let mut keys = KeyDist::Zipf {
        keys: 100_000,
        s: 1.1,
    }
    .sampler(3)
    .unwrap();
    let mut free: Vec<u32> = (0..=WINDOW).collect();
    let mut out = Vec::with_capacity(16);
    let mut offset = 0i64;
    let mut step = |n: u64, count: bool| -> u64 {
        let before = ALLOCS.load(Relaxed);
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
        if count {
            ALLOCS.load(Relaxed) - before
        } else {
            0
        }
    };
    step(300_000, false);
    let allocs = step(300_000, true);
    assert_eq!(
        allocs, 0,
        "{allocs} allocations in 300,000 steady-state records"
    );
}
