#!/usr/bin/env python3
"""What tracing costs the I/O it watches: fio at its maximum rate on a RAM-backed block
device (a loop device over a tmpfs file: request-based, unlike zram, so the block_rq
tracepoints fire), without any tracer and with each tracer, side by side in every round.

For each tracer: IOPS against the baseline of the same round (median over rounds), the
tracer process's CPU per 100k IOPS, its peak RSS, and for iopipe-agent the kernel's own
accounting of its BPF programs (ns per I/O, with kernel.bpf_stats_enabled).

Run as root: `make bench` (writes agent/bench/RESULTS.md)."""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PEER_PACKAGES = {"bpftrace": "bpftrace", "biolatency-bpfcc": "bpfcc-tools", "biosnoop-bpfcc": "bpfcc-tools"}


def log(message):
    print(f"[bench] {message}", flush=True)


class Tracer:
    """One tracing tool run around a fio run; `ready` is a line it prints once attached."""

    def __init__(self, name, argv, ready, seen):
        self.name, self.argv, self.ready = name, argv, ready
        self.seen_in_output = seen
        self.process = None
        self.stderr = None
        self.stdout_path = Path(f"/dev/shm/iopipe-bench-{name.replace(' ', '-')}.out")

    def start(self, timeout_s=60):
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL if self.ready.startswith("stderr:") else subprocess.PIPE,
                                        stderr=self.stderr, text=True, start_new_session=True)
        stream_name, marker = self.ready.split(":", 1)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.output()[-600:]}")
            if stream_name == "stdout":
                line = self.process.stdout.readline()
                if marker in line:
                    # From now on its output is only kept (in RAM), to count what it saw.
                    with open(self.stdout_path, "w") as kept:
                        subprocess.Popen(["cat"], stdin=self.process.stdout, stdout=kept)
                    return
            elif marker in self.output():
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} did not attach within {timeout_s} s: {self.output()[-600:]}")

    def output(self):
        self.stderr.seek(0)
        return self.stderr.read()

    def cpu_seconds(self):
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def peak_rss_mib(self):
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def ios_seen(self):
        """I/Os the tracer reports having seen, from its own output."""
        text = self.stdout_path.read_text() if self.stdout_path.exists() else self.output()
        self.stdout_path.unlink(missing_ok=True)
        return self.seen_in_output(text)

    def stop(self):
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def fio_run(device, seconds):
    """IOPS and the number of I/Os completed."""
    out = subprocess.run(
        ["fio", "--name=bench", f"--filename={device}", "--direct=1", "--rw=randread", "--bs=4k",
         "--ioengine=io_uring", "--iodepth=32", "--time_based", f"--runtime={seconds}", "--output-format=json"],
        check=True, capture_output=True, text=True).stdout
    read = json.loads(out)["jobs"][0]["read"]
    return read["iops"], read["total_ios"]


def bpf_program_stats(names):
    """run_time_ns and run_cnt summed over the loaded programs with these names."""
    programs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True, check=True).stdout)
    run_time = sum(p.get("run_time_ns", 0) for p in programs if p.get("name") in names)
    runs = sum(p.get("run_cnt", 0) for p in programs if p.get("name") in names)
    return run_time, runs


def ensure_peers():
    missing = sorted({pkg for tool, pkg in PEER_PACKAGES.items() if not shutil.which(tool)})
    if missing:
        log(f"installing the peer tracers to compare with: {' '.join(missing)} (apt)")
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=False,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, stdout=subprocess.DEVNULL)


def ram_disk(size_mib):
    backing = Path("/dev/shm/iopipe-bench.img")
    with open(backing, "wb") as f:
        f.truncate(size_mib << 20)
    subprocess.run(["dd", "if=/dev/zero", f"of={backing}", "bs=1M", f"count={size_mib}", "conv=notrunc", "status=none"], check=True)
    device = subprocess.run(["losetup", "--find", "--show", str(backing)], check=True, capture_output=True, text=True).stdout.strip()
    return device, backing


def agent_ios(stderr):
    """ios_completed from the agent's exit summary."""
    found = re.search(r"ios_completed (\d+)", stderr)
    return int(found.group(1)) if found else 0


def histogram_ios(text):
    """The counts of a bpftrace or bcc log2 histogram: `[256, 512)   1234 |@@@@  |`."""
    return sum(int(m.group(1)) for m in re.finditer(r"^\s*\[[^\]\)]*[\)\]]\s+(\d+)\s+\|", text, re.M))


def line_ios(text):
    """One line per I/O after the header."""
    return max(0, len(text.splitlines()) - 1)


PEERS = Path(__file__).with_name("peers")


def tracers(agent):
    return [
        Tracer("iopipe-agent", [agent, "run", "--host", "bench"], "stderr:tracing block I/O", agent_ios),
        Tracer("bpftrace biolatency", ["bpftrace", str(PEERS / "biolatency.bt")], "stdout:Tracing block device I/O", histogram_ios),
        Tracer("bpftrace biosnoop", ["bpftrace", str(PEERS / "biosnoop.bt")], "stdout:TIME(ms)", line_ios),
        Tracer("bcc biolatency", ["biolatency-bpfcc"], "stdout:Tracing block device I/O", histogram_ios),
        Tracer("bcc biosnoop", ["biosnoop-bpfcc"], "stdout:TIME(s)", line_ios),
    ]


