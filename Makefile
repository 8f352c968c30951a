# Two commands do all set-up on a fresh machine with Python 3.11:
#   make lab    JupyterLab on notebooks/
#   make test   the whole test suite (unit, property, differential, notebooks, browser)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	# pycute ships inside nvidia-cutlass; its declared deps would pull CUDA toolchains we do not use
	$(PY) -m pip install -q --no-deps nvidia-cutlass==4.2.0.0
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	rm -f $(VENV)/.installed-*; touch $@

# Chromium for the real-browser widget test (Debian package; playwright never downloads a browser)
/usr/bin/chromium:
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
	  echo "chromium could not be installed: the browser test will skip"

.PHONY: test lab bench install
install: $(STAMP)

test: $(STAMP) /usr/bin/chromium
	$(PY) -m pytest -q -p no:cacheprovider

# root (containers, CI machines) needs --allow-root; nobody else gets it
lab: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks/ $(if $(filter 0,$(shell id -u)),--allow-root)

bench: $(STAMP)
	$(PY) -m workbench bench --out benchmarks/results/bench-latest.json
	$(PY) benchmarks/bench_widgets.py
