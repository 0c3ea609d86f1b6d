//! Completions the kernel counted on a disk (/proc/diskstats) that are missing from its
//! histograms, so that none vanishes unreported: completions the agent could not time
//! (ios_untracked), and completions whose BPF program the kernel did not run (seen on
//! Linux 6.18 for about 1 in 8,000 to 40,000 under load, with no recursion miss
//! reported, while ftrace saw every one of them).
//!
//! Counted from the agent's start: each disk's count in a reading of /proc/diskstats taken
//! before the programs attach is its anchor, so every completion after it is either in the
//! histograms or missing. (A disk that appears later counts from 0, as its diskstats do.)
//! Each interval the kernel's count is read first and the histograms after (run.rs), so a
//! completion between the two reads is in the histograms only: kernel - traced reads low,
//! never high, and the count is a lower bound, exact whenever the disk is idle. It holds
//! on a busy host as on an idle one: no reading has to find the disk still.

use crate::iotrace::DiskId;
use std::collections::HashMap;

pub struct Reconciler {
    ledgers: HashMap<DiskId, Ledger>,
}

#[derive(Default)]
struct Ledger {
    /// (kernel, traced) at the previous reading.
    previous: Option<(u64, u64)>,
    /// kernel - traced when its count began: the kernel's count before the programs
    /// attached (nothing traced yet), or 0 for a disk that appeared since.
    anchor: i128,
    /// The highest (kernel - traced) - anchor seen.
    untraced: u64,
    /// What earlier disks of these numbers reported: a counter never goes back.
    carried: u64,
    /// Whether the histograms hold any of its completions: a bio-based device (dm, md,
    /// zram) has none, and its I/O is not missing, only not traced per request.
    traced_any: bool,
}

impl Reconciler {
    /// `before_tracing`: each disk's kernel completions, read before the programs attached.
    pub fn starting_from(before_tracing: impl IntoIterator<Item = (DiskId, u64)>) -> Self {
        let ledgers = before_tracing
            .into_iter()
            .map(|(disk, kernel)| (disk, Ledger { anchor: i128::from(kernel), ..Ledger::default() }))
            .collect();
        Reconciler { ledgers }
    }

    /// One reading of a disk: the kernel's completions (cumulative, read first) and the
    /// completions in its histograms since the agent attached (read after).
    pub fn observe(&mut self, disk: DiskId, kernel: u64, traced: u64) {
        let ledger = self.ledgers.entry(disk).or_default();
        if let Some((_, traced_before)) = ledger.previous.filter(|(before, _)| kernel < *before) {
            // Another disk took these numbers, its diskstats from 0, while the histograms of
            // the numbers go on adding up from somewhere after the previous reading: anchoring
            // at that reading's count keeps the count a lower bound.
            ledger.carried += ledger.untraced;
            ledger.untraced = 0;
            ledger.anchor = -i128::from(traced_before);
        }
        let missing = u64::try_from(i128::from(kernel) - i128::from(traced) - ledger.anchor).unwrap_or(0);
        ledger.untraced = ledger.untraced.max(missing);
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
    fn completions_missing_since_the_start_are_counted_on_a_disk_that_never_pauses() {
        // 5,000 completions before the agent attached; then it misses some while the disk
        // is busy at every reading (each reading low by what completed between its reads).
        let mut r = Reconciler::starting_from([(SDB, 5_000)]);
        for (kernel, traced) in [(5_100, 98), (5_200, 199), (6_000, 996)] {
            r.observe(SDB, kernel, traced);
        }
        assert_eq!(untraced(&r), 4);
        r.observe(SDB, 6_000, 995); // idle: exact
        assert_eq!(untraced(&r), 5);
        assert_eq!(r.total(), 5);
    }

    #[test]
    fn a_disk_that_appears_later_counts_from_zero() {
        let mut r = Reconciler::starting_from([]);
        for (kernel, traced) in [(300, 299), (1_000, 997), (1_000, 997)] {
            r.observe(SDB, kernel, traced);
        }
        assert_eq!(untraced(&r), 3);
    }

    #[test]
    fn a_disk_with_no_traced_completion_is_not_reported() {
        let mut r = Reconciler::starting_from([(SDB, 100)]);
        // dm-0: bio-based, its I/O never passes the request tracepoints.
        for kernel in [100, 100, 900] {
            r.observe(SDB, kernel, 0);
        }
        assert_eq!(r.total(), 0);
    }

    #[test]
    fn a_new_disk_under_old_numbers_is_anchored_anew_and_the_old_count_kept() {
        let mut r = Reconciler::starting_from([(SDB, 0)]);
        for (kernel, traced) in [(1_000, 996), (1_000, 996)] {
            r.observe(SDB, kernel, traced);
        }
        assert_eq!(untraced(&r), 4);
        // Removed; a new disk gets 8:16, its diskstats from 0, while the histograms of
        // these numbers go on adding up; it misses one of its 510.
        for (kernel, traced) in [(10, 1_006), (510, 1_505), (510, 1_505)] {
            r.observe(SDB, kernel, traced);
        }
        assert_eq!(untraced(&r), 4 + 1);
    }

    #[test]
    fn completions_between_the_two_reads_never_count_as_missing() {
        let mut r = Reconciler::starting_from([(SDB, 0)]);
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