def agent_bpf_ns_per_io(args, device):
    """The kernel's accounting of the agent's programs, in a run of its own: statistics
    cost two clock reads per program run, which the IOPS runs must not pay."""
    agent = tracers(args.agent)[0]
    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=True)
    try:
        agent.start()
        names = {"btf_issue", "btf_complete", "raw_issue", "raw_complete"}
        before = bpf_program_stats(names)
        fio_run(device, args.seconds)
        after = bpf_program_stats(names)
        agent.stop()
    finally:
        subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=0"], check=False)
    # Two programs run per I/O: dispatch and completion.
    ns = 2 * (after[0] - before[0]) / max(1, after[1] - before[1])
    log(f"iopipe-agent BPF programs: {ns:.0f} ns per I/O")
    return ns


def untraced_run(device, seconds, round_number, baselines):
    iops, _ = fio_run(device, seconds)
    baselines.append(iops)
    log(f"round {round_number}: no tracer {iops:,.0f} IOPS")
    return iops


def measure(args):
    device, backing = ram_disk(args.size_mib)
    log(f"RAM-backed device {device} over {backing} ({args.size_mib} MiB), {args.rounds} rounds of {args.seconds} s per configuration")
    results = {t.name: {"loss": [], "iops": [], "cpu_per_100k": [], "rss": [], "bpf_ns": [], "seen": [], "error": None}
               for t in tracers(args.agent)}
    baselines = []
    try:
        fio_run(device, 2)  # warm the page cache of the backing file
        for round_number in range(1, args.rounds + 1):
            before = untraced_run(device, args.seconds, round_number, baselines)
            for tracer in tracers(args.agent):
                result = results[tracer.name]
                if result["error"]:
                    continue
                try:
                    tracer.start()
                except (RuntimeError, FileNotFoundError) as err:
                    result["error"] = str(err).strip().splitlines()[-1][:200]
                    log(f"round {round_number}: {tracer.name} cannot run here: {result['error']}")
                    continue
                cpu_before = tracer.cpu_seconds()
                iops, ios = fio_run(device, args.seconds)
                cpu = tracer.cpu_seconds() - cpu_before
                result["rss"].append(tracer.peak_rss_mib())
                tracer.stop()
                # Against the untraced runs on either side: this VM's rate drifts by
                # several percent from one run to the next.
                after = untraced_run(device, args.seconds, round_number, baselines)
                baseline, before = (before + after) / 2, after
                result["seen"].append(tracer.ios_seen() / ios)
                result["iops"].append(iops)
                result["loss"].append(100 * (1 - iops / baseline))
                result["cpu_per_100k"].append(100 * cpu / args.seconds / (iops / 100_000))
                log(f"round {round_number}: {tracer.name} {iops:,.0f} IOPS ({result['loss'][-1]:+.1f}% loss)")
        if not results["iopipe-agent"]["error"]:
            results["iopipe-agent"]["bpf_ns"].append(agent_bpf_ns_per_io(args, device))
    finally:
        subprocess.run(["losetup", "-d", device], check=False)
        backing.unlink(missing_ok=True)
    return baselines, results


def report(args, baselines, results):
    median = statistics.median
    lines = [
        "# Agent overhead: fio at maximum rate with and without tracing",
        "",
        f"Measured {datetime.date.today().isoformat()} by `make bench` on {os.cpu_count()} CPUs, Linux {platform.release()}, "
        f"{subprocess.run(['fio', '--version'], capture_output=True, text=True).stdout.strip()}: 4 KiB random reads, io_uring, "
        f"queue depth 32, on a loop device over a tmpfs file; {args.rounds} rounds of {args.seconds} s runs, each tracer's "
        "run between two untraced runs and compared with their mean. Medians over rounds.",
        "",
        f"Baseline (no tracer): {median(baselines):,.0f} IOPS (runs: {', '.join(f'{b:,.0f}' for b in baselines)}).",
        "",
        "| tracer | IOPS | IOPS loss vs baseline | I/Os it reported / fio's | tracer CPU, % of a core per 100k IOPS | peak RSS MiB | BPF ns per I/O |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        if not r["iops"]:
            lines.append(f"| {name} | not runnable here: {r['error']} | | | | | |")
            continue
        bpf = f"{median(r['bpf_ns']):.0f}" if r["bpf_ns"] else "n/a"
        rounds = ", ".join(f"{loss:.1f}" for loss in r["loss"])
        lines.append(f"| {name} | {median(r['iops']):,.0f} | {median(r['loss']):.1f}% (rounds: {rounds}) | {median(r['seen']):.3f} | {median(r['cpu_per_100k']):.2f} | "
                     f"{median(r['rss']):.1f} | {bpf} |")
    lines += [
        "",
        "What each tracer does per I/O: iopipe-agent keeps per disk and op three log2 histograms (device, queue, total), "
        "in-flight depth, errors and sampled events (outliers, 1/1000 uniform, flight recorder); biolatency keeps one "
        "histogram of all disks; biosnoop prints every I/O. The bpftrace peers are the tracepoint forms "
        "(block_io_start/block_io_done) of bpftrace's tools in agent/bench/peers/: the shipped 0.17 tools attach kprobes to "
        "blk_account_io_start/done, which this kernel inlines and has no kprobe_events for. \"I/Os it reported\" checks "
        "each tracer saw the load (the agent counts every disk, so a little over 1). BPF ns per I/O is the kernel's own "
        "accounting (kernel.bpf_stats_enabled, which itself adds a little) of the dispatch and completion programs together.",
        "",
        "Rerun: `sudo make bench` (or `python3 agent/bench/overhead.py --agent PATH --rounds N --seconds S`).",
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    log(f"wrote {args.out}")
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--out", default=str(Path(__file__).with_name("RESULTS.md")))
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("the benchmark needs root: it creates a loop device and loads BPF programs (sudo make bench)")
    if not Path(args.agent).exists():
        sys.exit(f"{args.agent} is missing: run `make agent` first")
    ensure_peers()
    baselines, results = measure(args)
    report(args, baselines, results)


if __name__ == "__main__":
    main()
