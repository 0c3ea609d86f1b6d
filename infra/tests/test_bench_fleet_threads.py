"""bench-fleet's reading of where the cores go: threads' CPU time from /proc, and the task it profiles."""
import os

from iopipe.bench import scale
from iopipe.bench.scale import bottleneck, parse_schedstat, parse_thread_stat, service


def stat(tid, name):
    return f"{tid} ({name}) R 1 1 1 0 -1 4194368 120 0 3 0 99 1 0 0 20 0 40 0 1000 0 0"


def test_a_threads_name_is_read_whatever_it_holds():
    assert parse_thread_stat(stat(77, "Source: agent t")) == (77, "Source: agent t")
    assert parse_thread_stat(stat(78, "C2 CompilerThre")) == (78, "C2 CompilerThre")
    assert parse_thread_stat(stat(79, "odd) (name")) == (79, "odd) (name")


def test_a_threads_times_on_a_cpu_and_waiting_for_one_are_its_schedstat():
    assert parse_schedstat("/proc/1/task/58/schedstat:330673942 1463677386 9476") == (58, (330673942, 1463677386))


def test_each_kind_of_thread_is_summed_over_its_threads_and_the_machines_cores_are_read(monkeypatch):
    reads = iter([{("C2 CompilerThre", 1): (0, 0), ("C1 CompilerThre", 2): (0, 0)},
                  {("C2 CompilerThre", 1): (4e8, 1e8), ("C1 CompilerThre", 2): (2e8, 0), ("C2 CompilerThre", 3): (1e8, 0)}])
    clock = iter([100.0, 100.5])  # the sample's start and end: 0.5 s apart, however loaded the machine
    ticks = iter([(1000, 0, 1000), (1000 + 40, 5, 1000 + 55)])  # busy, waiting on I/O, idle
    monkeypatch.setattr(scale, "thread_times", lambda container: next(reads))
    monkeypatch.setattr(scale, "machine_ticks", lambda: next(ticks))
    monkeypatch.setattr(scale.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(scale.time, "sleep", lambda seconds: None)
    threads, cores = scale.cpu_by_thread(["tm"], seconds=0.5)
    (kind, (on_cpu, waiting)), = threads
    assert kind == ("tm", "C# CompilerThre")
    assert (round(on_cpu, 9), round(waiting, 9)) == (1.4, 0.2), "0.7 s on a CPU and 0.1 s waiting, in 0.5 s"
    hz = os.sysconf("SC_CLK_TCK")
    assert [round(c, 9) for c in cores] == [round(n / hz / 0.5, 9) for n in (40, 5, 55)]
    assert scale.threads_listed(threads).startswith("tm C# CompilerThre ")


def test_the_task_profiled_is_the_busiest_not_mostly_back_pressured():
    busiest = [(63, 1, "windows"), (54, 44, "source"), (9, 0, "detectors")]
    assert bottleneck(busiest) == "windows"
    assert bottleneck([(59, 44, "source"), (40, 2, "windows")]) == "windows", "the source waits on the windows"
    assert bottleneck([(90, 80, "source")]) == "source", "none free of back-pressure: the busiest"


def test_a_container_is_named_by_its_service():
    assert service("iopipe-bench-fleet-ab12_kafka-2_1") == "kafka-2"
    assert service("flink-taskmanager-1") == "flink-taskmanager-1"


def test_a_jdk_method_on_top_is_named_with_the_caller_it_worked_for(monkeypatch):
    def frame(name, value, *children):
        return {"name": name, "value": value, "children": list(children)}
    tree = frame("root", 10, frame("org.apache.flink.runtime.taskmanager.Task.run:1", 10,
                                   frame("org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailboxImpl.put:3", 6,
                                         frame("java.util.concurrent.locks.ReentrantLock.signal:2", 6,
                                               frame("jdk.internal.misc.Unsafe.unpark:1", 6))),
                                   frame("io.iopipe.jobs.pipeline.DiskWindows.take:4", 4)))
    monkeypatch.setattr(scale, "http_json", lambda url: {"vertices": [{"id": "v", "name": "windows"}]}
                        if url.endswith("/jobs/job") else {"data": tree})

    class Ports:
        flink_url = "http://127.0.0.1:1"
    profile = scale.hot_frames(Ports(), "job", "windows", timeout_s=1)
    assert profile["self"] == [("jdk.internal.misc.Unsafe.unpark", 0.6), ("io.iopipe.jobs.pipeline.DiskWindows.take", 0.4)]
    assert profile["iopipe"] == [("io.iopipe.jobs.pipeline.DiskWindows.take", 0.4)]
    (row, _) = scale.profile_rows(dict(profile, task="windows"))
    assert "Unsafe.unpark 60% (from TaskMailboxImpl.put); DiskWindows.take 40% |" in row


def test_taskmanager_cpu_is_counted_per_disk_second_the_job_consumed_with_its_jit_and_gc_apart():
    tm, kafka = "iopipe-bench-fleet-ab12_flink-taskmanager-1_1", "iopipe-bench-fleet-ab12_kafka-1_1"
    run = {"consumed_rate": 2000.0, "per_disk_s": 2.0, "threads": [
        ((tm, "C# CompilerThre"), (0.02, 0.5)), ((tm, "GC Thread#"), (0.01, 0.1)), ((tm, "G# Conc#"), (0.005, 0.0)),
        ((tm, "diskstats delta"), (0.065, 0.4)), ((kafka, "data-plane-kafk"), (0.5, 0.5))]}
    us = scale.taskmanager_cpu_us(run)  # 1,000 disk-seconds a second; 0.1 of a core on the TaskManager
    assert {part: round(v, 6) for part, v in us.items()} == {"all": 100.0, "jit": 20.0, "gc": 15.0}
    assert scale.taskmanager_cpu_listed(run).startswith("100 µs, of which JIT compilers 20, garbage collection 15")
    assert scale.taskmanager_cpu_us({"consumed_rate": 0.0, "per_disk_s": 2.0, "threads": []}) is None
