//! A key's lane (its active record and those waiting behind it) and the hasher of the lanes' map.

use std::hash::{BuildHasher, Hasher};

use super::slots::{SlotEntry, SlotList};
use super::NIL;

/// A key with unfinished records: `active` is ready or running, the rest wait behind it.
#[derive(Clone, Copy)]
pub(super) struct Lane {
    pub(super) active: u32,
    pub(super) waiting: SlotList,
    /// Unfinished records of the key, the active one included.
    pub(super) depth: u32,
}

pub(super) const IDLE_LANE: Lane = Lane {
    active: NIL,
    waiting: SlotList::EMPTY,
    depth: 0,
};

impl Lane {
    /// Adds a record: active if the lane was idle (returns true: it is ready), else waiting.
    #[inline]
    pub(super) fn push(&mut self, slots: &mut [SlotEntry], slot: u32) -> bool {
        self.depth += 1;
        if self.active == NIL {
            self.active = slot;
            true
        } else {
            self.waiting.push_back(slots, slot);
            false
        }
    }

    /// Ends the active record: returns the next waiting one (now active), or `None` with the
    /// lane idle.
    #[inline]
    pub(super) fn advance(&mut self, slots: &mut [SlotEntry]) -> Option<u32> {
        self.depth -= 1;
        let next = self.waiting.pop_front(slots);
        match next {
            Some(s) => self.active = s,
            None => *self = IDLE_LANE,
        }
        next
    }
}

/// Mixes the 64-bit key hash once more so that a weak hash from the caller still spreads over
/// the table (the map keys are already hashes; SipHash would only cost time).
#[derive(Clone, Copy, Default)]
pub(super) struct KeyHashBuilder;

#[derive(Default)]
pub(super) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        z ^ (z >> 33)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8)) ^ b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

impl BuildHasher for KeyHashBuilder {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(0)
    }
}
