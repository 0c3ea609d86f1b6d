# iopipe: `make demo` shows it working on this machine, `make test` runs every test.
# Slow downloads and builds are cached outside the repo, under $(IOPIPE_CACHE).

SHELL := /bin/bash
IOPIPE_CACHE ?= $(HOME)/.cache/iopipe
export IOPIPE_CACHE
export CARGO_TARGET_DIR ?= $(IOPIPE_CACHE)/cargo-target
AGENT_BIN := $(CARGO_TARGET_DIR)/release/iopipe-agent
export IOPIPE_AGENT_BIN := $(AGENT_BIN)
ALERTMANAGER_VERSION := v0.28.1
ALERTMANAGER_DIR := $(IOPIPE_CACHE)/alertmanager-$(ALERTMANAGER_VERSION)
export IOPIPE_ALERTMANAGER_BIN := $(ALERTMANAGER_DIR)/alertmanager
export IOPIPE_AMTOOL_BIN := $(ALERTMANAGER_DIR)/amtool
GO := $(shell command -v go || echo /usr/local/go/bin/go)
VENV := $(IOPIPE_CACHE)/venv-$(shell sha256sum integration-tests/requirements.txt | cut -c1-12)
PYTHON := $(VENV)/bin/python
MVN := mvn -B -q -Dstyle.color=never
# Cargo passes make's flags on to the make its build scripts run (libbpf-sys's), whose
# output goes to /dev/null. Under the unit tier's output sync (make -O) that make
# write-locks its stdout, and dockerd holds a read lock on /dev/null: on a machine
# building the agent for the first time, it waited for ever. Output sync is off for them.
CARGO := MAKEFLAGS="$$MAKEFLAGS --output-sync=none" cargo
JOB_JAR := stream-jobs/target/iopipe-stream-jobs.jar
JOB_SOURCES := stream-jobs/pom.xml $(shell find stream-jobs/src/main stream-jobs/src/bench schema/records schema/topics.json schema/signing.json schema/pipeline.json -type f 2>/dev/null)

.PHONY: help deps agent jobs images test test-quick test-unit test-jar test-disks test-stack test-cluster test-schema test-dashboards test-infra test-vector test-agent test-jobs alertmanager test-e2e demo down cluster-up cluster-down upgrade-job detect evaluate-peers evaluate-precision dashboards bench bench-agent bench-jobs bench-warehouse bench-ingest bench-fleet

help:
	@echo "make demo    start the stack and watch a fault disk go bad as iopipe sees it (root)"
	@echo "make test    every tier of tests in turn, as CI runs it, with each tier's duration"
	@echo "make test-quick   the inner loop: test-unit and test-jar"
	@echo "make test-unit    no services: schema, dashboards, manifests, Vector pipeline, agent and job unit tests"
	@echo "make test-jar     the job jar through make detect: scenarios, offline mode, precision set, peers, iostat"
	@echo "make test-disks   the real agent tracing fault disks (root), no services"
	@echo "make test-stack   Kafka, Flink, ClickHouse and Alertmanager in containers: thin slice, seeds end to end, warehouse, demo"
	@echo "make test-cluster faults on a cluster: kills, Kafka nodes and ClickHouse replicas away; the job's state restored"
	@echo "make test-e2e     the seed scenarios on fault disks through agent, Kafka, Flink and ClickHouse (in test-stack)"
	@echo "make detect INPUT=records.ndjson OUTPUT=out.ndjson   offline mode"
	@echo "make evaluate-precision   the precision set: verdicts on 2,000 healthy bursty disks and injected pathologies"
	@echo "make evaluate-peers   slow_vs_peers on real fleet telemetry (Perseus layout): flagged vs labelled drives"
	@echo "make down    stop everything the demo started"
	@echo "make cluster-up   the cluster the fault tests use: Kafka x3, ZooKeeper, Flink HA, ClickHouse; make cluster-down"
	@echo "make upgrade-job  run the job jar built now in place of the demo's running job, keeping its state"
	@echo "make bench   benchmarks (root): results in agent/bench/RESULTS.md, stream-jobs/bench/RESULTS.md, schema/bench/RESULTS.md, schema/bench/RESULTS-ingest.md, stream-jobs/bench/RESULTS-fleet.md"

