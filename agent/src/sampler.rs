//! The diskstats sampler: one read of /proc/diskstats, filtered to the devices iostat
//! would show, each with its rotational flag from sysfs.

use crate::diskstats::{self, DiskCounters, LineError};
use crate::sysfs;
use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

pub struct Sampler {
    pub proc_root: PathBuf,
    pub sys_root: PathBuf,
    pub include_partitions: bool,
    pub selection: DiskSelection,
}

/// The disks an agent reports, by the names /proc/diskstats gives them (--disk): every
/// disk when none is named.
#[derive(Clone, Debug, Default)]
pub struct DiskSelection(Option<BTreeSet<String>>);

impl DiskSelection {
    pub fn named(names: &[String]) -> Self {
        DiskSelection((!names.is_empty()).then(|| names.iter().cloned().collect()))
    }

    pub fn selects(&self, name: &str) -> bool {
        self.0.as_ref().is_none_or(|names| names.contains(name))
    }

    /// The named disks `sample` lacks: not on the host, not used yet, or partitions
    /// without --partitions.
    pub fn absent_from<'a>(&'a self, sample: &Sample) -> Vec<&'a str> {
        let present: BTreeSet<&str> = sample.disks.iter().map(|d| d.counters.name.as_str()).collect();
        self.0.iter().flatten().map(String::as_str).filter(|name| !present.contains(name)).collect()
    }
}

pub struct SampledDisk {
    pub counters: DiskCounters,
    /// None when sysfs does not know the device (it vanished, or sysfs is not mounted).
    pub rotational: Option<bool>,
}

pub struct Sample {
    pub ts_ns: u64,
    pub disks: Vec<SampledDisk>,
    pub bad_lines: Vec<LineError>,
}

impl Sampler {
    pub fn diskstats_path(&self) -> PathBuf {
        self.proc_root.join("diskstats")
    }

    pub fn sample(&self) -> io::Result<Sample> {
        let text = fs::read_to_string(self.diskstats_path())?;
        let ts_ns = wall_clock_ns();
        let (all, bad_lines) = diskstats::parse(&text);
        let disks = all
            .into_iter()
            .filter(|d| !d.never_used())
            .filter(|d| self.selection.selects(&d.name))
            .filter(|d| self.include_partitions || !sysfs::is_partition(&self.sys_root, &d.name))
            .map(|counters| SampledDisk { rotational: sysfs::rotational(&self.sys_root, &counters.name), counters })
            .collect();
        Ok(Sample { ts_ns, disks, bad_lines })
    }
}

pub fn wall_clock_ns() -> u64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970");
    u64::try_from(since_epoch.as_nanos()).expect("wall clock fits in u64 ns until 2554")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn host_a() -> Sampler {
        let root = crate::manifest_dir().join("tests/fixtures/host-a");
        Sampler { proc_root: root.join("proc"), sys_root: root.join("sys"), include_partitions: false, selection: DiskSelection::default() }
    }

    fn names(sample: &Sample) -> Vec<&str> {
        sample.disks.iter().map(|d| d.counters.name.as_str()).collect()
    }

    #[test]
    fn keeps_used_whole_disks_only() {
        let sample = host_a().sample().unwrap();
        assert_eq!(names(&sample), ["sda", "nvme0n1", "dm-0", "zram0", "cciss/c0d0"]);
        assert_eq!(sample.bad_lines.len(), 1);
    }

    #[test]
    fn includes_partitions_when_asked() {
        let sampler = Sampler { include_partitions: true, ..host_a() };
        assert!(names(&sampler.sample().unwrap()).contains(&"sda1"));
    }

    #[test]
    fn keeps_the_named_disks_only_and_says_which_it_lacks() {
        let named = ["nvme0n1", "dm-0", "sdq", "sda1"].map(String::from);
        let sampler = Sampler { selection: DiskSelection::named(&named), ..host_a() };
        let sample = sampler.sample().unwrap();
        assert_eq!(names(&sample), ["nvme0n1", "dm-0"]);
        assert_eq!(sampler.selection.absent_from(&sample), ["sda1", "sdq"]);
        let with_partitions = Sampler { include_partitions: true, ..sampler };
        assert_eq!(with_partitions.selection.absent_from(&with_partitions.sample().unwrap()), ["sdq"]);
    }

    #[test]
    fn no_disk_named_selects_every_disk() {
        assert!(DiskSelection::named(&[]).selects("sda"));
        assert!(DiskSelection::named(&[]).absent_from(&host_a().sample().unwrap()).is_empty());
    }

    #[test]
    fn missing_proc_root_is_an_error_naming_the_path() {
        let sampler = Sampler { proc_root: PathBuf::from("/nonexistent/proc"), ..host_a() };
        assert!(sampler.sample().is_err());
        assert_eq!(sampler.diskstats_path(), Path::new("/nonexistent/proc/diskstats"));
    }
}
