//! What an agent restart can lose, counted. With `--state-file`, the agent keeps each
//! traced disk's reconciliation position as of the records it has delivered: the
//! completions /proc/diskstats counted that those records account for, in histograms or
//! reported missing (reconcile.rs). An agent started again on the same boot and host
//! resumes each disk that is still the same disk from there, instead of from its own first
//! reading: the completions of the interval the killed agent had not delivered, and all
//! those while no agent ran, are reported missing and counted apart as lost to the restart.
//!
//! Delivered is what the output can know (Sink::records_settled): written to the pipe or
//! socket, acknowledged by the Kafka brokers. A position waits until every record sent up
//! to it is settled, so it is never ahead of what was delivered; behind it, a restart
//! reports more missing than was lost, never less.
//!
//! The file is replaced whole (a temporary file renamed over it): a kill leaves the old
//! position or the new one. It is not synced to the disk: it serves within one boot only,
//! and only a crash of the kernel, which ends the boot, loses what the page cache holds;
//! a sync every interval would add a journal commit per second to a disk the agent watches.

use crate::iotrace::DiskId;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet, VecDeque};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Names the layout of the file, so that another one is refused, not misread.
const FORMAT: &str = "iopipe-agent-state.v1";

/// Positions held while the output has not settled their records (Kafka away for its
/// 5 min of retries at the shortest interval); past it the oldest are dropped, which only
/// holds the written position back longer.
const MAX_PENDING: usize = 1024;

/// One disk's position: its identity, and where its count stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskPosition {
    pub name: String,
    pub major: u32,
    pub minor: u32,
    /// Its reads, writes and discards in /proc/diskstats at the agent's last reading: a
    /// disk whose count is below it now is another disk, or the same one reset.
    pub diskstats_completions: u64,
    /// Those of its completions the delivered records account for: in histograms or
    /// reported missing.
    pub accounted_completions: u64,
}

impl DiskPosition {
    fn disk(&self) -> DiskId {
        DiskId { major: self.major, minor: self.minor }
    }
}

#[derive(Serialize, Deserialize)]
struct Stored {
    format: String,
    /// /proc/sys/kernel/random/boot_id: diskstats count from 0 at every boot.
    boot_id: String,
    host: String,
    disks: Vec<DiskPosition>,
}

/// The state file of one agent: its path, and the boot and host it belongs to.
pub struct StateFile {
    pub path: PathBuf,
    boot_id: String,
    host: String,
}

impl StateFile {
    pub fn new(path: PathBuf, boot_id: &str, host: &str) -> Self {
        StateFile { path, boot_id: boot_id.to_string(), host: host.to_string() }
    }

    /// The positions a previous agent of this boot and host left, or why there are none.
    pub fn load(&self) -> Result<Vec<DiskPosition>, String> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Err("does not exist yet".into()),
            Err(err) => return Err(format!("cannot be read ({err})")),
        };
        let stored: Stored = serde_json::from_str(&text).map_err(|err| format!("is not an agent state file ({err})"))?;
        if stored.format != FORMAT {
            return Err(format!("has format {:?}, not {FORMAT:?}", stored.format));
        }
        if stored.boot_id != self.boot_id {
            return Err(format!("is of boot {}, not this one ({}): diskstats start from 0 at boot", stored.boot_id, self.boot_id));
        }
        if stored.host != self.host {
            return Err(format!("is of host {:?}, not {:?}", stored.host, self.host));
        }
        Ok(stored.disks)
    }

    /// Replaces the file whole: written beside it, then renamed over it.
    pub fn save(&self, disks: &[DiskPosition]) -> io::Result<()> {
        let stored = Stored { format: FORMAT.into(), boot_id: self.boot_id.clone(), host: self.host.clone(), disks: disks.to_vec() };
        let mut temporary = self.path.clone().into_os_string();
        temporary.push(".tmp");
        fs::write(&temporary, serde_json::to_vec(&stored)?)?;
        fs::rename(&temporary, &self.path)
    }
}