deps: $(VENV)/.installed
	@bash infra/bootstrap.sh

# The environment's path names its requirements' content: a clone's newer copy of the same file needs none.
$(VENV)/.installed:
	@echo "[iopipe] creating the Python environment for tests in $(VENV)"
	@python3 -m venv $(VENV)
	@$(VENV)/bin/pip install -q --upgrade pip
	@$(VENV)/bin/pip install -q -r integration-tests/requirements.txt
	@touch $@

agent:
	@echo "[iopipe] building the agent (cargo, release)"
	@cd agent && $(CARGO) build --release --locked

jobs: $(JOB_JAR)

$(JOB_JAR): $(JOB_SOURCES)
	@echo "[iopipe] building the stream jobs (maven)"
	@cd stream-jobs && $(MVN) package -DskipTests

images:
	@python3 -m iopipe.stack images

# The tiers, by what their tests need (pyproject.toml's markers); each prints its duration.
TIERS := unit jar disks stack cluster
PYTEST_TIER = $(PYTHON) -m pytest -v -rxX --durations=12 integration-tests -m

test: deps
	@bash infra/test-tiers.sh $(TIERS)

test-quick: deps
	@bash infra/test-tiers.sh unit jar

# Its steps run two at a time (infra/test-tiers.sh passes -j2), the longest first: cargo
# and Maven side by side, the pytest steps beside cargo, the Vector checks (cargo again)
# last; each step's output is printed whole when it ends.
test-unit: test-agent test-jobs test-schema test-dashboards test-infra test-vector

test-schema: $(VENV)/.installed
	@echo "[iopipe] schema contract tests"
	@$(PYTHON) -m pytest -q schema/tests

test-dashboards: $(VENV)/.installed
	@echo "[iopipe] dashboard generation tests"
	@$(PYTHON) -m pytest -q dashboards/tests

test-infra: $(VENV)/.installed $(IOPIPE_ALERTMANAGER_BIN)
	@echo "[iopipe] Kubernetes manifests against the Kubernetes and operator schemas; the Alertmanager config with amtool"
	@$(PYTHON) -m pytest -q infra/tests

dashboards: $(VENV)/.installed
	@$(PYTHON) -m iopipe.dashboards.generate

alertmanager: $(IOPIPE_ALERTMANAGER_BIN)

# Built from the Go module proxy (no registry here ships the binary); into a fresh
# directory first, so an interrupted build never leaves half a cache.
$(IOPIPE_ALERTMANAGER_BIN):
	@echo "[iopipe] building Alertmanager and amtool $(ALERTMANAGER_VERSION) from the Go module proxy (about a minute)"
	@rm -rf $(ALERTMANAGER_DIR).tmp && mkdir -p $(ALERTMANAGER_DIR).tmp
	@GOBIN=$(ALERTMANAGER_DIR).tmp $(GO) install github.com/prometheus/alertmanager/cmd/alertmanager@$(ALERTMANAGER_VERSION) \
		github.com/prometheus/alertmanager/cmd/amtool@$(ALERTMANAGER_VERSION)
	@rm -rf $(ALERTMANAGER_DIR) && mv $(ALERTMANAGER_DIR).tmp $(ALERTMANAGER_DIR)

# The Vector pipeline (infra/vector): its VRL run by the vrl crate (Vector 0.50's remap engine)
# over the schema's examples and the agent's real output, its own `tests:` played, and its
# structure checked against Vector 0.50's component reference.
test-vector: $(VENV)/.installed agent
	@echo "[iopipe] Vector pipeline tests (VRL by the vrl crate, config tests, config structure)"
	@cd infra/vector/vrl-check && $(CARGO) test --release --locked
	@$(PYTHON) -m pytest -q infra/vector/tests

# In the release profile's code without its link-time optimisation (agent/Cargo.toml).
test-agent:
	@echo "[iopipe] agent tests (cargo test)"
	@cd agent && $(CARGO) test --profile release-tests --locked

test-jobs:
	@echo "[iopipe] stream job tests (maven)"
	@set -o pipefail; cd stream-jobs && mvn -B --no-transfer-progress -Dstyle.color=never package \
	  | grep -E --line-buffered "Tests run:|FAIL|ERROR|BUILD"

