//! Compiles the BPF programs (CO-RE) and generates their Rust skeletons. The kernel type
//! definitions come from the build host's BTF through bpftool; CO-RE relocates field
//! accesses when the agent loads on another kernel.

use libbpf_cargo::SkeletonBuilder;
use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

const PROGRAMS: &[&str] = &["iotrace"];
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let vmlinux = out.join("vmlinux.h");
    if !vmlinux.exists() {
        let dump = Command::new("bpftool")
            .args(["btf", "dump", "file", KERNEL_BTF, "format", "c"])
            .output()
            .expect("bpftool is needed to build the agent: apt-get install bpftool (infra/bootstrap.sh does)");
        assert!(dump.status.success(), "bpftool could not read {KERNEL_BTF}: {}", String::from_utf8_lossy(&dump.stderr));
        fs::write(&vmlinux, dump.stdout).unwrap();
    }
    for name in PROGRAMS {
        let source = format!("src/bpf/{name}.bpf.c");
        SkeletonBuilder::new()
            .source(&source)
            .clang_args([format!("-I{}", out.display()), "-Wall".into(), "-Werror".into()])
            .build_and_generate(out.join(format!("{name}.skel.rs")))
            .unwrap_or_else(|e| panic!("building {source}: {e:#}"));
        println!("cargo:rerun-if-changed={source}");
        println!("cargo:rerun-if-changed=src/bpf/{name}.h");
    }
}
