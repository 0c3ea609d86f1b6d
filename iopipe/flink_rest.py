"""The live job on the stack's Flink: submitted through Flink's CLI (the REST API takes no
jars), then watched, checkpointed, cancelled, stopped with a savepoint and upgraded through
its REST API."""
import re
import subprocess
import sys

from iopipe.kafka_access import MOUNT as KAFKA_MOUNT, SIGNING_SECRET
from iopipe.paths import REPO
from iopipe.ports import Ports
from iopipe.readiness import http_json, say, wait_for
from iopipe.stack_kafka import create_missing_topics, kafka_access

JOB_JAR = REPO / "stream-jobs" / "target" / "iopipe-stream-jobs.jar"
LIVE_JOB_CLASS = "io.iopipe.jobs.LiveJob"
FLINK_IMAGE = "iopipe/flink:dev"
JOB_LEVEL_SETTINGS = ("state.", "execution.checkpointing.", "restart-strategy.", "parallelism.")


def flink_has_slots(ports, taskmanagers=1):
    overview = http_json(f"{ports.flink_url}/overview")
    return overview["taskmanagers"] >= taskmanagers and overview["slots-available"] >= 2


def submit_live_job(ports, jar=JOB_JAR, restore_from=None, group_id=None, job_args=()):
    """Runs the live job through Flink's CLI, from the checkpoint or savepoint at
    `restore_from` if given, reading as consumer group `group_id` if given (else the job's
    own), with the further options `job_args` (LiveJob.java); returns its id. The CLI runs
    in a throwaway container of the Flink image: the cluster's REST API takes no jar
    uploads (web.submit.enable is off), only the job graph the CLI builds."""
    if not jar.exists():
        sys.exit(f"{jar} is missing: run `make jobs` first")
    # Every operator's state must find its operator again: the CLI leaves none unclaimed
    # unless told (--allowNonRestoredState).
    restore = ["--fromSavepoint", restore_from] if restore_from else []
    # The job's Kafka settings are read where it is built, by the CLI, and travel with it.
    program_args = ["--brokers", ports.brokers, "--kafka-config", f"{KAFKA_MOUNT}/client.properties",
                    "--signing-secret", f"{KAFKA_MOUNT}/{SIGNING_SECRET}",
                    *(["--group-id", group_id] if group_id else []), *job_args]
    job_kafka_dir = kafka_access(ports.brokers).mounts()["flink"]
    # The CLI builds the job graph with its own configuration, and the job-level settings
    # (state backend, checkpointing and its retention, restarts, parallelism) travel in
    # it: give it the cluster's, or the job runs on the distribution's defaults.
    job_settings = [f"-D{key}={value}" for key, value in flink_config(ports).items() if key.startswith(JOB_LEVEL_SETTINGS)]
    submitted = subprocess.run(
        ["docker", "run", "--rm", "--network", "host", "-v", f"{jar.resolve()}:/tmp/job.jar:ro",
         "-v", f"{job_kafka_dir}:{KAFKA_MOUNT}:ro",
         "--entrypoint", "/opt/flink/bin/flink", FLINK_IMAGE,
         "run", "--detached", "--target", "remote", "-Drest.address=127.0.0.1", f"-Drest.port={ports.flink_rest}",
         *job_settings, "--class", LIVE_JOB_CLASS, *restore,
         "/tmp/job.jar", *program_args], capture_output=True, text=True, timeout=300)
    found = re.search(r"submitted with JobID ([0-9a-f]{32})", submitted.stdout)
    if submitted.returncode != 0 or not found:
        sys.exit(f"submitting the live job failed:\n{submitted.stdout[-3000:]}{submitted.stderr[-3000:]}")
    job_id = found.group(1)
    wait_for("live job running", lambda: _job_running(ports, job_id))
    return job_id


def flink_config(ports):
    """The JobManager's configuration, key -> value."""
    return {kv["key"]: kv["value"] for kv in http_json(f"{ports.flink_url}/jobmanager/config")}


