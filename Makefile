# Set-up and entry points. `make demo` and `make test` each do all set-up on a fresh machine (README).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: demo test wheel install venv clean

# Build the extension into wheelhouse/, install it, and convert a bundled photograph.
demo: install
	mkdir -p build
	$(PY) -m img2gray samples/chelsea.png build/chelsea-gray.png

# Run the test suite (CPU; CUDA tests skip without a GPU).
test: install
	$(PY) -m pytest

# pip wheel (CUDA sources compiled with nvcc when torch and the toolkit have CUDA) + auditwheel repair.
wheel: venv
	mkdir -p build
	$(PY) -m tools.build_wheel --out wheelhouse > build/.wheel-path

install: wheel
	$(PIP) install --no-deps --force-reinstall "$$(cat build/.wheel-path)"

venv: $(VENV)/.installed

$(VENV)/.installed: requirements/dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install -r requirements/dev.txt
	mkdir -p build
	touch $@

clean:
	rm -rf build build-cmake wheelhouse/*.whl
