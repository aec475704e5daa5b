//! The slot table's entries and the intrusive FIFO list that links them (a lane's wait list, a
//! task's ready list).

use super::NIL;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotState {
    Free,
    /// Queued behind an unfinished record of the same key.
    Waiting,
    /// In its task's ready list.
    Ready,
    Running,
    /// Ran, and waits to run again (a retry): still its key's active record, so the key's later
    /// records wait behind it; in `State::timers` until due, then ready again.
    Backoff,
}

#[derive(Clone, Copy)]
pub(crate) struct SlotEntry {
    pub(crate) state: SlotState,
    /// Whether wait and run times of this record are recorded.
    pub(crate) timed: bool,
    /// Key-less record (`key` is then unused).
    pub(super) null_key: bool,
    pub(crate) task: u32,
    pub(crate) partition: u32,
    /// Next slot in the key's waiting list or in the task's ready list.
    pub(super) next: u32,
    pub(super) key: u64,
    pub(super) seq: u64,
    pub(super) offset: i64,
    pub(crate) submitted_ns: u64,
    /// When it was dispatched (timed records); in `Backoff`, when it is due (every record).
    pub(crate) dispatched_ns: u64,
}

pub(super) const FREE_SLOT: SlotEntry = SlotEntry {
    state: SlotState::Free,
    timed: false,
    null_key: false,
    task: NIL,
    partition: 0,
    next: NIL,
    key: 0,
    seq: 0,
    offset: 0,
    submitted_ns: 0,
    dispatched_ns: 0,
};

/// A FIFO list of slots linked through their `next` field (a slot is in at most one at a time:
/// a lane's wait list or a task's ready list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlotList {
    pub(super) head: u32,
    pub(super) tail: u32,
}

impl SlotList {
    pub(super) const EMPTY: SlotList = SlotList {
        head: NIL,
        tail: NIL,
    };

    pub(super) fn is_empty(&self) -> bool {
        self.head == NIL
    }

    #[inline]
    pub(super) fn push_back(&mut self, slots: &mut [SlotEntry], slot: u32) {
        slots[slot as usize].next = NIL;
        if self.tail == NIL {
            self.head = slot;
        } else {
            slots[self.tail as usize].next = slot;
        }
        self.tail = slot;
    }

    #[inline]
    pub(super) fn pop_front(&mut self, slots: &mut [SlotEntry]) -> Option<u32> {
        let slot = self.head;
        if slot == NIL {
            return None;
        }
        self.head = slots[slot as usize].next;
        if self.head == NIL {
            self.tail = NIL;
        }
        slots[slot as usize].next = NIL;
        Some(slot)
    }

    /// Empties the list, calling `f` on each slot in order (`f` may reuse the slot's link).
    pub(super) fn drain(
        &mut self,
        slots: &mut [SlotEntry],
        mut f: impl FnMut(&mut [SlotEntry], u32),
    ) {
        let mut s = std::mem::replace(self, SlotList::EMPTY).head;
        while s != NIL {
            let next = slots[s as usize].next;
            f(slots, s);
            s = next;
        }
    }

    /// The slots in order (for checks).
    #[cfg(any(test, debug_assertions))]
    pub(super) fn walk<'a>(&self, slots: &'a [SlotEntry]) -> impl Iterator<Item = u32> + 'a {
        let mut s = self.head;
        std::iter::from_fn(move || {
            (s != NIL).then(|| {
                let cur = s;
                s = slots[cur as usize].next;
                cur
            })
        })
    }
}
