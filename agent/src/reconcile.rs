//! Completions the kernel counted on a disk (/proc/diskstats) that are missing from its
//! histograms, so that none vanishes unreported: completions the agent could not time
//! (ios_untracked), and completions whose BPF program the kernel did not run (seen on
//! Linux 6.18 for about 1 in 8,000 to 40,000 under load, with no recursion miss
//! reported, while ftrace saw every one of them).
//!
//! Each interval the kernel's count is read first and the histograms after (run.rs), so a
//! completion between the two reads is in the histograms only: kernel - traced reads low,
//! never high. That difference also holds everything before the agent attached, so it is
//! measured from an anchor taken when the disk stood still for a whole interval (nothing
//! completed between two readings), where it is exact. A disk reports nothing before its
//! first still interval; after it, the count is a lower bound that is exact whenever the
//! disk is idle.

use crate::iotrace::DiskId;
use std::collections::HashMap;

#[derive(Default)]
pub struct Reconciler {
    ledgers: HashMap<DiskId, Ledger>,
}

#[derive(Default)]
struct Ledger {
    /// (kernel, traced) at the previous reading.
    previous: Option<(u64, u64)>,
    /// kernel - traced at the first still interval.
    anchor: Option<i128>,
    /// The highest (kernel - traced) - anchor seen.
    untraced: u64,
    /// What earlier disks of these numbers reported: a counter never goes back.
    carried: u64,
    /// Whether the histograms hold any of its completions: a bio-based device (dm, md,
    /// zram) has none, and its I/O is not missing, only not traced per request.
    traced_any: bool,
}

impl Reconciler {
    /// One reading of a disk: the kernel's completions (cumulative, read first) and the
    /// completions in its histograms since the agent attached (read after).
    pub fn observe(&mut self, disk: DiskId, kernel: u64, traced: u64) {
        let ledger = self.ledgers.entry(disk).or_default();
        if ledger.previous.is_some_and(|(before, _)| kernel < before) {
            // Another disk took these numbers, its diskstats from 0: anchor it anew.
            ledger.carried += ledger.untraced;
            ledger.untraced = 0;
            ledger.anchor = None;
        }
        let gap = i128::from(kernel) - i128::from(traced);
        if ledger.anchor.is_none() && ledger.previous == Some((kernel, traced)) {
            ledger.anchor = Some(gap);
        }
        if let Some(anchor) = ledger.anchor {
            let missing = u64::try_from(gap - anchor).unwrap_or(0);
            ledger.untraced = ledger.untraced.max(missing);
        }
        ledger.previous = Some((kernel, traced));
        ledger.traced_any |= traced > 0;
    }

    /// Each disk's completions missing from its histograms, where one is known (non-zero).
    pub fn untraced(&self) -> impl Iterator<Item = (DiskId, u64)> + '_ {
        self.ledgers
            .iter()
            .filter(|(_, l)| l.traced_any && l.carried + l.untraced > 0)
            .map(|(disk, l)| (*disk, l.carried + l.untraced))
    }

    pub fn total(&self) -> u64 {
        self.untraced().map(|(_, n)| n).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SDB: DiskId = DiskId { major: 8, minor: 16 };

    fn untraced(r: &Reconciler) -> u64 {
        r.untraced().find(|(d, _)| *d == SDB).map_or(0, |(_, n)| n)
    }

    #[test]
    fn nothing_is_reported_before_the_disk_stands_still_once() {
        let mut r = Reconciler::default();
        // 5,000 completions before the agent attached; then it misses some, but the disk
        // never pauses, so the baseline is unknown.
        for (kernel, traced) in [(5_000, 0), (5_100, 98), (5_200, 195)] {
            r.observe(SDB, kernel, traced);
        }
        assert_eq!(untraced(&r), 0);
    }

    #[test]
    fn completions_missing_after_a_still_interval_are_counted_exactly_once_idle() {
        let mut r = Reconciler::default();
        r.observe(SDB, 5_000, 0);
        r.observe(SDB, 5_000, 0); // still: anchor 5,000
        r.observe(SDB, 6_000, 997); // busy: 3 missing so far
        r.observe(SDB, 7_000, 1_995);
        r.observe(SDB, 7_000, 1_995); // idle again
        assert_eq!(untraced(&r), 5);
        assert_eq!(r.total(), 5);
    }

    #[test]
    fn a_disk_with_no_traced_completion_is_not_reported() {
        let mut r = Reconciler::default();
        // dm-0: bio-based, its I/O never passes the request tracepoints.
        for kernel in [100, 100, 900] {
            r.observe(SDB, kernel, 0);
        }
        assert_eq!(r.total(), 0);
    }

    #[test]
    fn a_new_disk_under_old_numbers_is_anchored_anew_and_the_old_count_kept() {
        let mut r = Reconciler::default();
        for (kernel, traced) in [(0, 0), (0, 0), (1_000, 996), (1_000, 996)] {
            r.observe(SDB, kernel, traced);
        }
        assert_eq!(untraced(&r), 4);
        // Removed; a new disk gets 8:16, its diskstats from 0, while the histograms of
        // these numbers go on adding up.
        for (kernel, traced) in [(10, 1_006), (10, 1_006), (510, 1_505), (510, 1_505)] {
            r.observe(SDB, kernel, traced);
        }
        assert_eq!(untraced(&r), 4 + 1);
    }

    #[test]
    fn completions_between_the_two_reads_never_count_as_missing() {
        let mut r = Reconciler::default();
        r.observe(SDB, 100, 100);
        r.observe(SDB, 100, 100);
        // The histograms were read 40 completions after diskstats: the gap goes negative.
        r.observe(SDB, 1_000, 1_040);
        assert_eq!(untraced(&r), 0);
        // And a later low reading does not take back what was reported.
        r.observe(SDB, 2_000, 1_998);
        r.observe(SDB, 3_000, 3_010);
        assert_eq!(untraced(&r), 2);
    }
}