/// The kernel's boot id under `proc_root`, which tells one boot from the next.
pub fn boot_id(proc_root: &Path) -> io::Result<String> {
    let id = fs::read_to_string(proc_root.join("sys/kernel/random/boot_id"))?;
    match id.trim() {
        "" => Err(io::Error::new(io::ErrorKind::InvalidData, "empty boot_id")),
        id => Ok(id.to_string()),
    }
}

/// A disk resumed from its stored position.
#[derive(Debug, PartialEq, Eq)]
pub struct Resumed {
    pub disk: DiskId,
    pub name: String,
    pub accounted: u64,
    /// This agent's reading of it, taken before its programs attached.
    pub kernel: u64,
}

impl Resumed {
    /// Its completions since the position: none of them can be in this agent's histograms.
    pub fn lost(&self) -> u64 {
        self.kernel.saturating_sub(self.accounted)
    }
}

/// Which disks of this agent's first reading (disk, name, completions) resume from their
/// stored position: the same numbers and name, and a count not below the stored one.
/// Every other stored disk is named, with why it counts from this start, or why its
/// completions since the position cannot be counted (it is gone).
pub fn resumable<'a>(stored: &[DiskPosition], reading: impl IntoIterator<Item = (DiskId, &'a str, u64)>) -> (Vec<Resumed>, Vec<String>) {
    let mut by_disk: HashMap<DiskId, &DiskPosition> = stored.iter().map(|p| (p.disk(), p)).collect();
    let mut resumed = Vec::new();
    let mut notes = Vec::new();
    for (disk, name, kernel) in reading {
        let Some(position) = by_disk.remove(&disk) else { continue };
        let numbers = format!("{}:{}", disk.major, disk.minor);
        if position.name != name {
            notes.push(format!("{name} ({numbers}) was {} in the state file: another disk, counted from this start", position.name));
        } else if kernel < position.diskstats_completions {
            notes.push(format!(
                "{name} ({numbers}) has {kernel} completions, below the {} in the state file: another disk or a reset, counted from this start",
                position.diskstats_completions
            ));
        } else {
            resumed.push(Resumed { disk, name: name.to_string(), accounted: position.accounted_completions, kernel });
        }
    }
    let mut gone: Vec<&DiskPosition> = by_disk.into_values().collect();
    gone.sort_by_key(|p| p.disk());
    for position in gone {
        notes.push(format!(
            "{} ({}:{}) in the state file is gone: its completions since it cannot be counted",
            position.name, position.major, position.minor
        ));
    }
    (resumed, notes)
}

/// The positions of the intervals sent, each held until the output has settled every
/// record sent up to it, then written to the state file.
pub struct PositionKeeper {
    file: StateFile,
    /// (records handed to the output when the position was taken, the position), oldest first.
    pending: VecDeque<(u64, Vec<DiskPosition>)>,
    written: Option<Vec<DiskPosition>>,
    pub write_errors: u64,
    reported_errors: HashSet<String>,
}

impl PositionKeeper {
    pub fn new(file: StateFile) -> Self {
        PositionKeeper { file, pending: VecDeque::new(), written: None, write_errors: 0, reported_errors: HashSet::new() }
    }

    /// The position as of the first `handed` records handed to the output.
    pub fn sent(&mut self, handed: u64, position: Vec<DiskPosition>) {
        let newest = self.pending.back().map(|(_, p)| p).or(self.written.as_ref());
        if newest == Some(&position) {
            return;
        }
        self.pending.push_back((handed, position));
        if self.pending.len() > MAX_PENDING {
            self.pending.pop_front();
        }
    }

