# Set-up and entry points. `make demo` and `make test` each do all set-up on a fresh machine (README).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: demo test test-toolkit test-torch lint wheel install venv clean hub hub-stop FORCE

# Build the extension into wheelhouse/, install it, and convert a bundled photograph.
demo: install
	mkdir -p dist
	$(PY) -m img2gray samples/chelsea.png dist/chelsea-gray.png

# Lint; the toolkit's tests in a venv without torch (test-toolkit, below); in one run on two workers, every other test
# (CPU; CUDA tests skip without a GPU) against the installed stable-ABI build, the toolkit's tests that need torch or
# the op among them (the marker `toolkit` is set by tests/conftest.py; a file's tests share a worker, and so its
# fixtures); then the op tests again against the classic build of the same sources (unpacked into dist/site-classic,
# first on sys.path). Each test runs once, in one of the two venvs. The set-up (the locked venv, both wheels, lint) uses
# about one core, so the toolkit's tests run beside it (make -j2; each target's output printed whole when it ends);
# the toolkit's venv is made first, so that two `pip install -e ./tools` never run at once.
test:
	$(MAKE) --no-print-directory $(TOOLKIT_VENV)/.installed
	$(MAKE) --no-print-directory -j2 --output-sync=target install lint test-toolkit
	$(PY) -m pytest -n 2 --dist loadfile -m "not toolkit or needs_torch or needs_img2gray"
	$(PY) -m pytest --img2gray-site dist/site-classic tests/test_ops.py tests/test_ops_cuda.py

# The toolkit's tests alone (tests/kernelwheel, tests/cli), in a venv of their own without torch or img2gray:
# kernelwheel as `pip install ./tools` gives it (editable, so edits count) plus requirements/test-toolkit.txt, two
# pytest workers. Tests that need torch or the compiled op are left out by marker; `make test` runs them.
TOOLKIT_VENV ?= .venv-toolkit
test-toolkit: $(TOOLKIT_VENV)/.installed
	$(TOOLKIT_VENV)/bin/python -m pytest -n 2 -m "not needs_torch and not needs_img2gray" tests/kernelwheel tests/cli

$(TOOLKIT_VENV)/.installed: requirements/test-toolkit.txt tools/pyproject.toml
	rm -rf $(TOOLKIT_VENV)
	$(PYTHON) -m venv $(TOOLKIT_VENV)
	$(TOOLKIT_VENV)/bin/pip install -q --upgrade pip
	$(TOOLKIT_VENV)/bin/pip install -q -e ./tools -r requirements/test-toolkit.txt
	! $(TOOLKIT_VENV)/bin/python -c 'import torch' 2>/dev/null  # the venv proves the toolkit needs no torch
	touch $@

# The stable wheel's op tests under another torch, in a venv of its own: by default torch 2.15.0 from PyPI (a CUDA
# 13.2 build; CPU tests run anywhere). PIP_CONSTRAINT=/dev/null lifts a pip configuration that caps torch, for this
# install only. The upstream canary runs it with TORCH_SPEC=torch (the newest) from PyTorch's CPU index.
TORCH_SPEC ?= torch==2.15.0
TORCH_PIP_ARGS ?=
TORCH_VENV ?= .venv-torch-check
test-torch: wheel
	rm -rf $(TORCH_VENV)
	$(PYTHON) -m venv $(TORCH_VENV)
	PIP_CONSTRAINT=/dev/null $(TORCH_VENV)/bin/pip install -q $(TORCH_PIP_ARGS) "$(TORCH_SPEC)"
	$(TORCH_VENV)/bin/pip install -q numpy pillow pytest expecttest hypothesis packaging pyelftools
	$(TORCH_VENV)/bin/pip install -q --no-deps "$$(cat dist/.wheel-path)"
	$(TORCH_VENV)/bin/python -c 'import torch; print("torch", torch.__version__)'
	$(TORCH_VENV)/bin/python -m pytest tests/test_ops.py

# A Hub on 127.0.0.1 to try the workflow against (docs/walkthrough.md): olah from PyPI in .venv-olah (the venv the
# tests use), offline, serving the git repositories under HUB_DIR; HUB_REPO is created as an empty bare repository for
# `tools.cli.publish --git-remote`. Prints `export HF_ENDPOINT=...`: `eval "$$(make -s hub)"` sets it. `make hub-stop`
# ends it.
OLAH_VENV ?= .venv-olah
OLAH_SPEC ?= olah==0.5.4
HUB_DIR ?= dist/hub
HUB_PORT ?= 8090
HUB_REPO ?= demo/img2gray
hub: venv $(OLAH_VENV)/.requirements
	$(PY) -m tools.cli.loopback_hub start --dir "$(HUB_DIR)" --port $(HUB_PORT) --olah $(OLAH_VENV)/bin/olah-cli \
		--repo $(HUB_REPO)

