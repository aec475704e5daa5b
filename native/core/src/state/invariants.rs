//! The crate's invariants (lib.rs, "Invariants") as code, over the whole state. The model and
//! stress tests run them after every step; the transitions assert their own preconditions
//! with `debug_assert!` (on in tests, free in release).

use std::cmp::Reverse;

use super::slots::{SlotEntry, SlotState};
use super::{State, NIL};
use crate::config::NullKeyOrdering;

impl State {
    /// Checks the crate's invariants (lib.rs, "Invariants") over the whole state: O(slots +
    /// keys), for tests. Returns the first one broken.
    #[cfg(any(test, debug_assertions))]
    pub(crate) fn check_invariants(&self, max_inflight: u32) -> Result<(), String> {
        use std::collections::HashSet;
        let mut seen = HashSet::new(); // slots met in some list or as a lane's active record
        let (mut unfinished, mut running) = (0u32, 0u32);
        for (ti, t) in self.tasks.iter().enumerate() {
            let Some(t) = t else { continue };
            let ti = ti as u32;
            let id = t.id;
            // 1, 2: ready list, lanes (active ready or running, the rest waiting in order).
            let mut ready_count = 0;
            for s in t.ready.walk(&self.slots) {
                let e = &self.slots[s as usize];
                if e.state != SlotState::Ready || e.task != ti || !seen.insert(s) {
                    return Err(format!("task {id}: slot {s} in the ready list is {:?} of task {} (or listed twice)", e.state, e.task));
                }
                ready_count += 1;
            }
            let lanes = t.lanes.iter().map(|(k, l)| (Some(*k), l));
            let null = (t.null_lane.depth > 0).then_some((None, &t.null_lane));
            for (key, l) in lanes.chain(null) {
                if l.depth == 0 || l.active == NIL {
                    return Err(format!("task {id}: an idle lane is kept (key {key:?})"));
                }
                let a = &self.slots[l.active as usize];
                let keyed = |e: &SlotEntry| {
                    e.task == ti && e.null_key == key.is_none() && key.is_none_or(|k| e.key == k)
                };
                if !matches!(
                    a.state,
                    SlotState::Ready | SlotState::Running | SlotState::Backoff
                ) || !keyed(a)
                {
                    return Err(format!(
                        "task {id}: the active record of key {key:?} is {:?} or not the key's",
                        a.state
                    ));
                }
                if matches!(a.state, SlotState::Running | SlotState::Backoff)
                    && !seen.insert(l.active)
                {
                    return Err(format!("task {id}: slot {} active in two lanes", l.active));
                }
                let mut depth = 1;
                let mut prev = *a;
                for s in l.waiting.walk(&self.slots) {
                    let e = &self.slots[s as usize];
                    if e.state != SlotState::Waiting || !keyed(e) || !seen.insert(s) {
                        return Err(format!("task {id}: slot {s} waiting for key {key:?} is {:?}, another key's, or listed twice", e.state));
                    }
                    if e.partition == prev.partition && e.seq <= prev.seq {
                        return Err(format!(
                            "task {id}: key {key:?} out of order: seq {} behind {}",
                            e.seq, prev.seq
                        ));
                    }
                    prev = *e;
                    depth += 1;
                }
                if depth != l.depth {
                    return Err(format!(
                        "task {id}: key {key:?} has depth {} but {depth} records",
                        l.depth
                    ));
                }
                if a.state == SlotState::Ready && !seen.contains(&l.active) {
                    return Err(format!(
                        "task {id}: the ready record of key {key:?} is not in the ready list"
                    ));
                }
            }
            // 2: at most one record per key ready or running: each is its lane's active one.
            for (s, e) in self.slots.iter().enumerate() {
                if e.task != ti
                    || !matches!(
                        e.state,
                        SlotState::Ready | SlotState::Running | SlotState::Backoff
                    )
                {
                    continue;
                }
                let lane = if !e.null_key {
                    t.lanes.get(&e.key)
                } else {
                    (t.null_keys == NullKeyOrdering::Serial).then_some(&t.null_lane)
                };
                if lane.is_some_and(|l| l.active != s as u32) {
                    return Err(format!("task {id}: slot {s} is {:?} but not its key's active record (two of one key at once)", e.state));
                }
                if !e.null_key && lane.is_none() {
                    return Err(format!(
                        "task {id}: slot {s} is {:?} with no lane for its key",
                        e.state
                    ));
                }
            }
            // 3: the ring.
            if !t.ready.is_empty() && t.failure.is_none() && !t.in_ring {
                return Err(format!("task {id}: ready records but not in the ring"));
            }
            // 4: counts and caps.
            let mine = |st: SlotState| {
                self.slots
                    .iter()
                    .filter(|e| e.task == ti && e.state == st)
                    .count() as u32
            };
            let (waiting, ready, run, backoff) = (
                mine(SlotState::Waiting),
                mine(SlotState::Ready),
                mine(SlotState::Running),
                mine(SlotState::Backoff),
            );
            if ready != ready_count
                || t.queued != waiting + ready + backoff
                || t.running != run
                || t.backoff != backoff
            {
                return Err(format!("task {id}: queued {} running {} backoff {} but slots say {waiting} waiting, {ready} ready ({ready_count} listed), {run} running, {backoff} in backoff", t.queued, t.running, t.backoff));
            }
            if t.unfinished() > t.cap {
                return Err(format!(
                    "task {id}: {} unfinished over its cap {}",
                    t.unfinished(),
                    t.cap
                ));
            }
            unfinished += t.unfinished();
            running += t.running;
            // 5: partitions: every live record pending in its tracker, counts agree.
            for (p, tracker) in t.partitions.iter().enumerate() {
                let live = self.slots.iter().filter(|e| {
                    e.task == ti && e.partition == p as u32 && e.state != SlotState::Free
                });
                let (mut q, mut r) = (0u64, 0u64);
                for e in live {
                    if !tracker.is_pending(e.seq, e.offset) {
                        return Err(format!(
                            "task {id} partition {p}: offset {} (seq {}) is live but not pending",
                            e.offset, e.seq
                        ));
                    }
                    if e.state == SlotState::Running {
                        r += 1
                    } else {
                        q += 1
                    }
                }
                let pr = &tracker.progress;
                if pr.queued != q
                    || pr.running != r
                    || pr.submitted < pr.queued + pr.running + pr.finished + pr.failed
                {
                    return Err(format!("task {id} partition {p}: progress {pr:?}, slots say {q} queued, {r} running"));
                }
                tracker
                    .check_watermark()
                    .map_err(|m| format!("task {id} partition {p}: {m}"))?;
            }
        }
        let free = self
            .slots
            .iter()
            .filter(|e| e.state == SlotState::Free)
            .count() as u32;
        if unfinished != self.unfinished
            || running != self.running
            || free + unfinished != self.slots.len() as u32
            || unfinished > max_inflight
        {
            return Err(format!("totals: unfinished {} running {} (tasks say {unfinished}, {running}; {free} slots free)", self.unfinished, self.running));
        }
        // 6: the timers hold exactly the records in backoff, once each, at their due times.
        let mut timed = HashSet::new();
        for &Reverse((due, s)) in self.timers.iter() {
            let e = &self.slots[s as usize];
            if e.state != SlotState::Backoff || e.dispatched_ns != due || !timed.insert(s) {
                return Err(format!(
                    "timers: slot {s} due {due} is {:?} due {} (or listed twice)",
                    e.state, e.dispatched_ns
                ));
            }
        }
        let in_backoff = self
            .slots
            .iter()
            .filter(|e| e.state == SlotState::Backoff)
            .count();
        if in_backoff != timed.len() {
            return Err(format!(
                "timers: {} records in backoff, {} timed",
                in_backoff,
                timed.len()
            ));
        }
        // 3: the ring holds each task once, exactly those marked in it.
        let mut in_ring = HashSet::new();
        let mut cur = self.ring_head;
        let mut last = NIL;
        while cur != NIL {
            match self.tasks.get(cur as usize).and_then(Option::as_ref) {
                Some(t) if t.in_ring && in_ring.insert(cur) => {
                    last = cur;
                    cur = t.ring_next;
                }
                _ => {
                    return Err(format!(
                        "ring: task index {cur} removed, not marked, or twice"
                    ))
                }
            }
        }
        let marked = self.tasks.iter().flatten().filter(|t| t.in_ring).count();
        if last != self.ring_tail || marked != in_ring.len() {
            return Err(format!(
                "ring: tail {} (walked to {last}), {marked} tasks marked, {} in it",
                self.ring_tail,
                in_ring.len()
            ));
        }
        Ok(())
    }
}
