# Two commands do all set-up on a fresh machine with Python 3.11:
#   make lab    JupyterLab on the teaching series (installs only what the notebooks need)
#   make test   the whole test suite (unit, property, differential, notebooks, browser, sanitizers, binder)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
HASH   := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
LAB_STAMP  := $(VENV)/.lab-$(HASH)
TEST_STAMP := $(VENV)/.test-$(HASH)

# the library, JupyterLab, the views, torch (CPU) and matplotlib: what the notebooks import
$(LAB_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[lab]'
	$(PY) -m workbench build-torch-native || echo "the torch reader was not built (why: above); torch tensors take torch's DLPack exchange API (slower, same results)"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	rm -f $(VENV)/.lab-*; touch $@

# + the test stack: pytest, nbval, hypothesis, cupy/NVRTC/CCCL (compile checks without a GPU),
# playwright, and the anchors the differential tests run (CuTe DSL, pycute)
$(TEST_STAMP): $(LAB_STAMP)
	$(PY) -m pip install -q -e '.[test]'
	# pycute ships inside nvidia-cutlass; its declared deps would pull CUDA toolchains we do not use
	$(PY) -m pip install -q --no-deps nvidia-cutlass==4.2.0.0
	$(PY) -m workbench build-torch-native || echo "the torch reader was not built (why: above); torch tensors take torch's DLPack exchange API (slower, same results)"
	rm -f $(VENV)/.test-*; touch $@

# Chromium for the real-browser widget test (Debian package; playwright never downloads a browser)
/usr/bin/chromium:
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
	  echo "chromium could not be installed: the browser test will skip"

.PHONY: test test-asan test-binder lab bench install store-notebooks
install: $(TEST_STAMP)

test: $(TEST_STAMP) /usr/bin/chromium
	$(PY) -m pytest -q -p no:cacheprovider
	$(MAKE) test-asan
	$(MAKE) test-binder

# The C extensions (every Extension setup.py declares) built with AddressSanitizer and
# UndefinedBehaviorSanitizer into build/asan/, then the tests of the code that hands them pointers
# (DLPack import/export, tensors, mdspan, the kernel launcher, the fuzz and hostile-input suites) run
# against that build.  Any sanitizer report aborts the run.  The ASan runtime must be loaded before
# CPython (LD_PRELOAD).  detect_leaks=0: CPython keeps interned objects and its arenas until exit by
# design, which LeakSanitizer would report as thousands of leaks unrelated to our code.  libstdc++ is
# preloaded too: ASan resolves __cxa_throw when it starts, and torch throws C++ exceptions.  python -P
# keeps the working tree's own (uninstrumented) extensions off sys.path.  PYTHONMALLOC=malloc: objects
# from CPython's small-object arenas (ctypes arrays, tuples) are invisible to ASan otherwise.  NVRTC (closed source) fails
# its builtin-operations step when ASan's allocator is interposed, so the one test that compiles
# through it is left to the ordinary run.
ASAN_DIR   := build/asan
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1
ASAN_PRELOAD = $(shell $${CC:-gcc} -print-file-name=libasan.so) $(shell $${CC:-gcc} -print-file-name=libstdc++.so.6)
ASAN_TESTS := $(wildcard tests/test_dlpack_bridge.py tests/test_tensor.py tests/test_mdspan.py tests/test_mdspan_cccl.py tests/test_launch_guard.py \
                tests/test_dsl_native_launcher.py tests/test_fuzz_dlpack.py tests/test_hostile_input.py)
test-asan: $(TEST_STAMP)
	rm -rf $(ASAN_DIR) && mkdir -p $(ASAN_DIR)/pkg
	cp -r workbench $(ASAN_DIR)/pkg/ && find $(ASAN_DIR)/pkg -name '*.so' -delete
	CFLAGS="$(ASAN_FLAGS)" LDFLAGS="-fsanitize=address,undefined" \
	  $(PY) setup.py -q build_ext --force --build-lib $(ASAN_DIR)/pkg --build-temp $(ASAN_DIR)/tmp
	$(PY) -c "import setuptools, distutils.core as d; \
	  print(' '.join(e.name for e in d.run_setup('setup.py', stop_after='init').ext_modules))" > $(ASAN_DIR)/extensions
	LD_PRELOAD="$(ASAN_PRELOAD)" PYTHONPATH=$(ASAN_DIR)/pkg ASAN_OPTIONS=detect_leaks=0 \
	  $(PY) -P -c "import importlib, sys; names = open('$(ASAN_DIR)/extensions').read().split(); \
	  files = [importlib.import_module(n).__file__ for n in names]; \
	  assert names and all('$(ASAN_DIR)/pkg/' in f for f in files), files; print('ASan build of', *names)" && \
	LD_PRELOAD="$(ASAN_PRELOAD)" PYTHONPATH=$(ASAN_DIR)/pkg \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  PYTHONMALLOC=malloc $(PY) -P -m pytest -q -p no:cacheprovider -o addopts='' --capture=sys $(ASAN_TESTS) \
	  --deselect tests/test_dsl_native_launcher.py::test_half_precision_kernels_compile_and_compute_in_float32

# binder/ as mybinder builds it: a fresh Python 3.11 venv with binder/requirements.txt and binder/postBuild,
# then the whole teaching series validated strictly by nbval inside it (nbval itself added on top).
BINDER_VENV := build/binder-venv
test-binder:
	rm -rf $(BINDER_VENV) && $(PYTHON) -m venv $(BINDER_VENV)
	$(BINDER_VENV)/bin/python -m pip install -q --upgrade pip
	$(BINDER_VENV)/bin/python -m pip install -q -r binder/requirements.txt
	PATH=$(CURDIR)/$(BINDER_VENV)/bin:$$PATH bash binder/postBuild
	$(BINDER_VENV)/bin/python -m pip install -q "nbval>=0.11" "pytest>=8"
	$(BINDER_VENV)/bin/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	$(BINDER_VENV)/bin/python -m pytest -q -p no:cacheprovider -o addopts='' \
	  --nbval --nbval-sanitize-with notebooks/sanitize.cfg --nbval-current-env notebooks/

# root (containers, CI machines) needs --allow-root; nobody else gets it.  The URL JupyterLab prints (and
# opens) is the ten-minute tour's, not the Launcher's: default_url is what it prints.
LAB_ARGS := --LabApp.default_url=/lab/tree/notebooks/00_tour.ipynb
lab: $(LAB_STAMP)
	$(VENV)/bin/jupyter lab $(LAB_ARGS) $(if $(filter 0,$(shell id -u)),--allow-root)

# re-execute the notebooks that draw views and store them as the repository keeps them (tests/store_notebooks.py)
store-notebooks: $(TEST_STAMP)
	$(PY) tests/store_notebooks.py

bench: $(TEST_STAMP)
	$(PY) -m workbench bench --out benchmarks/results/bench-latest.json
	$(PY) benchmarks/bench_widgets.py
