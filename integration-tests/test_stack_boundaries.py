"""The stack's own boundaries: who may start code in Flink, and as whom every service runs."""
import json
import subprocess
import urllib.error
import urllib.request
import uuid

import stack

EMPTY_JAR = b"PK\x05\x06" + bytes(18)  # a zip's end-of-directory record alone


def _post_jar(flink_url, jar_bytes):
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"jarfile\"; filename=\"job.jar\"\r\n"
            "Content-Type: application/x-java-archive\r\n\r\n").encode() + jar_bytes + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(f"{flink_url}/jars/upload", data=body, method="POST")
    request.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read()


def test_flink_takes_no_jar_uploads(pipeline):
    """Anyone who reaches the REST API could run code in the cluster through an uploaded
    jar; the job itself went in through the CLI."""
    # An empty zip: small enough that a refusing server answers before the body is sent.
    status, answer = _post_jar(pipeline.ports.flink_url, EMPTY_JAR)
    assert 400 <= status < 500, f"a jar upload answered {status}: {answer[:300]!r}"
    assert b"not allowed" in answer or status == 404, answer[:300]
    config = stack.flink_config(pipeline.ports)
    assert config["web.submit.enable"] == "false"
    assert config["rest.bind-address"] == "127.0.0.1"
    jobs = stack.http_json(f"{pipeline.ports.flink_url}/jobs")["jobs"]
    assert {"id": pipeline.job_id, "status": "RUNNING"} in jobs, "the live job runs, submitted by the CLI"


def _processes(container):
    """(uid, command line) of every process in `container`, as the host's ps sees them."""
    # docker top needs the pid column to find the container's processes in the host's ps.
    listing = subprocess.run(["docker", "top", container, "-eo", "pid,uid,args"], capture_output=True, text=True, check=True)
    rows = [line.split(None, 2) for line in listing.stdout.splitlines()[1:] if line.strip()]
    return [(int(uid), args) for _, uid, args in rows]


def test_no_service_runs_as_root_or_privileged(pipeline):
    for service, container in pipeline.containers.items():
        processes = _processes(container)
        assert processes, f"{service} runs something"
        as_root = [args for uid, args in processes if uid == 0]
        assert not as_root, f"{service} runs as root: {as_root}"
        host_config = json.loads(subprocess.run(["docker", "inspect", "-f", "{{json .HostConfig}}", container],
                                                capture_output=True, text=True, check=True).stdout)
        assert not host_config["Privileged"], f"{service} is privileged"
        assert not host_config["CapAdd"], f"{service} was given capabilities {host_config['CapAdd']}"
