//! Capabilities: the agent needs CAP_BPF and CAP_PERFMON to load and attach its programs,
//! and none after. From then on it reads /proc and /sys, the maps and the ring buffer
//! through the descriptors it already holds, and writes to stdout, a socket or Kafka; so
//! it drops every capability, and an agent taken over cannot load programs or read
//! kernel memory.

use anyhow::{bail, Context, Result};
use std::path::Path;

// linux/capability.h: version 3 takes two 32-bit words per set.
const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Empties this process's effective, permitted, inheritable and ambient capability sets,
/// and sets no_new_privs so that nothing it runs gets them back.
pub fn drop_all() -> Result<()> {
    // SAFETY: plain prctl/capset calls with valid arguments; capset reads the two structs.
    unsafe {
        if libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error()).context("clearing the ambient capabilities");
        }
        let mut header = CapHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
        let data = [CapData::default(); 2];
        if libc::syscall(libc::SYS_capset, &mut header as *mut CapHeader, data.as_ptr()) != 0 {
            return Err(std::io::Error::last_os_error()).context("dropping the capabilities (capset)");
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error()).context("setting no_new_privs");
        }
    }
    let held = held(Path::new("/proc/self/status"))?;
    if held.iter().any(|(_, mask)| *mask != 0) {
        bail!("capabilities still held after dropping them: {held:?}");
    }
    Ok(())
}

/// The capability sets of a process as its status file shows them: (CapInh, …) → mask.
pub fn held(status: &Path) -> Result<Vec<(String, u64)>> {
    let text = std::fs::read_to_string(status).with_context(|| format!("reading {}", status.display()))?;
    text.lines()
        .filter(|line| ["CapInh:", "CapPrm:", "CapEff:", "CapAmb:"].iter().any(|set| line.starts_with(set)))
        .map(|line| {
            let (set, mask) = line.split_once(':').unwrap_or((line, ""));
            let mask = u64::from_str_radix(mask.trim(), 16).with_context(|| format!("{status:?}: {line}"))?;
            Ok((set.to_string(), mask))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capability_sets_are_read_from_a_status_file() {
        let dir = std::env::temp_dir().join(format!("iopipe-caps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let status = dir.join("status");
        std::fs::write(&status, "Name:\tiopipe-agent\nCapInh:\t0000000000000000\nCapPrm:\t000000c000000000\n\
                                  CapEff:\t000000c000000000\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\n")
            .unwrap();
        let sets = held(&status).unwrap();
        assert_eq!(sets, vec![("CapInh".to_string(), 0), ("CapPrm".to_string(), 0xc0_0000_0000),
                              ("CapEff".to_string(), 0xc0_0000_0000), ("CapAmb".to_string(), 0)]);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
