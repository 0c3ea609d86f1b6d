"""The fault-injection disk is a real block device with the latency shape it is told to
have: the kernel's own counters and per-I/O timings of direct reads agree with the
profile, errors reach the application, and parallel capacity shows as a queue knee."""
import errno
import mmap
import os
import statistics

import pytest

from faultdisk import BLOCK, FaultDisk, run_fio, timed_direct_reads

REVOLUTION_7200_RPM_US = 8333



def fio_mean_latency_ms(device, iodepth):
    report = run_fio(device, "--rw=randread", "--bs=16k", f"--iodepth={iodepth}", "--ioengine=libaio",
                     "--runtime=2", "--time_based")
    return report["jobs"][0]["read"]["clat_ns"]["mean"] / 1e6


def test_fixed_latency_is_what_the_kernel_counts():
    with FaultDisk("units=1 read_us=2000") as disk:
        before = disk.diskstats()
        latencies = timed_direct_reads(disk.device, 200)
        after = disk.diskstats()
    assert after["reads_completed"] - before["reads_completed"] == 200
    assert 2.0 <= statistics.median(latencies) < 2.6
    assert min(latencies) >= 2.0, "no read is faster than the service time"
    await_ms = (after["read_time_ms"] - before["read_time_ms"]) / 200
    assert 2.0 <= await_ms < 2.6


def test_retries_add_whole_revolutions():
    profile = f"units=1 read_us=2000 retry_prob=0.3 revolution_us={REVOLUTION_7200_RPM_US} max_retries=3 seed=7"
    with FaultDisk(profile) as disk:
        latencies = timed_direct_reads(disk.device, 300)
    modes = [2.0 + k * REVOLUTION_7200_RPM_US / 1000 for k in range(4)]
    nearest = [min(range(4), key=lambda k: abs(ms - modes[k])) for ms in latencies]
    close = [abs(ms - modes[k]) < 0.8 for ms, k in zip(latencies, nearest)]
    assert sum(close) >= 0.97 * len(latencies), "latencies sit at 2 ms + k revolutions"
    share_retried = sum(k > 0 for k in nearest) / len(nearest)
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
    with FaultDisk("units=4 read_us=2000") as disk:
        qd1, qd4, qd8 = (fio_mean_latency_ms(disk.device, qd) for qd in (1, 4, 8))
    assert qd4 < qd1 * 1.2, (qd1, qd4)
    assert 1.7 * qd1 < qd8 < 2.3 * qd1, (qd1, qd8)


def test_profile_switches_at_runtime_and_bad_profiles_are_refused():
    with FaultDisk("units=1 read_us=500") as disk:
        fast = statistics.median(timed_direct_reads(disk.device, 20))
        disk.set_profile("units=1 read_us=5000")
        slow = statistics.median(timed_direct_reads(disk.device, 20))
        with pytest.raises(OSError) as refused:
            disk.set_profile("units=1 read_us=100 colour=blue")
        assert refused.value.errno == errno.EINVAL
    assert fast < 1.2 and 5.0 <= slow < 5.8, (fast, slow)
