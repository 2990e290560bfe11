# Set-up and checks. Every target installs what it needs first, so each works on a fresh clone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo-node test-deps release-tools node release audit cloud-init lint test-fast scanner bench-reservations postgres ingress browser simulate reconcile setup tools mlserver forecast serve-forecasts bench-forecast test render catalog data bundle bench-policy scheduler eval bench-scheduler dev-up demo docs docs-reference
setup: $(STAMP)

# Pinned Go tools (Pulumi CLI + Kubernetes plugin, OPA, helm, etcd, kube-apiserver, prometheus, promtool) -> .tools/bin
# TOOLS="pulumi pulumi-kubernetes" builds only those (what a job that only runs the program needs).
TOOLS ?=
tools: setup
	bash tools/install.sh $(TOOLS)

# $(call virtualenv,DIR,PIP-ARGS): the recipe of each virtualenv below: DIR made with the pinned pip,
# `pip install PIP-ARGS` into it, then its stamp DIR/.installed
define virtualenv
$(PYTHON) -m venv $(1)
$(1)/bin/python -m pip install --quiet --upgrade pip==25.3
$(1)/bin/python -m pip install --quiet $(2)
touch $(1)/.installed
endef

$(STAMP): pyproject.toml
	$(call virtualenv,$(VENV),-e '.[dev]')

# MLServer + its MLflow runtime in their own virtualenv (see tools/mlserver/requirements.txt)
MLSERVER_VENV ?= .venv-mlserver
MLSERVER_STAMP := $(MLSERVER_VENV)/.installed
mlserver: $(MLSERVER_STAMP)

$(MLSERVER_STAMP): tools/mlserver/requirements.txt
	$(call virtualenv,$(MLSERVER_VENV),-r tools/mlserver/requirements.txt)

# checkov, the manifest scanner of tests/test_manifest_scan.py, in its own virtualenv (see
# tools/checkov/requirements.txt); pip's cache keeps a rebuild off the network
CHECKOV_VENV ?= .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
scanner: $(CHECKOV_STAMP)

$(CHECKOV_STAMP): tools/checkov/requirements.txt
	$(call virtualenv,$(CHECKOV_VENV),-r tools/checkov/requirements.txt)

# Scheduler p50/p99 over HTTP with the reservation record in memory, in SQLite and in PostgreSQL
bench-reservations: setup postgres
	$(PY) benchmarks/reservation_latency.py

# Debian's PostgreSQL server binaries (the reservation record's tests start their own on loopback)
postgres:
	bash tools/install-deb.sh postgresql '/usr/lib/postgresql/*/bin/postgres'

# nginx, the data plane of an NGINX ingress controller (the external route's test configures it)
ingress:
	bash tools/install-deb.sh nginx-light /usr/sbin/nginx

# Debian's cloud-init: its own schema checks the user-data every renderer and the chart write
cloud-init:
	bash tools/install-deb.sh cloud-init /usr/bin/cloud-init

# Debian's chromium and its chromium-driver: the real headless browser of the dashboard's test
browser:
	bash tools/install-deb.sh chromium /usr/bin/chromium
	bash tools/install-deb.sh chromium-driver /usr/bin/chromedriver

# A real node of the loopback cluster (greenops/local/node.py): Debian's containerd (its ctr and
# runc shim), runc, the CNI plugins (bridge, host-local, loopback), and iptables with conntrack for
# kube-proxy's rules
node:
	bash tools/install-deb.sh containerd /usr/bin/containerd
	bash tools/install-deb.sh runc /usr/sbin/runc
	bash tools/install-deb.sh containernetworking-plugins /usr/lib/cni/bridge
	bash tools/install-deb.sh iptables /usr/sbin/iptables
	bash tools/install-deb.sh conntrack /usr/sbin/conntrack

# Debian's tools of the release (release/): mmdebstrap (the images' root filesystem), umoci (OCI
# layouts), skopeo (push and pull by digest), docker-registry (a real registry on loopback), runc
# (the images started as a kubelet's runtime would), busybox-static (bundle-init's one binary)
release-tools:
	bash tools/install-deb.sh mmdebstrap /usr/bin/mmdebstrap
	bash tools/install-deb.sh umoci /usr/bin/umoci
	bash tools/install-deb.sh skopeo /usr/bin/skopeo
	bash tools/install-deb.sh docker-registry /usr/bin/docker-registry
	bash tools/install-deb.sh runc /usr/sbin/runc
	bash tools/install-deb.sh busybox-static /bin/busybox

# Build every artifact, push it (REGISTRY=host/path, else to a registry on loopback), sign it
# (COSIGN_KEY=cosign.key with COSIGN_PASSWORD, else a throwaway key pair), verify it, and pin our
# images by digest in components/versions.yaml (REPOSITORY=..., else REGISTRY, else ghcr.io)
release: setup tools release-tools
	$(PY) -m release all $(if $(REGISTRY),--registry $(REGISTRY)) $(if $(REPOSITORY),--repository $(REPOSITORY)) $(if $(COSIGN_KEY),--key $(COSIGN_KEY))