hub-stop: venv
	$(PY) -m tools.cli.loopback_hub stop --dir "$(HUB_DIR)"

# The marker holds the requirement as tests/helpers/venvs.py writes it, so the tests and `make hub` share the venv.
$(OLAH_VENV)/.requirements:
	rm -rf $(OLAH_VENV)
	$(PYTHON) -m venv $(OLAH_VENV) >&2
	$(OLAH_VENV)/bin/python -m pip install -q "$(OLAH_SPEC)" >&2
	printf '%s' "$(OLAH_SPEC)" > $@

# Static checks (configured in pyproject.toml): ruff over the Python tree, mypy --strict over tools/ (kernelwheel as
# the package it is installed as) and the op package, shellcheck over the benchmark scripts the device runs.
lint: venv
	$(VENV)/bin/ruff check tools tests benchmarks python
	$(VENV)/bin/mypy
	$(VENV)/bin/shellcheck -x benchmarks/*.sh

# pip wheel (CUDA sources compiled with nvcc when torch and the toolkit have CUDA) + auditwheel repair, once per
# ABI: stable (img2gray-cu130 0.1.0, every torch >= 2.10; the default) and classic (0.1.0+torch2.14). Each build is
# made again only when one of its inputs changed (or its wheel is gone): `make demo` then `make test` builds once. The
# path file is written after the build succeeded, so a failed build leaves none and is retried.
# VARIANT_WHEELS=1 (experimental) also writes each wheel's variant wheel beside it (docs/gpu-targets.md).
WHEEL_INPUTS := $(VENV)/.installed CMakeLists.txt build.toml pyproject.toml \
	$(shell find csrc python/img2gray cmake tools/build -type f ! -name '*.pyc' 2>/dev/null)
unless_built = $(if $(wildcard $(shell cat $(1) 2>/dev/null)),,FORCE)
wheel: dist/.wheel-path dist/.classic-wheel-path
	$(if $(VARIANT_WHEELS),$(PY) -m tools.cli.build_wheel --variant-wheel-of "$$(cat dist/.wheel-path)" \
		"$$(cat dist/.classic-wheel-path)")

dist/.wheel-path: $(WHEEL_INPUTS) $(call unless_built,dist/.wheel-path)
	mkdir -p dist
	$(PY) -m tools.cli.build_wheel --abi stable --out wheelhouse > $@.tmp
	mv $@.tmp $@

dist/.classic-wheel-path: $(WHEEL_INPUTS) $(call unless_built,dist/.classic-wheel-path)
	mkdir -p dist
	$(PY) -m tools.cli.build_wheel --abi classic --out wheelhouse > $@.tmp
	mv $@.tmp $@

FORCE:

install: wheel
	$(PIP) install --no-deps --force-reinstall "$$(cat dist/.wheel-path)"
	rm -rf dist/site-classic
	$(PIP) install --no-deps --target dist/site-classic "$$(cat dist/.classic-wheel-path)"

venv: $(VENV)/.installed

# Set-up output goes to stderr: `eval "$$(make -s hub)"` reads the one line `make hub` prints on stdout.
# The toolkit (tools/kernelwheel) is installed editable: its distribution is tools/pyproject.toml.
$(VENV)/.installed: requirements/*.txt requirements/*.lock tools/pyproject.toml
	$(PYTHON) -m venv $(VENV) >&2
	$(PIP) install --upgrade pip >&2
	$(PIP) install --require-hashes -r requirements/build.lock -r requirements/torch.lock >&2
	$(PIP) install -r requirements/dev.txt >&2
	$(PIP) install -e ./tools >&2
	mkdir -p dist
	touch $@

# The locked build environment (docs/building.md, "Reproducing a wheel"): requirements/build.lock and torch.lock from
# the ranges in requirements/build.txt and torch.txt, every package at one version with the sha256 of its files on
# PyPI, for the build's CPython 3.11 on manylinux_2_28 x86_64. Commit both; `make venv` installs them with hashes.
# UPGRADE=--upgrade moves every package to the newest its range allows (else only what a changed range needs).
.PHONY: lock
UV ?= $(VENV)/bin/uv
UPGRADE ?=
LOCK_COMPILE = $(UV) pip compile --quiet --no-config $(UPGRADE) --generate-hashes --python-version 3.11 \
	--python-platform x86_64-manylinux_2_28 --index-url https://pypi.org/simple --custom-compile-command "make lock"
lock:
	$(LOCK_COMPILE) --output-file requirements/build.lock requirements/build.txt
	$(LOCK_COMPILE) --constraint requirements/build.lock --output-file requirements/torch.lock requirements/torch.txt

clean:
	rm -rf build build-cmake dist tools/dist wheelhouse/*.whl
