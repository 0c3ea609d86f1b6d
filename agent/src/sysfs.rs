//! What sysfs says about a block device. The sysfs root is a parameter so tests run
//! against fixture trees.

use std::fs;
use std::ops::RangeInclusive;
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

/// Request queues the kernel has now, at least: one per whole disk (`/sys/block`) and
/// one per SCSI device (`/sys/class/scsi_device`; a disk's is counted twice, which errs
/// on the side of room).
pub fn request_queues(sys_root: &Path) -> usize {
    ["block", "class/scsi_device"].iter().filter_map(|dir| fs::read_dir(sys_root.join(dir)).ok()).map(Iterator::count).sum()
}

/// What a disk says it is, where sysfs tells: the model and serial a ticket names, and
/// how fast its platters spin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub model: Option<String>,
    pub serial: Option<String>,
    pub rpm: Option<u32>,
}

/// SCSI/ATA (device/model, device/vpd_pg80), NVMe (device/model, device/serial: the
/// controller's) and virtio (serial) disks; virtual disks usually have neither.
pub fn identity(sys_root: &Path, name: &str) -> Identity {
    let dir = device_dir(sys_root, name);
    let serial = read_trimmed(&dir.join("device/serial"))
        .or_else(|| read_trimmed(&dir.join("serial")))
        .or_else(|| fs::read(dir.join("device/vpd_pg80")).ok().and_then(|page| unit_serial_number(&page)));
    let rpm = fs::read(dir.join("device/vpd_pgb1")).ok().and_then(|page| medium_rotation_rate(&page));
    Identity { model: read_trimmed(&dir.join("device/model")), serial, rpm }
}

fn read_trimmed(path: &Path) -> Option<String> {
    let text = fs::read(path).ok()?;
    printable(&text)
}

/// SCSI VPD page 0x80 (Unit Serial Number): a 4-byte header whose last byte is the length.
fn unit_serial_number(page: &[u8]) -> Option<String> {
    if page.len() < 4 || page[1] != 0x80 {
        return None;
    }
    let end = (4 + usize::from(page[3])).min(page.len());
    printable(&page[4..end])
}

/// The nominal rotation rates, in rpm, SCSI VPD page 0xB1 can report (SBC-3: 0x0401 to
/// 0xFFFE; 0x0001 is a medium that does not rotate, 0 a rate not reported).
pub const ROTATION_RATES: RangeInclusive<u32> = 0x0401..=0xFFFE;

/// VPD page 0xB1 (Block Device Characteristics), bytes 4-5: the nominal rotation rate,
/// where it is one of ROTATION_RATES (libata fills it from ATA IDENTIFY word 217).
fn medium_rotation_rate(page: &[u8]) -> Option<u32> {
    if page.len() < 6 || page[1] != 0xB1 {
        return None;
    }
    let rate = u32::from(u16::from_be_bytes([page[4], page[5]]));
    ROTATION_RATES.contains(&rate).then_some(rate)
}

/// Trimmed printable ASCII; None if nothing is left (sysfs pads with spaces and NULs).
fn printable(bytes: &[u8]) -> Option<String> {
    let text: String = bytes.iter().filter(|b| b.is_ascii_graphic() || **b == b' ').map(|&b| char::from(b)).collect();
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> PathBuf {
        crate::manifest_dir().join("tests/fixtures/host-a/sys")
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
    fn reads_model_and_serial_of_scsi_nvme_and_virtio_disks() {
        let sda = identity(&fixture(), "sda");
        assert_eq!(sda.model.as_deref(), Some("ST4000NM0035-1V4"));
        assert_eq!(sda.serial.as_deref(), Some("ZC18JXYZ"), "from VPD page 0x80");
        let nvme = identity(&fixture(), "nvme0n1");
        assert_eq!((nvme.model.as_deref(), nvme.serial.as_deref()), (Some("Samsung SSD 980 PRO 1TB"), Some("S5GXNF0R123456")));
        assert_eq!(identity(&fixture(), "vda").serial.as_deref(), Some("iopipe-virtio-7"));
        assert_eq!(identity(&fixture(), "dm-0"), Identity::default());
    }

    #[test]
    fn reads_the_rotation_rate_a_disk_reports_in_vpd_page_b1() {
        assert_eq!(identity(&fixture(), "sda").rpm, Some(7200));
        assert_eq!(identity(&fixture(), "nvme0n1").rpm, None, "no page: not reported");
        let page = |rate: u16| [[0x00, 0xB1, 0x00, 0x3C].as_slice(), &rate.to_be_bytes()].concat();
        assert_eq!(medium_rotation_rate(&page(15_000)), Some(15_000));
        assert_eq!(medium_rotation_rate(&page(1)), None, "a medium that does not rotate");
        assert_eq!(medium_rotation_rate(&page(0)), None, "not reported");
        assert_eq!(medium_rotation_rate(&[0x00, 0x80, 0x00, 0x3C, 0x1C, 0x20]), None, "another page");
    }

    #[test]
    fn names_a_device_by_its_numbers() {
        assert_eq!(device_name(&fixture(), 8, 0).as_deref(), Some("sda"));
        assert_eq!(device_name(&fixture(), 8, 99), None);
    }
}
