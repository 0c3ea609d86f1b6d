"""bench-fleet's reading of where the cores go: threads' CPU time from /proc, and the task it profiles."""
from iopipe.bench.scale import bottleneck, parse_thread_stat, service


def stat(tid, name, utime, stime):
    return f"{tid} ({name}) R 1 1 1 0 -1 4194368 120 0 3 0 {utime} {stime} 0 0 20 0 40 0 1000 0 0"


def test_a_threads_cpu_time_is_its_user_and_system_ticks_whatever_its_name_holds():
    assert parse_thread_stat(stat(77, "Source: agent t", 99, 1)) == (("Source: agent t", 77), 100)
    assert parse_thread_stat(stat(78, "C2 CompilerThre", 1500, 230)) == (("C2 CompilerThre", 78), 1730)
    assert parse_thread_stat(stat(79, "odd) (name", 5, 6)) == (("odd) (name", 79), 11)


def test_the_task_profiled_is_the_busiest_not_mostly_back_pressured():
    busiest = [(63, 1, "windows"), (54, 44, "source"), (9, 0, "detectors")]
    assert bottleneck(busiest) == "windows"
    assert bottleneck([(59, 44, "source"), (40, 2, "windows")]) == "windows", "the source waits on the windows"
    assert bottleneck([(90, 80, "source")]) == "source", "none free of back-pressure: the busiest"


def test_a_container_is_named_by_its_service():
    assert service("iopipe-bench-fleet-ab12_kafka-2_1") == "kafka-2"
    assert service("flink-taskmanager-1") == "flink-taskmanager-1"
