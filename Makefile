# Set-up and entry points. `make demo` and `make test` each do all set-up on a fresh machine (README).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: demo test lint wheel install venv clean

# Build the extension into wheelhouse/, install it, and convert a bundled photograph.
demo: install
	mkdir -p dist
	$(PY) -m img2gray samples/chelsea.png dist/chelsea-gray.png

# Lint, then run the test suite (CPU; CUDA tests skip without a GPU) against the installed stable-ABI build, then the op
# tests again against the classic build of the same sources (unpacked into dist/site-classic, first on sys.path).
test: install lint
	$(PY) -m pytest
	$(PY) -m pytest --img2gray-site dist/site-classic tests/test_ops.py tests/test_ops_cuda.py

# Static checks (configured in pyproject.toml): ruff over the Python tree, mypy --strict over tools/ and the op package,
# shellcheck over the benchmark scripts the device runs.
lint: venv
	$(VENV)/bin/ruff check tools tests benchmarks python
	$(VENV)/bin/mypy
	$(VENV)/bin/shellcheck -x benchmarks/*.sh

# pip wheel (CUDA sources compiled with nvcc when torch and the toolkit have CUDA) + auditwheel repair, once per
# ABI: stable (img2gray-cu130 0.1.0, every torch >= 2.10; the default) and classic (0.1.0+torch2.14).
wheel: venv
	mkdir -p dist
	$(PY) -m tools.cli.build_wheel --abi stable --out wheelhouse > dist/.wheel-path
	$(PY) -m tools.cli.build_wheel --abi classic --out wheelhouse > dist/.classic-wheel-path

install: wheel
	$(PIP) install --no-deps --force-reinstall "$$(cat dist/.wheel-path)"
	rm -rf dist/site-classic
	$(PIP) install --no-deps --target dist/site-classic "$$(cat dist/.classic-wheel-path)"

venv: $(VENV)/.installed

$(VENV)/.installed: requirements/dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install -r requirements/dev.txt
	mkdir -p dist
	touch $@

clean:
	rm -rf build build-cmake dist wheelhouse/*.whl
