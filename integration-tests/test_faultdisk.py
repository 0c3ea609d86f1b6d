"""The fault-injection disk is a real block device with the latency shape it is told to
have: the kernel's own counters and per-I/O timings of direct reads agree with the
profile, errors reach the application, and parallel capacity shows as a queue knee."""
import errno
import mmap
import os
import statistics

import pytest

from iopipe.faultdisk import BLOCK, FaultDisk, run_fio, timed_direct_reads
from iopipe.faultdisk.seeds import REVOLUTION_7200_RPM_US

pytestmark = pytest.mark.disks


def fio_median_latency_ms(device, iodepth):
    """The median, not the mean: a loaded machine's scheduling delays lengthen a few I/Os a
    lot, and these move the mean but not the median."""
    report = run_fio(device, "--rw=randread", "--bs=16k", f"--iodepth={iodepth}", "--ioengine=libaio",
                     "--runtime=2", "--time_based")
    return report["jobs"][0]["read"]["clat_ns"]["percentile"]["50.000000"] / 1e6


def test_fixed_latency_is_what_the_kernel_counts():
    with FaultDisk("units=1 read_us=2000") as disk:
        before = disk.diskstats()
        latencies = timed_direct_reads(disk.device, 200)
        after = disk.diskstats()
    assert after["reads_completed"] - before["reads_completed"] == 200
    assert 2.0 <= statistics.median(latencies) < 2.6
    assert min(latencies) >= 2.0, "no read is faster than the service time"
    # The kernel times a part of what the workload's clock times (not the test's own
    # wake-ups), so its mean lies between the service time and the workload's mean,
    # however loaded the machine. (read_time_ms sums nanoseconds; 1 ms of rounding.)
    await_ms = (after["read_time_ms"] - before["read_time_ms"]) / 200
    assert 2.0 <= await_ms <= statistics.fmean(latencies) + 1 / 200, (await_ms, statistics.fmean(latencies))


def test_retries_add_whole_revolutions():
    """Each read takes 2 ms plus a whole number of revolutions. The workload's clock adds
    this machine's scheduling delays (the FUSE server, the loop worker and the test each
    wake once per read), never subtracts: so a read belongs to the highest mode it
    reached, and its excess over that mode is scheduling noise. Whole revolutions leave
    most retried reads' excess far below a revolution; retries of any spread-out length
    would put half of them above 4 ms."""
    profile = f"units=1 read_us=2000 retry_prob=0.3 revolution_us={REVOLUTION_7200_RPM_US} max_retries=3 seed=7"
    with FaultDisk(profile) as disk:
        latencies = timed_direct_reads(disk.device, 300)
    revolution_ms = REVOLUTION_7200_RPM_US / 1000
    assert min(latencies) >= 2.0, "no read is faster than the service time"
    retries = [min(3, int((ms - 2.0) // revolution_ms)) for ms in latencies]
    retried_excess = [ms - (2.0 + k * revolution_ms) for ms, k in zip(latencies, retries) if k > 0]
    assert statistics.median(retried_excess) < 0.8, f"retried reads sit at 2 ms + k revolutions: {sorted(retried_excess)}"
    share_retried = sum(k > 0 for k in retries) / len(retries)
    assert 0.2 < share_retried < 0.4, share_retried


def test_error_sectors_fail_with_eio_and_their_neighbours_do_not():
    with FaultDisk("units=1 read_us=500 error_sectors=2048-2055") as disk:
        buffer = mmap.mmap(-1, BLOCK)
        fd = os.open(disk.device, os.O_RDONLY | os.O_DIRECT)
        try:
            with pytest.raises(OSError) as failure:
                os.preadv(fd, [buffer], 2048 * 512)
            assert failure.value.errno == errno.EIO
            assert os.preadv(fd, [buffer], 2056 * 512) == BLOCK
        finally:
            os.close(fd)
        assert disk.served()[1] >= 1


def test_parallel_units_keep_latency_flat_until_the_queue_forms():
    """Four units of 2 ms: four I/Os at once take one service time, eight take two. An
    I/O alone also carries the path's own overhead (fio, the kernel, FUSE), which queued
    I/Os overlap with service, so eight are bounded below by two service times, not by
    twice the time of one alone (a fresh machine measured 2.41 ms alone, 4.01 ms for eight)."""
    read_ms = 2.0
    with FaultDisk(f"units=4 read_us={read_ms * 1000:.0f}") as disk:
        qd1, qd4, qd8 = (fio_median_latency_ms(disk.device, qd) for qd in (1, 4, 8))
    assert qd4 < qd1 * 1.2, (qd1, qd4)
    assert 1.7 * read_ms < qd8 < 2.3 * qd1, (qd1, qd8)


def test_profile_switches_at_runtime_and_bad_profiles_are_refused():
    # The fastest of 20 reads: scheduling delays only add, and rarely to all of them.
    with FaultDisk("units=1 read_us=500") as disk:
        fast = min(timed_direct_reads(disk.device, 20))
        disk.set_profile("units=1 read_us=5000")
        slow = min(timed_direct_reads(disk.device, 20))
        with pytest.raises(OSError) as refused:
            disk.set_profile("units=1 read_us=100 colour=blue")
        assert refused.value.errno == errno.EINVAL
    assert 0.5 <= fast < 1.2 and 5.0 <= slow < 5.8, (fast, slow)
