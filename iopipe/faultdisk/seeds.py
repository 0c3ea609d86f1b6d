"""The seed scenarios on real block devices: a fault disk per scenario shaped as the seeds
describe it and driven by the seeds' workload; the end-to-end tests trace them with the real
agent into the running pipeline, and the demo plays S2's retries and S1's failure.

A scenario's disk starts healthy (or idle) and turns bad at a known moment: its profile
switches, or the workload's burst or depth begins. That moment is what time to detect
counts from.
"""
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from iopipe.faultdisk import FaultDisk, run_fio, total_ios, write_burst
from iopipe.synthetic.scenarios import REVOLUTION_7200_MS

FAULT = "fault"
DISK_MIB = 256
REVOLUTION_7200_RPM_US = round(REVOLUTION_7200_MS * 1000)  # a missed sector waits a whole turn of the platter
DD_BLOCK = 128 * 1024


def dd_sequential_reads(device, seconds, marks):
    """S1's workload: dd reading 128 KiB blocks in order with O_DIRECT, one stream, in
    runs of 8 blocks so the count read is exact when time is up."""
    deadline, issued, skip = time.monotonic() + seconds, 0, 0
    while time.monotonic() < deadline:
        run = subprocess.run(["dd", f"if={device}", "of=/dev/null", f"bs={DD_BLOCK}", "count=8", f"skip={skip}",
                              "iflag=direct"], capture_output=True, text=True, check=True)
        read = int(run.stderr.split("+")[0])  # "8+0 records in"
        issued += read
        skip = (skip + read) % (DISK_MIB * 1024 * 1024 // DD_BLOCK - 8)
    return issued


def fio(device, seconds, rw="randread", iodepth=1, block="16k", extra=()):
    """fio for `seconds`; the I/Os it completed."""
    engine = "psync" if iodepth == 1 else "libaio"
    return total_ios(run_fio(device, f"--rw={rw}", f"--bs={block}", f"--ioengine={engine}", f"--iodepth={iodepth}",
                             "--time_based", f"--runtime={seconds}", "--norandommap", *extra))


def random_reads_qd1(device, seconds, marks):
    """S2's and S4's workload: 16 KiB random reads, one at a time."""
    return fio(device, seconds)


def mixed_random_qd1(device, seconds, marks):
    """S5's workload: 16 KiB random reads and writes, 45% reads, one at a time."""
    return fio(device, seconds, rw="randrw", extra=("--rwmixread=45",))


def write_bursts(device, seconds, marks, every_s=3.0, size=11):
    """S3's workload: an idle disk but for a burst of 11 8 KiB random writes every few
    seconds, as fsflush writes back. The first burst is when the 'fault' begins."""
    deadline, issued, burst = time.monotonic() + seconds, 0, 0
    marks[FAULT] = time.time()
    while time.monotonic() < deadline:
        issued += write_burst(device, size, seed=burst)
        burst += 1
        time.sleep(max(0.0, every_s - 0.25))
    return issued


SWEEP = ((1, 25), (4, 10), (16, 10), (64, 12), (256, 12))  # (threads in flight, seconds)


def depth_sweep(device, seconds, marks):
    """S6's workload: 16 KiB random reads at depth 1, 4, 16, 64 and 256, as Zaitsev's
    sysbench threads; the depth of 64 is where onset is due, 256 where saturation is."""
    issued = 0
    for depth, phase_s in SWEEP:
        marks[f"qd{depth}"] = time.time()
        issued += fio(device, phase_s, iodepth=depth)
    return issued


@dataclass
class Scenario:
    name: str
    story: str
    rotational: bool
    profile: str
    workload: Callable
    seconds: float
    fault: tuple = None  # (seconds in, profile): when and how the disk turns bad
    # (kind, severity) -> the mark its time to detect counts from
    expect: dict = field(default_factory=dict)
    health: tuple = ()  # the states the disk's health must pass through

    @property
    def fault_profile(self):
        return self.fault[1]


SCENARIOS = {
    "S1": Scenario("S1", "dusty disk: 7200 rpm, dd 128 KiB reads turn 60-560 ms each", True,
                   "units=1 read_us=4000", dd_sequential_reads, 50,
                   fault=(15, "units=1 read_us=60000 tail_prob=0.9 tail_min_us=20000 tail_max_us=500000 seed=1"),
                   expect={("failing_disk", "critical"): FAULT}, health=("failing",)),
    "S2": Scenario("S2", "lid pressed: 2 ms reads, 15% retried one or more 8.33 ms revolutions", True,
                   "units=1 read_us=2000", random_reads_qd1, 50,
                   fault=(15, f"units=1 read_us=2000 retry_prob=0.15 revolution_us={REVOLUTION_7200_RPM_US} max_retries=3 seed=2"),
                   expect={("bimodal_retries", "warning"): FAULT}, health=("suspect",)),
    "S3": Scenario("S3", "near-idle disk: 11 writes at once every 3 s, served one by one in 19 ms", True,
                   "units=1 write_us=19000 read_us=8000", write_bursts, 40,
                   expect={("queue_ramp", "info"): FAULT}),
    "S4": Scenario("S4", "healthy 7200 rpm disk at QD1: 8 ms random reads, a rare 20-160 ms one", True,
                   "units=1 read_us=8000 tail_prob=0.002 tail_min_us=20000 tail_max_us=160000 seed=4",
                   random_reads_qd1, 50),
    "S5": Scenario("S5", "fail-slow: 8 ms reads and writes, 0.6% take 0.9-1.2 s", True,
                   "units=1 read_us=8000 write_us=8000", mixed_random_qd1, 50,
                   fault=(15, "units=1 read_us=8000 write_us=8000 tail_prob=0.006 tail_min_us=900000 "
                              "tail_max_us=1200000 seed=5"),
                   expect={("failing_disk", "warning"): FAULT}, health=("suspect",)),
    "S6": Scenario("S6", "flash with 10 units of 8 ms: depth 1, 4, 16, 64, 256", False,
                   "units=10 read_us=8000", depth_sweep, sum(s for _, s in SWEEP),
                   expect={("saturation", "info"): "qd64", ("saturation", "warning"): "qd256"}),
}


@dataclass
class Run:
    """One scenario's disk and workload, as it happened."""
    scenario: Scenario
    disk: FaultDisk
    marks: dict = field(default_factory=dict)
    issued: int = 0
    completed: int = 0  # reads and writes the kernel's diskstats counted meanwhile
    error: BaseException = None

    def play(self):
        try:
            before = self.disk.diskstats()
            worker = threading.Thread(target=self._work)
            worker.start()
            if self.scenario.fault:
                at_s, profile = self.scenario.fault
                time.sleep(at_s)
                self.disk.set_profile(profile)
                self.marks[FAULT] = time.time()
            worker.join()
            after = self.disk.diskstats()
            self.completed = sum(after[k] - before[k] for k in ("reads_completed", "writes_completed"))
        except BaseException as error:  # reported by the caller, with the scenario's name
            self.error = error

    def _work(self):
        try:
            self.issued = self.scenario.workload(self.disk.device, self.scenario.seconds, self.marks)
        except BaseException as error:
            self.error = error


def scenario_disk(scenario):
    """The scenario's fault disk, rotational as its seed's disk (set before any agent reads it)."""
    return FaultDisk(scenario.profile, size_mib=DISK_MIB, rotational=scenario.rotational)


def play_together(runs):
    """Plays the runs at once, each on its own disk; raises the first one's failure."""
    threads = [threading.Thread(target=run.play, name=run.scenario.name) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for run in runs:
        if run.error:
            raise RuntimeError(f"{run.scenario.name}'s workload failed: {run.error}") from run.error
