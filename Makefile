# Two entry points (see README "Set-up"): `make run` (the main job) and `make test` (the whole suite).
# Both install what they need first: Debian packages (bubblewrap, sudo) and the .venv.

VENV   := .venv
PYTHON ?= python3
STAMP  := $(VENV)/.installed

.PHONY: setup run test lint bench clean

$(STAMP): pyproject.toml
	@if [ "$$(id -u)" != 0 ]; then echo "impasse's sandbox needs root (overlayfs, cgroups, setpriv): run make as root" >&2; exit 1; fi
	@command -v bwrap >/dev/null && command -v sudo >/dev/null && command -v setpriv >/dev/null && command -v git >/dev/null \
	  || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap sudo util-linux git >/dev/null)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(VENV)/bin/impasse run
	$(VENV)/bin/impasse report runs/latest --html runs/latest/report.html --json runs/latest/report.json
	$(VENV)/bin/impasse run --suite ask --limit 3 --out runs/latest/ask
	$(VENV)/bin/impasse report runs/latest/ask --html runs/latest/ask/report.html --json runs/latest/ask/report.json

test: setup
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadgroup

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks

bench: setup
	for b in benchmarks/*.py; do $(VENV)/bin/python $$b || exit 1; done

clean:
	rm -rf $(VENV) runs
