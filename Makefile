# Two entry points (see README "Set-up"): `make run` (the main job) and `make test` (the whole suite).
# Both install what they need first: Debian packages (bubblewrap, sudo) and the .venv; `make test`
# also .venv-verifiers for the verifiers environment's tests (verifiers needs openai<3, the rest openai 3).

VENV     := .venv
VENV_VF  := .venv-verifiers
PYTHON   ?= python3
STAMP    := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
STAMP_VF := $(VENV_VF)/.installed

.PHONY: setup run test lint bench clean

$(VENV)/bin/python:
	@if [ "$$(id -u)" != 0 ]; then echo "impasse's sandbox needs root (overlayfs, cgroups, setpriv): run make as root" >&2; exit 1; fi
	@command -v bwrap >/dev/null && command -v sudo >/dev/null && command -v setpriv >/dev/null && command -v git >/dev/null \
	  || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap sudo util-linux git >/dev/null)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip

# `make run` needs only the benchmark (impasse[bench]); the test suite needs every integration.
$(RUN_STAMP): pyproject.toml | $(VENV)/bin/python
	$(VENV)/bin/pip install -q -e '.[bench]'
	touch $(RUN_STAMP)

# The review page's browser test drives Debian's chromium through its chromium-driver (no browser download).
$(STAMP): pyproject.toml $(RUN_STAMP)
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null \
	  || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null)
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $(STAMP)

$(STAMP_VF): pyproject.toml $(STAMP)
	$(PYTHON) -m venv $(VENV_VF)
	$(VENV_VF)/bin/pip install -q --upgrade pip
	$(VENV_VF)/bin/pip install -q -e '.[verifiers-dev]'
	$(VENV_VF)/bin/pip check
	touch $(STAMP_VF)

setup: $(STAMP) $(STAMP_VF)

run: $(RUN_STAMP)
	$(VENV)/bin/impasse run
	$(VENV)/bin/impasse report runs/latest --html runs/latest/report.html --json runs/latest/report.json
	$(VENV)/bin/impasse run --suite ask --limit 3 --out runs/latest/ask
	$(VENV)/bin/impasse report runs/latest/ask --html runs/latest/ask/report.html --json runs/latest/ask/report.json

test: setup
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadgroup
	$(VENV_VF)/bin/python -m pytest -q tests/test_verifiers_env.py

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks

bench: $(STAMP)
	for b in benchmarks/*.py; do $(VENV)/bin/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(VENV_VF) runs
