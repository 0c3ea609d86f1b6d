//! Compiles the BPF programs (CO-RE) and generates their Rust skeletons. The kernel type
//! definitions come from the build host's BTF through bpftool; CO-RE relocates field
//! accesses when the agent loads on another kernel. Also passes schema/pipeline.json's
//! agent_interval_s to the compiler as the --interval-ms default, and schema/sampling.json's
//! settings as the sampling options' defaults.

use libbpf_cargo::SkeletonBuilder;
use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

const PROGRAMS: &[&str] = &["iotrace"];
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";
const PIPELINE_JSON: &str = "../schema/pipeline.json";
const SAMPLING_JSON: &str = "../schema/sampling.json";

fn main() {
    default_interval_from_pipeline_json();
    sampling_defaults_from_sampling_json();
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

/// The interval the job counts a histogram's span as at least (schema/pipeline.json's
/// agent_interval_s) is the one the agent sends at unless told otherwise.
fn default_interval_from_pipeline_json() {
    let text = fs::read_to_string(PIPELINE_JSON).unwrap_or_else(|e| panic!("reading {PIPELINE_JSON}: {e}"));
    let pipeline: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{PIPELINE_JSON}: {e}"));
    let seconds = pipeline["agent_interval_s"].as_u64().unwrap_or_else(|| panic!("{PIPELINE_JSON} has no whole agent_interval_s"));
    println!("cargo:rustc-env=IOPIPE_DEFAULT_INTERVAL_MS={}", seconds * 1000);
    println!("cargo:rerun-if-changed={PIPELINE_JSON}");
}

/// Each sampling setting of schema/sampling.json as IOPIPE_DEFAULT_<KEY>, the default of
/// its --flag (the key, dashes for underscores): the synthetic fleets read the same file.
fn sampling_defaults_from_sampling_json() {
    let text = fs::read_to_string(SAMPLING_JSON).unwrap_or_else(|e| panic!("reading {SAMPLING_JSON}: {e}"));
    let sampling: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{SAMPLING_JSON}: {e}"));
    let settings = sampling.as_object().unwrap_or_else(|| panic!("{SAMPLING_JSON} is not an object"));
    for (key, value) in settings.iter().filter(|(key, _)| !key.starts_with('$')) {
        assert!(value.is_number(), "{SAMPLING_JSON}: {key} is not a number");
        println!("cargo:rustc-env=IOPIPE_DEFAULT_{}={value}", key.to_uppercase());
    }
    println!("cargo:rerun-if-changed={SAMPLING_JSON}");
}
