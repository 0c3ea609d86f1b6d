"""A real block device with a known latency shape, for tests: the faultdisk FUSE server
(faultdisk.c) serving one file, attached as a loop device with direct I/O.

    with FaultDisk("units=1 read_us=2000") as disk:
        disk.device            # /dev/loopN, real block I/O through the kernel
        disk.set_profile("units=1 read_us=2000 retry_prob=0.3 revolution_us=8333 max_retries=3")
        disk.diskstats()       # the kernel's counters of that device

Needs root, /dev/fuse and libfuse3 (infra/bootstrap.sh installs it). The server binary is
built once per source version and cached under $IOPIPE_CACHE.
"""
import hashlib
import json
import mmap
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from iopipe.diskstats_fields import COUNTERS
from iopipe.paths import CACHE

SOURCE = Path(__file__).resolve().parent / "faultdisk.c"
# Disks that threads of one process set up at once take turns: two builds of the server
# would write one binary together, and two free loop devices looked for at once may be one.
_SETTING_UP = threading.Lock()


def build():
    """Compiles faultdisk.c (warnings are errors) unless this exact source is built already."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    binary = CACHE / "faultdisk" / digest / "faultdisk"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True, text=True)
        if flags.returncode != 0:
            raise RuntimeError("libfuse3 is missing: run `bash infra/bootstrap.sh` (installs libfuse3-dev)")
        subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11", str(SOURCE),
                        *flags.stdout.split(), "-lm", "-o", str(binary)], check=True)
    return binary


def settle_udev():
    """Waits for udev (where it runs) to finish probing a new device: its blkid reads
    would otherwise land among a test's own I/Os, seconds later on a busy machine."""
    if shutil.which("udevadm"):
        subprocess.run(["udevadm", "settle", "--timeout=30"], check=False, capture_output=True)


class FaultDisk:
    def __init__(self, profile, size_mib=256, rotational=None):
        """`rotational`: what the disk tells the kernel it is (sysfs), if not the loop default."""
        self.profile = profile
        self.size_mib = size_mib
        self.rotational = rotational
        self.device = None
        self._server = None
        self._mountpoint = None

    @property
    def name(self):
        return Path(self.device).name

    def __enter__(self):
        with _SETTING_UP:
            return self._set_up()

    def _set_up(self):
        self._mountpoint = Path(tempfile.mkdtemp(prefix="iopipe-faultdisk-"))
        self._server = subprocess.Popen([str(build()), str(self._mountpoint), str(self.size_mib), self.profile],
                                        stderr=subprocess.PIPE, text=True)
        try:
            self._wait_for_mount()
            self.device = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", str(self._mountpoint / "disk.img")],
                                         capture_output=True, text=True, check=True).stdout.strip()
            settle_udev()
            dio = Path(f"/sys/block/{self.name}/loop/dio").read_text().strip()
            if dio != "1":
                raise RuntimeError(f"{self.device} did not take direct I/O: the page cache would fake the latency shape")
            if self.rotational is not None:
                Path(f"/sys/block/{self.name}/queue/rotational").write_text("1" if self.rotational else "0")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_for_mount(self, timeout_s=10):
        deadline = time.monotonic() + timeout_s
        while not (self._mountpoint / "disk.img").exists():
            if self._server.poll() is not None:
                raise RuntimeError(f"faultdisk exited: {self._server.stderr.read()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"faultdisk did not mount {self._mountpoint} within {timeout_s} s")
            time.sleep(0.05)

    def set_profile(self, profile):
        """Switches the latency profile at once (an invalid one raises OSError EINVAL)."""
        with open(self._mountpoint / "control", "w") as control:
            control.write(profile)
        self.profile = profile

    def served(self):
        """(requests served, requests failed) as the server counted them."""
        counts = (self._mountpoint / "control").read_text().splitlines()[-1]
        values = dict(pair.split("=") for pair in counts.split())
        return int(values["served"]), int(values["failed"])

    def diskstats(self):
        values = Path(f"/sys/block/{self.name}/stat").read_text().split()
        return dict(zip(COUNTERS, map(int, values)))

    def __exit__(self, *exc):
        if self.device:
            subprocess.run(["losetup", "-d", self.device], check=False)
        if self._mountpoint:
            subprocess.run(["fusermount3", "-u", str(self._mountpoint)], check=False, capture_output=True)
        if self._server:
            try:
                self._server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait()
        if self._mountpoint:
            shutil.rmtree(self._mountpoint, ignore_errors=True)
        return False


BLOCK = 4096


def read_sectors(count, first_block=0, stride=7):
    """The 512-byte sectors timed_direct_reads(count, first_block, stride) reads, in order."""
    return [(first_block + i * stride) % 4096 * (BLOCK // 512) for i in range(count)]


def timed_direct_reads(device, count, first_block=0, stride=7):
    """Reads `count` 4 KiB blocks with O_DIRECT, one at a time; returns each read's ms."""
    return [(returned - started) / 1e6 for started, returned in direct_read_spans(device, count, first_block, stride)]


def direct_read_spans(device, count, first_block=0, stride=7):
    """Reads `count` 4 KiB blocks with O_DIRECT, one at a time; returns each read's
    (submitted, returned) on CLOCK_MONOTONIC, the clock the kernel's tracepoints read:
    the kernel completed each read somewhere within its span."""
    buffer = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT wants
    fd = os.open(device, os.O_RDONLY | os.O_DIRECT)
    try:
        spans = []
        for i in range(count):
            started = time.monotonic_ns()
            os.preadv(fd, [buffer], (first_block + i * stride) % 4096 * BLOCK)
            spans.append((started, time.monotonic_ns()))
        return spans
    finally:
        os.close(fd)


def direct_writes(device, count, first_block=8192, flags=0, fsync=False):
    """Writes `count` 4 KiB blocks with O_DIRECT, one at a time, each with the pwritev2
    `flags` (os.RWF_DSYNC: durable as written) and, with `fsync`, each followed by one."""
    buffer = mmap.mmap(-1, BLOCK)
    fd = os.open(device, os.O_WRONLY | os.O_DIRECT)
    try:
        for i in range(count):
            os.pwritev(fd, [buffer], (first_block + i) * BLOCK, flags)
            if fsync:
                os.fsync(fd)
    finally:
        os.close(fd)


def run_fio(device, *options):
    """fio on `device` with O_DIRECT and `options`; its JSON report."""
    out = subprocess.run(["fio", "--name=faultdisk", f"--filename={device}", "--direct=1", *options,
                          "--output-format=json"], capture_output=True, text=True, check=True).stdout
    return json.loads(out[out.index("{"):])


def total_ios(report):
    """I/Os fio completed, every job and direction together."""
    return sum(job[direction]["total_ios"] for job in report["jobs"] for direction in ("read", "write", "trim"))


def write_burst(device, count, block_bytes=8192, seed=0):
    """`count` random writes submitted together in one io_submit (libaio), as a flush
    daemon writes back dirty buffers; returns the number fio completed."""
    return total_ios(run_fio(device, "--rw=randwrite", f"--bs={block_bytes}", "--ioengine=libaio",
                             f"--iodepth={count}", f"--iodepth_batch_submit={count}", f"--number_ios={count}",
                             f"--randseed={seed}"))
