"""Benchmarks that need the stack: each writes its RESULTS file beside the component it measures."""
import sys

from iopipe.paths import REPO
from iopipe.stack import JOB_JAR

JOBS = REPO / "stream-jobs"
BENCH_JAR = JOBS / "target" / "iopipe-stream-bench.jar"  # the benchmarks' classes, kept out of the job jar
OFFLINE_CLASSPATH = JOBS / "target" / "offline-classpath.txt"


def java_classpath():
    """What `java -cp` runs a benchmark class of stream-jobs/src/bench with: the job jar, the
    benchmarks' jar and their dependencies, all built by `make jobs`."""
    missing = [str(path) for path in (JOB_JAR, BENCH_JAR, OFFLINE_CLASSPATH) if not path.exists()]
    if missing:
        sys.exit(f"{', '.join(missing)} missing: run `make jobs` first")
    return f"{JOB_JAR}:{BENCH_JAR}:{OFFLINE_CLASSPATH.read_text().strip()}"