def _job_running(ports, job_id):
    job = http_json(f"{ports.flink_url}/jobs/{job_id}")
    if job["state"] in ("FAILED", "CANCELED", "FINISHED"):
        raise SystemExit(f"live job ended as {job['state']}: see {ports.flink_url}/#/job/{job_id}")
    return job["state"] == "RUNNING" and all(v["status"] == "RUNNING" for v in job["vertices"])


def running_job(ports):
    """The id of the one running job, or None."""
    jobs = http_json(f"{ports.flink_url}/jobs")["jobs"]
    running = [j["id"] for j in jobs if j["status"] == "RUNNING"]
    return running[0] if running else None


def completed_checkpoints(ports, job_id):
    """How many checkpoints of the job have completed, and the path of the newest one."""
    counts = http_json(f"{ports.flink_url}/jobs/{job_id}/checkpoints")
    latest = (counts.get("latest") or {}).get("completed") or {}
    return counts["counts"]["completed"], latest.get("external_path")


def checkpoint_after(ports, job_id, timeout_s=120):
    """Waits for a checkpoint that starts after this call, so it holds everything the job
    had read by then; returns its path."""
    before, _ = completed_checkpoints(ports, job_id)
    # The checkpoint under way now may have begun before the call: wait for the one after it.
    return wait_for("a checkpoint of the live job", timeout_s=timeout_s, check=lambda: (
        lambda done, path: path if done >= before + 2 else None)(*completed_checkpoints(ports, job_id)))


def cancel_job(ports, job_id):
    """Cancels the job; its retained checkpoints stay where they are."""
    http_json(f"{ports.flink_url}/jobs/{job_id}?mode=cancel", method="PATCH")
    wait_for("live job cancelled", lambda: http_json(f"{ports.flink_url}/jobs/{job_id}")["state"] == "CANCELED")


def stop_with_savepoint(ports, job_id, timeout_s=120):
    """Stops the job after a savepoint (its state, in the format a later build restores); returns its path."""
    trigger = http_json(f"{ports.flink_url}/jobs/{job_id}/stop", {"drain": False}, method="POST")["request-id"]

    def savepoint_done():
        status = http_json(f"{ports.flink_url}/jobs/{job_id}/savepoints/{trigger}")
        if status["status"]["id"] != "COMPLETED":
            return None
        operation = status["operation"]
        if "failure-cause" in operation:
            raise SystemExit(f"the savepoint failed: {operation['failure-cause'].get('stack-trace', '')[:2000]}")
        return operation["location"]
    return wait_for("a savepoint of the live job", savepoint_done, timeout_s=timeout_s)


def upgrade_job(ports=Ports(), kafka_container=None):
    """Runs the job jar as built now in place of the running job, carrying its state over:
    stop with a savepoint, then start from it. With no job running, starts from the newest
    checkpoint a cancelled or failed job left. `kafka_container`: first create there the
    topics the new build may write to. Returns the new job's id."""
    if kafka_container:
        create_missing_topics(kafka_container)
    job_id = running_job(ports)
    if job_id:
        say(f"stopping job {job_id} with a savepoint")
        restore_from = stop_with_savepoint(ports, job_id)
    else:
        restore_from = newest_retained_checkpoint(ports)
    say(f"starting the live job from {restore_from}")
    return submit_live_job(ports, restore_from=restore_from)


def newest_retained_checkpoint(ports):
    ended = [j for j in http_json(f"{ports.flink_url}/jobs/overview")["jobs"] if j["state"] in ("CANCELED", "FAILED")]
    for job in sorted(ended, key=lambda j: j["end-time"], reverse=True):
        _, path = completed_checkpoints(ports, job["jid"])
        if path:
            return path
    sys.exit("no running job to take a savepoint of, and no ended job left a checkpoint: "
             "start the job afresh with `python3 -m iopipe.stack submit-job`")