# The locked dependencies' known vulnerabilities (PyPI's advisories), each fixed or explained in
# docs/operations/vulnerabilities.md; needs the network, so it is not part of `make test`
audit: setup
	$(VENV)/bin/pip-audit --disable-pip --require-hashes -r release/requirements.lock
	$(VENV)/bin/pip-audit --disable-pip --require-hashes -r release/mlserver.lock

# everything the suite needs installed (CI times it apart from the tests)
test-deps: setup tools mlserver scanner postgres ingress browser cloud-init release-tools node

test: test-deps
	$(PY) -m pytest

# Ruff (lint and format), mypy's strict check of greenops and import-linter's layers: what
# tests/test_lint.py runs inside `make test`, on its own
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-cache

# The edit-test loop: the unit, policy (real OPA and Regal, on files), program (Pulumi mocks),
# component, renderer, contract, data and docs suites, without the tests that start servers: 1 min 46 s to
# 1 min 58 s on 2 cores, measured. `make test` stays the whole suite, and what CI runs.
FAST_SUITES := tests/unit tests/program tests/renderers tests/components tests/policies tests/data tests/contract tests/docs
test-fast: setup tools
	$(PY) -m pytest $(FAST_SUITES) -m "not integration and not e2e and not mlops" -q

# Until the main job lands (issue: the `greenops` demo on the Automation API), render the dev
# stack's workloads for three placements and validate them against the upstream CRDs.
render: setup
	$(VENV)/bin/greenops render --stack dev --provider azure --region swedencentral
	$(VENV)/bin/greenops render --stack dev --provider gcp --region europe-west9
	$(VENV)/bin/greenops render --stack dev --provider aws --region eu-north-1

catalog: setup
	$(VENV)/bin/greenops catalog

# The docs site's generated reference pages (docs/reference/configuration.md, cli.md) from the config
# models and the CLI parsers; tests/docs/test_reference.py fails when they are stale
docs-reference: setup
	$(PY) scripts/docs_reference.py

# Re-derive data/ from the raw public data (not committed; see data/SOURCES.md).
data: setup
	$(PY) scripts/derive_data.py

# The versioned OPA policy bundle (Rego + data derived from data/) -> dist/policy-bundle.tar.gz
bundle: setup tools
	$(PY) -m greenops.policies.bundle --out dist/policy-bundle.tar.gz

bench-policy: setup tools
	$(PY) benchmarks/policy_latency.py

scheduler: setup
	$(PY) -m greenops.scheduler --host 127.0.0.1 --port 8080 --log-format console

# Scheduler vs baselines and the oracle on the public traces, the constrained geographic scenario and
# forecast capture with the uncertainty rules -> build/eval/report.{json,png}, geo_constrained.json,
# capture.json; then Let's Wait Awhile replicated -> build/eval/lwa.json
eval: setup
	$(VENV)/bin/greenops-eval --out build/eval
	$(VENV)/bin/greenops-eval --scenario lwa --out build/eval
	$(VENV)/bin/greenops-eval --scenario capacity --out build/eval

# Forecasters: train per zone + generic on the public traces, evaluate on the held-out period,
# log and register in MLflow (build/mlflow unless MLFLOW_TRACKING_URI) -> build/forecast/report.*
forecast: setup
	$(VENV)/bin/greenops-forecast train

# Serve the registered champions with MLServer over OIP v2 on 127.0.0.1:8085
serve-forecasts: setup mlserver
	$(VENV)/bin/greenops-forecast serve --port 8085

bench-forecast: setup mlserver
	$(PY) benchmarks/forecasting.py

bench-scheduler: setup
	$(PY) benchmarks/scheduler_latency.py

# `pulumi up` of the dev stack: OPA and the scheduler on loopback, manifests rendered to build/rendered/dev
dev-up: setup tools
	mkdir -p build
	bash scripts/dev_up.sh

# One reconcile pass of a stack (the local twin of .github/workflows/reconcile.yml); WATCH=1 repeats it
STACK ?= dev
reconcile: setup tools
	$(VENV)/bin/greenops reconcile --stack $(STACK) $(if $(WATCH),--watch)

# Three simulated days of unattended reconciles (real engine, OPA, scheduler): prints the timeline
simulate: setup tools
	$(PY) -m pytest -q -s tests/e2e/test_simulated_days.py

# The main job: the whole system on loopback (API server, webhook, OPA, scheduler, dev stack), once
demo: setup tools
	$(VENV)/bin/greenops demo --once

# The platform on a real node here (as root): its images built, the scheduler installed by `pulumi up`
# on PostgreSQL in a pod, a day of bookings; prints the pods and the day (scripts/node_demo.py)
demo-node: setup tools node release-tools
	$(PY) scripts/node_demo.py

# The documentation site (mkdocs.yml, docs/) -> build/site; --strict fails on a broken link or anchor
docs: setup
	$(VENV)/bin/mkdocs build --strict --site-dir build/site
