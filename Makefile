# Developer shortcuts. CI runs .ci/run (a fresh venv, the README's test command, then `make lint`).
.PHONY: build-dev build-prod lint test bench default-router

build-dev:      ## editable install with a release extension (debug builds make benchmarks meaningless)
	pip install -e ".[test,dev]" --no-build-isolation

build-prod:     ## a wheel in dist/
	maturin build --release --out dist

lint:           ## needs the dev extra and the package installed (stubtest imports the compiled extension)
	ruff check python tests training benches
	mypy
	python -m mypy.stubtest jeirt_lite._core
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --all-targets --features python -- -D warnings

test:
	python -m pytest -q
	cargo test --release

bench:
	python benches/bench_kernels.py

default-router: ## rebuild the router shipped in the package from data/ (needs the train extra)
	python -m training.build_default_router