    /// Writes the newest position whose records are all settled (the first `settled`).
    pub fn settled(&mut self, settled: u64) {
        let mut newest = None;
        while self.pending.front().is_some_and(|(handed, _)| *handed <= settled) {
            newest = self.pending.pop_front().map(|(_, position)| position);
        }
        let Some(position) = newest else { return };
        match self.file.save(&position) {
            Ok(()) => self.written = Some(position),
            Err(err) => {
                self.write_errors += 1;
                // A write that fails fails the same way every interval: say so once per cause.
                let message = format!("cannot write the state file {}: {err}", self.file.path.display());
                if self.reported_errors.insert(message.clone()) {
                    eprintln!("iopipe-agent: {message} (a restart will count from the last position written; reported once, counted every time)");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::Reconciler;

    const SDB: DiskId = DiskId { major: 8, minor: 16 };
    const SDC: DiskId = DiskId { major: 8, minor: 32 };

    fn position(name: &str, disk: DiskId, diskstats: u64, accounted: u64) -> DiskPosition {
        DiskPosition { name: name.into(), major: disk.major, minor: disk.minor, diskstats_completions: diskstats, accounted_completions: accounted }
    }

    /// A directory of its own for each test, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(test: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("iopipe-agent-{}-{test}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn state(&self, boot_id: &str, host: &str) -> StateFile {
            StateFile::new(self.0.join("agent-state.json"), boot_id, host)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_saved_position_loads_on_the_same_boot_and_host_and_leaves_no_temporary_file() {
        let scratch = Scratch::new("roundtrip");
        let positions = vec![position("sdb", SDB, 6_000, 5_990)];
        scratch.state("boot-1", "db-3").save(&positions).unwrap();
        assert_eq!(scratch.state("boot-1", "db-3").load(), Ok(positions));
        assert_eq!(fs::read_dir(&scratch.0).unwrap().count(), 1);
    }

    #[test]
    fn a_state_file_of_another_boot_or_host_is_refused() {
        let scratch = Scratch::new("foreign");
        scratch.state("boot-1", "db-3").save(&[position("sdb", SDB, 6_000, 5_990)]).unwrap();
        let other_boot = scratch.state("boot-2", "db-3").load().unwrap_err();
        assert!(other_boot.contains("is of boot boot-1, not this one (boot-2)"), "{other_boot}");
        let other_host = scratch.state("boot-1", "db-4").load().unwrap_err();
        assert!(other_host.contains("is of host \"db-3\""), "{other_host}");
    }

    #[test]
    fn a_missing_corrupt_or_unreadable_state_file_says_why() {
        let scratch = Scratch::new("corrupt");
        let state = scratch.state("boot-1", "db-3");
        assert_eq!(state.load(), Err("does not exist yet".to_string()));
        for corrupt in ["", "{\"format\":\"iopipe-agent-state.v1\",\"boot_id\":", "[1,2]", "\u{0}\u{ff}"] {
            fs::write(&state.path, corrupt).unwrap();
            assert!(state.load().unwrap_err().starts_with("is not an agent state file"), "{corrupt:?}");
        }
        fs::write(&state.path, b"\xff\xfe").unwrap();
        assert!(state.load().unwrap_err().starts_with("cannot be read"));
        fs::write(&state.path, r#"{"format":"iopipe-agent-state.v9","boot_id":"boot-1","host":"db-3","disks":[]}"#).unwrap();
        assert!(state.load().unwrap_err().starts_with("has format \"iopipe-agent-state.v9\""));
    }

    #[test]
    fn the_boot_id_is_read_under_the_proc_root() {
        let scratch = Scratch::new("boot-id");
        fs::create_dir_all(scratch.0.join("sys/kernel/random")).unwrap();
        fs::write(scratch.0.join("sys/kernel/random/boot_id"), "5e1f0c2a-0000-4000-8000-000000000001\n").unwrap();
        assert_eq!(boot_id(&scratch.0).unwrap(), "5e1f0c2a-0000-4000-8000-000000000001");
        assert!(boot_id(Path::new("/nonexistent")).is_err());
    }

    #[test]
    fn only_the_same_disk_with_a_count_not_gone_back_resumes() {
        let stored = [position("sdb", SDB, 6_000, 5_990), position("sdc", SDC, 900, 900), position("sdd", DiskId { major: 8, minor: 48 }, 5, 5)];
        // sdb resumes; 8:32 is now a disk named otherwise; sdd is gone.
        let (resumed, notes) = resumable(&stored, [(SDB, "sdb", 6_350), (SDC, "sdx", 1_000)]);
        assert_eq!(resumed, [Resumed { disk: SDB, name: "sdb".into(), accounted: 5_990, kernel: 6_350 }]);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("sdx (8:32) was sdc in the state file"), "{notes:?}");
        assert!(notes[1].starts_with("sdd (8:48) in the state file is gone"), "{notes:?}");
    }

    #[test]
    fn a_replaced_disk_under_the_same_name_and_numbers_counts_from_this_start() {
        let stored = [position("sdb", SDB, 6_000, 5_990)];
        let (resumed, notes) = resumable(&stored, [(SDB, "sdb", 120)]);
        assert!(resumed.is_empty());
        assert!(notes[0].contains("has 120 completions, below the 6000"), "{notes:?}");
    }

    #[test]
    fn across_a_kill_and_a_restart_the_kernels_count_is_both_runs_histograms_and_missing() {
        let scratch = Scratch::new("across");
        // The first run starts at 1,000 completions, delivers histograms of 500 and reports 2
        // missing at its last reading (1,502).
        let mut first = Reconciler::starting_from([(SDB, 1_000)]);
        first.observe(SDB, 1_502, 500);
        let delivered = first.positions(&HashMap::from([(SDB, 500)]));
        let mut keeper = PositionKeeper::new(scratch.state("boot-1", "db-3"));
        keeper.sent(10, delivered.into_iter().map(|(disk, kernel, accounted)| position("sdb", disk, kernel, accounted)).collect());
        keeper.settled(10);
        // Killed mid-interval; 300 more complete before the second run's first reading.
        let (resumed, notes) = resumable(&scratch.state("boot-1", "db-3").load().unwrap(), [(SDB, "sdb", 1_802)]);
        assert!(notes.is_empty(), "{notes:?}");
        let mut second = Reconciler::starting_from([(SDB, 1_802)]);
        for disk in &resumed {
            second.resume(disk.disk, disk.accounted, disk.kernel);
        }
        second.observe(SDB, 2_000, 197);
        assert_eq!(second.total_lost_to_restart(), 300);
        assert_eq!(2_000 - 1_000, (500 + 2) + (197 + second.total()));
    }

    #[test]
    fn the_written_position_never_passes_records_the_output_has_not_settled() {
        let scratch = Scratch::new("keeper");
        let mut keeper = PositionKeeper::new(scratch.state("boot-1", "db-3"));
        let read = || scratch.state("boot-1", "db-3").load();
        keeper.sent(10, vec![position("sdb", SDB, 100, 100)]);
        keeper.sent(20, vec![position("sdb", SDB, 200, 199)]);
        keeper.settled(9);
        assert_eq!(read(), Err("does not exist yet".to_string()));
        keeper.settled(19);
        assert_eq!(read(), Ok(vec![position("sdb", SDB, 100, 100)]));
        keeper.sent(30, vec![position("sdb", SDB, 300, 298)]);
        keeper.settled(30);
        assert_eq!(read(), Ok(vec![position("sdb", SDB, 300, 298)]), "the newest settled one, past the one between");
        assert_eq!(keeper.write_errors, 0);
    }

    #[test]
    fn an_unchanged_position_is_not_written_again_and_a_failed_write_is_counted() {
        let scratch = Scratch::new("unwritable");
        let mut keeper = PositionKeeper::new(StateFile::new(scratch.0.join("missing-dir/state.json"), "boot-1", "db-3"));
        keeper.sent(1, vec![position("sdb", SDB, 100, 100)]);
        keeper.sent(2, vec![position("sdb", SDB, 100, 100)]);
        assert_eq!(keeper.pending.len(), 1);
        keeper.settled(2);
        keeper.sent(3, vec![position("sdb", SDB, 101, 101)]);
        keeper.settled(3);
        assert_eq!(keeper.write_errors, 2);
        assert_eq!(keeper.reported_errors.len(), 1);
    }
}
