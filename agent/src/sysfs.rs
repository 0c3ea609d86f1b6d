//! What sysfs says about a block device. The sysfs root is a parameter so tests run
//! against fixture trees.

use std::fs;
use std::path::{Path, PathBuf};

/// `/sys/class/block/<name>` lists disks and partitions alike; a `/` in a kernel
/// device name (cciss/c0d0) is spelt `!` there.
fn device_dir(sys_root: &Path, name: &str) -> PathBuf {
    sys_root.join("class/block").join(name.replace('/', "!"))
}

/// Partitions carry a `partition` attribute; whole disks do not.
pub fn is_partition(sys_root: &Path, name: &str) -> bool {
    device_dir(sys_root, name).join("partition").exists()
}

/// `queue/rotational` of the device, or of its parent disk for a partition.
/// None when sysfs does not say (device gone, or not mounted).
pub fn rotational(sys_root: &Path, name: &str) -> Option<bool> {
    let dir = device_dir(sys_root, name);
    [dir.join("queue/rotational"), dir.join("../queue/rotational")]
        .iter()
        .find_map(|path| fs::read_to_string(path).ok())
        .map(|text| text.trim() == "1")
}

/// The kernel's name of block device `major:minor` (DEVNAME in its uevent), if it exists.
pub fn device_name(sys_root: &Path, major: u32, minor: u32) -> Option<String> {
    let uevent = fs::read_to_string(sys_root.join(format!("dev/block/{major}:{minor}/uevent"))).ok()?;
    uevent.lines().find_map(|line| line.strip_prefix("DEVNAME=")).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/host-a/sys")
    }

    #[test]
    fn tells_partitions_from_disks() {
        assert!(is_partition(&fixture(), "sda1"));
        assert!(!is_partition(&fixture(), "sda"));
    }

    #[test]
    fn reads_rotational_of_disk_and_partition_parent() {
        assert_eq!(rotational(&fixture(), "sda"), Some(true));
        assert_eq!(rotational(&fixture(), "nvme0n1"), Some(false));
        assert_eq!(rotational(&fixture(), "sda1"), Some(true));
        assert_eq!(rotational(&fixture(), "cciss/c0d0"), Some(true));
        assert_eq!(rotational(&fixture(), "gone"), None);
    }

    #[test]
    fn names_a_device_by_its_numbers() {
        assert_eq!(device_name(&fixture(), 8, 0).as_deref(), Some("sda"));
        assert_eq!(device_name(&fixture(), 8, 99), None);
    }
}
