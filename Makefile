# Tollgate: `make serve` runs the gateway with a worker; `make test` runs the whole suite.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# Bytecode is written: the suite's subprocesses (Ray workers, servers, fake upstreams) would otherwise compile the
# gateway again each time it starts.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install serve test test-fast services migrate bench clean vendor-console

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	# uv where it works (~20 s against pip's ~85 s on the 2-core box), pip otherwise; no bytecode at install.
	bash scripts/install-venv.sh $(VENV)
	touch $(STAMP)

install: $(STAMP)

migrate: $(STAMP)
	$(BIN)/tollgate migrate

serve: $(STAMP)
	$(BIN)/tollgate migrate
	$(BIN)/tollgate serve

services:
	bash deploy/scripts/ensure-services.sh

# The import order (.importlinter; docs/architecture.md): layers, workers apart from gateway, no cycles.
.PHONY: lint-imports
lint-imports: $(STAMP)
	$(BIN)/lint-imports --no-cache

# The suite on both cores, a test file per worker (its module fixtures stay together): 7m54s against 12m53s in
# one process on the 2-core box, same tree. JOBS=1 runs it in one process.
JOBS ?= 2
test: $(STAMP) services
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=30 $(if $(filter-out 1,$(JOBS)),-n $(JOBS) --dist loadfile) $(PYTEST_ARGS)

# The inner loop: no model, Ray, browser, Triton interpreter or PostgreSQL runs (the `slow` marker, set in
# tests/conftest.py); `make test` runs everything. On JOBS workers too: 2,099 tests in 105 s on the 2-core box.
# The API fuzzer is not even collected: every case of it is slow, and schemathesis builds them (~3 s a worker).
test-fast: $(STAMP) services
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not slow and not postgres" --ignore=tests/gateway/test_fuzz_api.py $(if $(filter-out 1,$(JOBS)),-n $(JOBS) --dist loadfile) $(PYTEST_ARGS)

# The console's JavaScript and CSS (htmx, uPlot) from the npm registry; versions and sha256 in vendor.json.
vendor-console:
	bash deploy/scripts/vendor-console.sh

clean:
	rm -rf $(VENV) data .pytest_cache

# The docker-compose stack built, started and driven through docs/operations.md's flow (docker compose) on this
# machine (podman behind a Docker socket, stand-in base images: ../shared/compose-here), then taken down. Not part
# of `make test`.
.PHONY: compose-check
compose-check:
	bash deploy/scripts/compose-check.sh
