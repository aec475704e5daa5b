//! Per-partition offset tracking over the submitted sequence.
//!
//! Offsets of one partition arrive in increasing order but may have gaps (transaction markers,
//! compaction). Each submitted record gets the next sequence number of its partition; a window
//! holds the states of the records from the lowest unfinished one on. "Contiguous" is therefore
//! defined over submitted records, never by offset arithmetic.

use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Pending,
    Done,
    Failed,
}

/// Counts and the commit watermark of one partition of one task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionProgress {
    pub submitted: u64,
    /// Submitted, not yet handed to a worker.
    pub queued: u64,
    /// Handed to a worker, not yet completed.
    pub running: u64,
    pub finished: u64,
    pub failed: u64,
    /// Offset of the first submitted record that has not completed successfully.
    pub lowest_unfinished: Option<i64>,
    pub last_submitted: Option<i64>,
}

impl PartitionProgress {
    /// The offset a consumer may commit for this partition: the lowest unfinished offset, or one
    /// past the last submitted offset when everything submitted has finished.
    pub fn committable(&self) -> Option<i64> {
        self.lowest_unfinished
            .or(self.last_submitted.map(|o| o.saturating_add(1)))
    }
}

#[derive(Default)]
pub(crate) struct PartitionTracker {
    /// `(offset, outcome)` of submitted records from the lowest unfinished one on.
    window: VecDeque<(i64, Outcome)>,
    /// Sequence number of `window[0]`.
    base_seq: u64,
    pub(crate) progress: PartitionProgress,
}

impl PartitionTracker {
    pub fn last_submitted(&self) -> Option<i64> {
        self.progress.last_submitted
    }

    /// Records a submission and returns its sequence number. The caller has checked that the
    /// offset is above `last_submitted`.
    pub fn submit(&mut self, offset: i64) -> u64 {
        let seq = self.base_seq + self.window.len() as u64;
        self.window.push_back((offset, Outcome::Pending));
        let p = &mut self.progress;
        p.submitted += 1;
        p.queued += 1;
        p.last_submitted = Some(offset);
        if p.lowest_unfinished.is_none() {
            p.lowest_unfinished = Some(offset);
        }
        seq
    }

    pub fn dispatched(&mut self) {
        self.progress.queued -= 1;
        self.progress.running += 1;
    }

    /// A running record went back to wait (a retry after a backoff): it stays unfinished.
    pub fn requeued(&mut self) {
        self.progress.running -= 1;
        self.progress.queued += 1;
    }

    /// A queued record was dropped without running: it stays unfinished.
    pub fn dropped(&mut self) {
        self.progress.queued -= 1;
    }

    /// A running record ended; `ok == false` means it failed and keeps the watermark below it.
    pub fn finish(&mut self, seq: u64, ok: bool) {
        let i = (seq - self.base_seq) as usize;
        self.window[i].1 = if ok { Outcome::Done } else { Outcome::Failed };
        let p = &mut self.progress;
        p.running -= 1;
        if ok {
            p.finished += 1;
        } else {
            p.failed += 1;
        }
        while let Some(&(_, Outcome::Done)) = self.window.front() {
            self.window.pop_front();
            self.base_seq += 1;
        }
        p.lowest_unfinished = self.window.front().map(|&(o, _)| o);
    }
}

#[cfg(any(test, debug_assertions))]
impl PartitionTracker {
    /// Whether the record with sequence number `seq` at `offset` is submitted and not ended.
    pub fn is_pending(&self, seq: u64, offset: i64) -> bool {
        seq.checked_sub(self.base_seq)
            .and_then(|i| self.window.get(i as usize))
            .is_some_and(|&(o, outcome)| o == offset && outcome == Outcome::Pending)
    }

    /// The window starts at the lowest record not finished successfully, which is the
    /// watermark; offsets in it increase.
    pub fn check_watermark(&self) -> Result<(), String> {
        if let Some(&(_, Outcome::Done)) = self.window.front() {
            return Err("the window starts at a finished record".into());
        }
        let front = self.window.front().map(|&(o, _)| o);
        if front != self.progress.lowest_unfinished {
            return Err(format!(
                "watermark {:?}, window starts at {front:?}",
                self.progress.lowest_unfinished
            ));
        }
        if self
            .window
            .iter()
            .zip(self.window.iter().skip(1))
            .any(|(a, b)| a.0 >= b.0)
        {
            return Err("offsets in the window do not increase".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watermark_follows_the_submitted_sequence_with_gaps() {
        let mut t = PartitionTracker::default();
        let a = t.submit(5);
        let b = t.submit(7);
        let c = t.submit(20);
        for _ in 0..3 {
            t.dispatched();
        }
        assert_eq!(t.progress.lowest_unfinished, Some(5));
        t.finish(b, true);
        assert_eq!(t.progress.lowest_unfinished, Some(5));
        t.finish(a, true);
        assert_eq!(t.progress.lowest_unfinished, Some(20));
        assert_eq!(t.progress.committable(), Some(20));
        t.finish(c, true);
        assert_eq!(t.progress.lowest_unfinished, None);
        assert_eq!(t.progress.committable(), Some(21));
        assert_eq!(t.progress.finished, 3);
    }

    #[test]
    fn a_failed_record_holds_the_watermark() {
        let mut t = PartitionTracker::default();
        let a = t.submit(1);
        let b = t.submit(2);
        t.dispatched();
        t.dispatched();
        t.finish(a, false);
        t.finish(b, true);
        assert_eq!(t.progress.lowest_unfinished, Some(1));
        assert_eq!(t.progress.failed, 1);
    }
}