test-jar: $(VENV)/.installed agent $(JOB_JAR)
	@echo "[iopipe] jar tier: the job jar through make detect (scenarios, offline mode, precision set, peers, iostat)"
	@$(PYTEST_TIER) jar -n 2 --dist worksteal  # two at a time: each test is one JVM, none is timed

test-disks: $(VENV)/.installed agent
	@echo "[iopipe] disks tier: the real agent tracing fault disks (root)"
	@$(PYTEST_TIER) disks

test-stack: $(VENV)/.installed agent $(JOB_JAR) images $(IOPIPE_ALERTMANAGER_BIN)
	@echo "[iopipe] stack tier: real Kafka, Flink, ClickHouse and Alertmanager"
	@$(PYTEST_TIER) stack

# Faults on a cluster of its own: processes killed, Kafka nodes and ClickHouse replicas
# stopped, each on a disk and under a host of its own; then the job cancelled and restored
# on the same cluster. Prints the accounting (-s).
test-cluster: $(VENV)/.installed agent $(JOB_JAR) images
	@echo "[iopipe] cluster tier: faults on a cluster, the job's state carried across runs"
	@$(PYTEST_TIER) cluster -s

# The seed scenarios on fault disks through the whole pipeline (part of test-stack); prints the figures.
test-e2e: $(VENV)/.installed agent $(JOB_JAR) images $(IOPIPE_ALERTMANAGER_BIN)
	@$(PYTHON) -m pytest -v -s integration-tests/test_end_to_end.py

demo: deps agent $(JOB_JAR) images $(IOPIPE_ALERTMANAGER_BIN)
	@python3 -m iopipe.demo

down:
	@python3 -m iopipe.stack down

cluster-up: deps $(JOB_JAR) images
	@python3 -m iopipe.stack cluster-up

cluster-down:
	@python3 -m iopipe.stack cluster-down

upgrade-job: $(JOB_JAR)
	@python3 -m iopipe.stack upgrade-job

detect:
	@test -n "$(INPUT)" -a -n "$(OUTPUT)" || { echo "usage: make detect INPUT=records.ndjson OUTPUT=out.ndjson [REJECTS=file]"; exit 2; }
	@$(MAKE) -s $(JOB_JAR) >&2  # stdout carries the verdicts only
	@stream-jobs/bin/iopipe-detect --input "$(INPUT)" --output "$(OUTPUT)" $(if $(REJECTS),--rejects "$(REJECTS)")

# slow_vs_peers on real fleet telemetry (Perseus layout): drives flagged against the labelled ones, time to detect.
evaluate-peers: agent $(JOB_JAR)
	@python3 stream-jobs/bench/slow_vs_peers.py

# The precision set: 2,000 healthy disks of bursty kinds and the injected pathologies over 30 minutes.
evaluate-precision: $(JOB_JAR)
	@python3 -m iopipe.synthetic.precision --evaluate 2000 --out integration-tests/PRECISION.md

bench: bench-agent bench-jobs bench-warehouse bench-ingest bench-fleet

# IOPS at maximum rate with and without the agent and its peers, side by side.
bench-agent: agent
	@python3 agent/bench/overhead.py --agent $(AGENT_BIN)

# ClickHouse with 10,000 disks x 7 days of 1 min rows: insert rate, bytes per disk-day, cookbook latency.
bench-warehouse: deps images
	@python3 -m iopipe.bench.warehouse

# ClickHouse reading agent histograms from Kafka into its tables, against a plain consumer.
bench-ingest: deps images
	@$(PYTHON) -m iopipe.bench.ingest

# The stream job's records/s as it runs (RocksDB, checkpoints, Kafka sink, signatures) and its graph alone, on a
# fleet of iopipe/synthetic/fleet.py's disks copied onto many hosts (as bench-fleet's are), against a plain Kafka
# consumer; with one disk flight-recording; its CPU profile; state bytes per disk.
bench-jobs: deps $(JOB_JAR) images
	@python3 -m iopipe.bench.jobs

# The live job on the cluster at 1,000 to 20,000 disks (SIZES in scale.py) sending as agents do, checkpoints
# on: records/s, checkpoints, record-to-ClickHouse latency, against a plain Kafka consumer.
bench-fleet: deps $(JOB_JAR) images
	@$(PYTHON) -m iopipe.bench.scale
