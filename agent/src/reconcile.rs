//! Completions the kernel counted on a disk (/proc/diskstats) that are missing from its
//! histograms, so that none vanishes unreported: completions the agent could not time
//! (ios_untracked), and completions whose BPF program the kernel did not run (seen on
//! Linux 6.18 for about 1 in 8,000 to 40,000 under load, with no recursion miss
//! reported, while ftrace saw every one of them).
//!
//! A write in a flush sequence (a cache flush the disk takes as a request of its own) is
//! counted by the kernel when the sequence ends, by the histograms when its data, if it
//! has any, completes: the tracer accounts it at its end (tracer.rs, FlushSequences).
//!
//! Counted from the agent's start: each disk's count in a reading of /proc/diskstats taken
//! before the programs attach is its anchor, so every completion after it is either in the
//! histograms or missing. (A disk that appears later counts from 0, as its diskstats do.)
//! Each interval the kernel's count is read first and the histograms after (run.rs), so a
//! completion between the two reads is in the histograms only: kernel - traced reads low,
//! never high, and the count is a lower bound, exact whenever the disk is idle. It holds
//! on a busy host as on an idle one: no reading has to find the disk still.
//!
//! A restarted agent resumes a disk from the position its predecessor's delivered records
//! left (restart.rs) instead of from its own first reading: the completions since that
//! position and before its own programs attached are missing too, and counted apart as
//! lost to the restart.

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
    /// Completions after the position a previous agent's delivered records left and before
    /// this agent's programs attached: part of `untraced`.
    lost_to_restart: u64,
}

impl Ledger {
    /// The kernel's completions (in the current disk's count) that the histograms holding
    /// `traced` and the missing reported account for. Never above the kernel's count when
    /// the histograms were read: `untraced` is a lower bound of what was missing by then.
    fn accounted(&self, traced: u64) -> u64 {
        let accounted = self.anchor + i128::from(traced) + i128::from(self.untraced);
        u64::try_from(accounted.max(0)).unwrap_or(u64::MAX)
    }
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

    /// Resumes a disk from `accounted`, the completions a previous agent's delivered records
    /// account for, given `kernel`, this agent's reading taken before its programs
    /// attached: everything between the two is missing, lost to the restart.
    pub fn resume(&mut self, disk: DiskId, accounted: u64, kernel: u64) {
        let lost = kernel.saturating_sub(accounted);
        self.ledgers.insert(
            disk,
            Ledger {
                previous: Some((kernel, 0)),
                anchor: i128::from(accounted),
                untraced: lost,
                carried: 0,
                // It was traced before the restart: what it lost is reported even if it
                // stays idle now.
                traced_any: true,
                lost_to_restart: lost,
            },
        );
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

    /// Each disk's completions lost to the restart this agent resumed from (non-zero).
    pub fn lost_to_restart(&self) -> impl Iterator<Item = (DiskId, u64)> + '_ {
        self.ledgers.iter().filter(|(_, l)| l.lost_to_restart > 0).map(|(disk, l)| (*disk, l.lost_to_restart))
    }

    pub fn total_lost_to_restart(&self) -> u64 {
        self.lost_to_restart().map(|(_, n)| n).sum()
    }

    /// Where each traced disk's count stands, for a restarted agent to resume from:
    /// (disk, its kernel count at the last reading, the completions accounted for by
    /// histograms holding `traced` and by the missing reported), in disk order.
    pub fn positions(&self, traced: &HashMap<DiskId, u64>) -> Vec<(DiskId, u64, u64)> {
        let mut positions: Vec<_> = self
            .ledgers
            .iter()
            .filter(|(_, l)| l.traced_any)
            .filter_map(|(disk, l)| {
                let (kernel, _) = l.previous?;
                Some((*disk, kernel, l.accounted(traced.get(disk).copied().unwrap_or(0))))
            })
            .collect();
        positions.sort_unstable();
        positions
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

    fn traced(n: u64) -> HashMap<DiskId, u64> {
        HashMap::from([(SDB, n)])
    }

    #[test]
    fn the_position_is_what_the_histograms_and_the_missing_reported_account_for() {
        let mut r = Reconciler::starting_from([(SDB, 5_000)]);
        r.observe(SDB, 6_000, 996);
        assert_eq!(r.positions(&traced(996)), [(SDB, 6_000, 5_000 + 996 + 4)]);
        // Histograms sent after the last reading (the last interval, at a stop) count too.
        assert_eq!(r.positions(&traced(1_010)), [(SDB, 6_000, 5_000 + 1_010 + 4)]);
    }

    #[test]
    fn a_restart_reports_what_completed_since_the_delivered_position_as_lost_and_missing() {
        // The killed agent's delivered records account for 6,000 completions; this agent's
        // reading before attaching is 6,350; then it traces 500 of the next 501.
        let mut r = Reconciler::starting_from([(SDB, 6_350)]);
        r.resume(SDB, 6_000, 6_350);
        assert_eq!((untraced(&r), r.total_lost_to_restart()), (350, 350));
        r.observe(SDB, 6_851, 500);
        assert_eq!(untraced(&r), 351);
        assert_eq!(r.lost_to_restart().collect::<Vec<_>>(), [(SDB, 350)]);
        // The kernel's count is the sum of both agents' histograms and missing completions.
        assert_eq!(r.positions(&traced(500)), [(SDB, 6_851, 6_000 + 500 + 351)]);
    }

    #[test]
    fn a_resumed_disk_that_stays_idle_still_reports_its_loss() {
        let mut r = Reconciler::starting_from([(SDB, 100)]);
        r.resume(SDB, 90, 100);
        r.observe(SDB, 100, 0);
        assert_eq!((untraced(&r), r.total_lost_to_restart()), (10, 10));
    }

    #[test]
    fn an_agent_started_without_a_position_loses_nothing_to_a_restart() {
        let mut r = Reconciler::starting_from([(SDB, 6_350)]);
        r.observe(SDB, 6_851, 500);
        assert_eq!((untraced(&r), r.total_lost_to_restart()), (1, 0));
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
