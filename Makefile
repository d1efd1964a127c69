# lyra_crawl: `make demo` runs a real crawl on the bundled simulator; `make test` runs the suite,
# `make check` its fast tier.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Browser tests and the browser benchmark drive Debian's Chromium: `playwright install` downloads
# from a CDN that closed networks refuse. Set LYRA_CHROMIUM_PATH to use another binary.
CHROMIUM ?= $(or $(LYRA_CHROMIUM_PATH),/usr/bin/chromium)
SUDO := $(if $(filter 0,$(shell id -u)),,sudo -n)

.PHONY: install chromium servers demo test check lint audit bench train-matcher clean

install: $(STAMP)

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

chromium:
ifeq ($(LYRA_SKIP_BROWSER_TESTS),1)
	@echo "LYRA_SKIP_BROWSER_TESTS=1: not installing Chromium"
else
	@if [ -x "$(CHROMIUM)" ]; then echo "Chromium: $(CHROMIUM)"; else \
	  echo "Chromium not found at $(CHROMIUM): installing Debian's chromium"; \
	  $(SUDO) apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; fi
endif

# The PostgreSQL + Redis backends are tested on real servers, which the fixtures start on free
# loopback ports in temporary folders (tests/servers/): Debian's packages, when missing.
REDIS_SERVER ?= /usr/bin/redis-server
PG_BINDIR ?= $(or $(LYRA_PG_BINDIR),$(lastword $(sort $(wildcard /usr/lib/postgresql/*/bin))))
servers:
	@if [ -x "$(REDIS_SERVER)" ] && [ -x "$(PG_BINDIR)/postgres" ]; then \
	  echo "redis-server: $(REDIS_SERVER); PostgreSQL: $(PG_BINDIR)"; else \
	  echo "installing Debian's redis-server and postgresql"; \
	  $(SUDO) apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server postgresql; fi

demo: install
	$(BIN)/python -m lyra_crawl.demo

# The whole suite in parallel workers (one per core; TEST_WORKERS=0 runs it in this process).
# A module's tests that share a module fixture go to one worker (loadgroup); the longest start
# first (tests/conftest.py).
TEST_WORKERS ?= auto
test: install chromium servers
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

# The fast tier, for the edit-test loop: no server, no browser, no process of its own.
FAST_TIER := not (server or browser or subprocess)
check: install
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m "$(FAST_TIER)"

# The code map (ARCHITECTURE.md's "may import" table) is .importlinter's contracts; `make test`
# runs them too (tests/test_import_map.py), since CI runs `make test` alone.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

# Known vulnerabilities of every package installed in .venv, from PyPI's advisory data (the
# `vulnerabilities` of PyPI's JSON API). --strict fails when a package could not be checked, so
# a closed network is a failure, never a silent pass. Not part of `make test`: it needs PyPI.
audit: install
	$(BIN)/pip-audit --strict --vulnerability-service pypi --skip-editable --progress-spinner off

bench: install chromium
	$(BIN)/python -m benchmarks

# The paper matcher's trees from the labelled sets (training/README.md; DBLP-ACM from
# ../shared/er or LYRA_SHARED_DIR): writes lyra_crawl/papers/matcher_weights.json.
train-matcher: install
	$(BIN)/python -m training.train_matcher

clean:
	rm -rf $(VENV) build *.egg-info data/demo.sqlite3
