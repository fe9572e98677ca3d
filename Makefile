# Every target is documented in README.md ("Make targets").
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BENCHFLEET := $(PY) -m benchfleet
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: install test test-large check synth plan validate schema lint format bench demo models e2e-container \
	image push pin-image push-model cluster cluster-down cluster-build e2e fuzz lake lake-down

install: $(VENV)/.installed

CHECKOV := $(VENV)/tools/checkov/bin/checkov

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[runner,runtimes,synth,collector,oci,lake,dev]'
	# checkov pins dozens of libraries of its own: it gets a venv apart from ours.
	$(PYTHON) -m venv $(VENV)/tools/checkov
	$(VENV)/tools/checkov/bin/pip install --quiet --disable-pip-version-check checkov==3.3.30
	touch $@

# Three workers on two cores: the tests wait on processes, servers and watches for a quarter
# of their time, which a third worker fills (make test 10 min 23 s against 13 min 50 s with
# two; docs/decisions/tests.md). Tests that must share a worker are grouped by path
# (tests/conftest.py, WORKER_GROUPS).
TEST_WORKERS ?= 3
PYTEST := $(PY) -m pytest --numprocesses $(TEST_WORKERS) --dist loadgroup

# The real-size tests (ResNet-50 and BERT-base exported, converted by every runtime, swept,
# stopped) are a third of the suite's CPU: `make test-large` runs them, CI after `make test`
# (docs/decisions/tests.md, "Two commands").
test: install
	$(PYTEST) -m 'not large_model'

test-large: install
	$(PYTEST) -m large_model

# Before each commit: ruff, then every test not marked slow (nor cluster, large_model). mypy
# and the slow tests are `make lint`'s and `make test`'s.
check: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PYTEST) -m 'not slow and not cluster and not large_model'

fuzz: install
	BENCHFLEET_FUZZ=fuzz $(PY) -m pytest tests/synth/test_fuzz.py --hypothesis-show-statistics
	$(PY) -m tests.synth.fuzz_yaml -max_total_time=600

validate: install
	$(BENCHFLEET) validate

synth: install
	$(BENCHFLEET) synth

plan: install
	$(BENCHFLEET) plan

schema: install
	$(BENCHFLEET) schema

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: install cluster-build
	$(PY) -m bench.spec_loading
	$(PY) -m bench.synth_speed
	$(PY) -m bench.runner_accuracy
	$(PY) -m bench.runner_startup
	$(PY) -m bench.grouping
	$(PY) -m bench.quantization
	$(PY) -m bench.large_models
	$(PY) -m bench.collector_gather
	$(PY) -m bench.report_scale
	$(PY) -m bench.cluster_gather
	$(PY) -m bench.cluster_gather_scale

demo: synth
	$(PY) -m localrun cpu-smoke --again

models: install
	$(PY) -m models.make_models

e2e-container: install
	$(PY) -m localrun.e2e_container

# IMAGE_BASE=auto|official|local: auto takes the official image when it can be pulled.
IMAGE_BASE ?= auto

image: install
	$(PY) -m localrun.image build --base $(IMAGE_BASE)

# REGISTRY=host[:port]/path; the image goes to $(REGISTRY)/runner:<version>. INSECURE=1 for
# plain HTTP (a loopback registry gets it without asking).
push: install
	$(PY) -m localrun.image push --registry '$(REGISTRY)' $(if $(INSECURE),--insecure)

# IMAGE=registry/name@sha256:... pins that; without it, what the last `make push` recorded.
# The registry is asked to confirm the digest first; NO_REGISTRY_CHECK=1 skips that.
pin-image: install
	$(PY) -m localrun.pin $(if $(IMAGE),--image '$(IMAGE)') \
		$(if $(INSECURE),--insecure)$(if $(NO_REGISTRY_CHECK), --no-registry-check)

# MODEL=path/to/model.pt2 REGISTRY=host[:port]/path [NAME=repository] [FILE=path inside]:
# packs the .pt2 as an OCI artifact an image volume mounts, pushes it to REGISTRY/NAME and
# prints the models: entry (oci: ...@sha256:..., sha256: ...). INSECURE=1 for plain HTTP.
push-model: install
	$(PY) -m localrun.push_model --model '$(MODEL)' --registry '$(REGISTRY)' \
		$(if $(NAME),--name '$(NAME)') $(if $(FILE),--file '$(FILE)') $(if $(INSECURE),--insecure)

cluster-build: install
	$(PY) -m localcluster build

cluster: install
	$(PY) -m localcluster up

cluster-down: install
	$(PY) -m localcluster down

# Builds (once, cached) and starts the lake's S3 server on loopback; prints only the shell
# lines that point every command at it: eval "$$(make -s lake)".
lake: install
	@$(PY) -m localcluster lake up

lake-down: install
	@$(PY) -m localcluster lake down

e2e: cluster-build
	$(PY) -m pytest -m cluster
