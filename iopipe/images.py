"""The stack's images, iopipe/kafka, iopipe/flink, iopipe/clickhouse and iopipe/zookeeper:
each built from a context made under the cache from its folder of infra/ (with the jars,
classes and Flink distribution it needs)."""
import hashlib
import shutil
import subprocess
import sys
import zipfile

from iopipe.contract import RECORD_TOPICS, TOPICS, TOPICS_JSON
from iopipe.kafka_access import acl_lines, super_users
from iopipe.paths import CACHE, INFRA
from iopipe.readiness import run, say

FLINK_VERSION = "2.3.0"
FLINK_WHEELS = {  # pip requirement -> what it brings
    f"apache-flink-libraries=={FLINK_VERSION}": "lib/ (flink-dist and friends)",
    f"apache-flink=={FLINK_VERSION}": "bin/ and conf/",
}


def build_images():
    """Builds every image; Docker's layer cache makes an unchanged rebuild take seconds."""
    run(["bash", str(INFRA / "bootstrap.sh")])
    for name in IMAGE_CONTEXTS:
        context = IMAGE_CONTEXTS[name]()
        say(f"building image iopipe/{name} (the first build installs packages into it)")
        _docker_build(f"iopipe/{name}:dev", context)


def _docker_build(tag, context):
    """docker build, echoing its step lines so a person sees it advance."""
    process = subprocess.Popen(["docker", "build", "-t", tag, str(context)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail = []
    for line in process.stdout:
        tail = (tail + [line.rstrip()])[-30:]
        if line.startswith("Step "):
            print(f"    {tag}: {line.strip()}", flush=True)
    if process.wait() != 0:
        sys.exit(f"docker build of {tag} failed:\n" + "\n".join(tail))


def _fresh_context(name):
    context = CACHE / "contexts" / name
    context.mkdir(parents=True, exist_ok=True)
    return context


def _copy(sources, context):
    for source in sources:
        shutil.copy2(source, context / source.name)


def _maven_libs(name, context):
    """The jars infra/NAME/pom.xml lists, into the context's libs/."""
    libs = context / "libs"
    say(f"fetching {name} jars from Maven Central (cached in ~/.m2)")
    shutil.rmtree(libs, ignore_errors=True)
    fetched = subprocess.run(["mvn", "-q", "-B", "-f", str(INFRA / name / "pom.xml"), "dependency:copy-dependencies",
                              f"-DoutputDirectory={libs}", "-DincludeScope=runtime"], capture_output=True, text=True)
    if fetched.returncode != 0:
        sys.exit(f"fetching the {name} jars failed (is Maven Central reachable?):\n{fetched.stdout}{fetched.stderr}")


def _kafka_context():
    context = _fresh_context("kafka")
    _maven_libs("kafka", context)
    _copy([INFRA / "kafka" / f for f in ("Dockerfile", "start-kafka.sh", "log4j2.properties")], context)
    _compile_java(INFRA / "kafka" / "ToolBatch.java", classpath=context / "libs" / "*", into=context / "tools")
    (context / "topics.txt").write_text("".join(f"{t['name']} {t['partitions']}\n" for t in TOPICS))
    (context / "acls.txt").write_text("".join(f"{line}\n" for line in acl_lines(RECORD_TOPICS, TOPICS_JSON["accepted"])))
    (context / "super-users.txt").write_text(super_users() + "\n")
    return context


def _compile_java(source, classpath, into):
    """A class the image runs with its own Java 17, compiled by the host's JDK (Maven's)."""
    shutil.rmtree(into, ignore_errors=True)
    compiled = subprocess.run(["javac", "--release", "17", "-cp", str(classpath), "-d", str(into), str(source)],
                              capture_output=True, text=True)
    if compiled.returncode != 0:
        sys.exit(f"compiling {source.name} failed (javac is the JDK's, as Maven needs):\n{compiled.stderr}")


def _flink_context():
    context = _fresh_context("flink")
    wheels = _flink_wheels()
    stamp = hashlib.sha256("".join(sorted(w.name for w in wheels)).encode()).hexdigest()
    home = context / "flink"
    marker = home / ".iopipe-wheels"
    if not marker.exists() or marker.read_text() != stamp:
        say("unpacking the Flink distribution from its wheels")
        shutil.rmtree(home, ignore_errors=True)
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as z:
                for member in z.namelist():
                    top = member.split("/")[1] if member.startswith("pyflink/") and member.count("/") else ""
                    if top in ("bin", "conf", "lib") and not member.endswith("/"):
                        target = home / member[len("pyflink/"):]
                        target.parent.mkdir(parents=True, exist_ok=True)
                        with z.open(member) as src, open(target, "wb") as dst:
                            shutil.copyfileobj(src, dst)
        for script in (home / "bin").iterdir():
            script.chmod(0o755)
        (home / "log").mkdir(exist_ok=True)
        marker.write_text(stamp)
    _copy([INFRA / "flink" / f for f in ("Dockerfile", "start-flink.sh")], context)
    return context


def _flink_wheels():
    """The Flink distribution ships on PyPI as two wheels; cached outside the repo."""
    directory = CACHE / "flink"
    directory.mkdir(parents=True, exist_ok=True)
    wheels = []
    for requirement, brings in FLINK_WHEELS.items():
        name = requirement.split("==")[0].replace("-", "_")
        found = sorted(directory.glob(f"{name}-{FLINK_VERSION}-*.whl"))
        if not found:
            say(f"downloading {requirement} from PyPI ({brings}; the first time only)")
            run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                 "--python-version", "3.11", "--platform", "manylinux2014_x86_64",
                 "-d", str(directory), requirement])
            found = sorted(directory.glob(f"{name}-{FLINK_VERSION}-*.whl"))
        wheels.append(found[0])
    return wheels


def _clickhouse_context():
    context = _fresh_context("clickhouse")
    _copy([INFRA / "clickhouse" / f for f in ("Dockerfile", "start-clickhouse.sh", "users.xml")], context)
    return context


def _zookeeper_context():
    context = _fresh_context("zookeeper")
    _maven_libs("zookeeper", context)
    _copy([INFRA / "zookeeper" / f for f in ("Dockerfile", "start-zookeeper.sh", "logback.xml")], context)
    return context


IMAGE_CONTEXTS = {"kafka": _kafka_context, "flink": _flink_context, "clickhouse": _clickhouse_context,
                  "zookeeper": _zookeeper_context}
