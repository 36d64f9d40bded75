# Developer shortcuts. CI runs .ci/run (a fresh venv, the README's test command, then `make lint`).
.PHONY: build-dev build-prod dist lint test bench default-router mutants mutants-python mutants-rust mutants-bindings

build-dev:      ## editable install with a release extension (debug builds make benchmarks meaningless)
	pip install -e ".[test,dev]" --no-build-isolation

build-prod:     ## a wheel in dist/ for this machine only
	maturin build --release --out dist

# zig links against an old glibc without a manylinux container; maturin finds it on PATH (the ziglang package).
ZIG_DIR = $(shell python -c 'import os, ziglang; print(os.path.dirname(ziglang.__file__))' 2>/dev/null)

dist:           ## release artefacts a package index accepts: abi3 manylinux_2_28 wheel + sdist (needs the dist extra)
	@test -n "$(ZIG_DIR)" || { echo 'make dist needs the dist extra (maturin, ziglang, twine)'; exit 1; }
	rm -rf dist
	PATH="$(ZIG_DIR):$$PATH" maturin build --release --zig --compatibility manylinux_2_28 --out dist
	maturin sdist --out dist
	twine check --strict dist/*

lint:           ## needs the dev extra and the package installed (stubtest imports the compiled extension)
	ruff check python tests experiments scripts benches
	mypy
	python -m mypy.stubtest jeirt_lite._core
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --all-targets --features python -- -D warnings

test:
	python -m pytest -q
	cargo test --release
	@# The bf16 pass's own tests need AVX-512 BF16; they are #[ignore]d so that elsewhere they say "ignored".
	@if grep -qw avx512_bf16 /proc/cpuinfo 2>/dev/null; then cargo test --release -- --ignored; \
	else echo "ignored: the bf16 pass's tests (this CPU has no AVX-512 BF16)"; fi

bench:
	python benches/bench_kernels.py

default-router: ## rebuild the router shipped in the package from data/ (needs the train extra)
	python -m scripts.build_default_router

# Mutation testing (a habit, not CI; docs/research/mutation.md has the scores and what survived). Each mutant
# edits a file in place and runs the tests named here, so run it on a clean tree. Narrow the scope with the variables.
MUTATE ?= python/jeirt_lite/_routing.py
MUTATION_TESTS ?= tests/test_routing_costs.py tests/test_router_hostile.py
# Seconds before a mutant's test run counts as caught: a mutant that makes a loop endless waits this long.
MUTATION_TIMEOUT ?= 600
RUST_MUTATE ?= rust/src/kernels/adjust.rs
BINDINGS_MUTATE ?= rust/src/python/votes.rs
BINDINGS_TESTS ?= tests/test_vote_kernel.py tests/test_vote_short_space.py tests/test_neighbours.py

mutants: mutants-python mutants-rust mutants-bindings

# A fixed Hypothesis seed: a property test that met a real failure midway would save it and replay it against every
# later mutant, counting them all caught. The baseline stops a round whose tests fail on the unmutated code.
mutants-python: ## cosmic-ray (dev extra) on MUTATE with MUTATION_TESTS; the report's last lines are the score
	mkdir -p .mutants
	printf '[cosmic-ray]\nmodule-path = "%s"\ntimeout = %s\nexcluded-modules = []\ntest-command = "python -m pytest -x -q -p no:cacheprovider --hypothesis-seed=0 %s"\n\n[cosmic-ray.distributor]\nname = "local"\n' \
		"$(MUTATE)" "$(MUTATION_TIMEOUT)" "$(MUTATION_TESTS)" > .mutants/cosmic-ray.toml
	cosmic-ray init .mutants/cosmic-ray.toml .mutants/session.sqlite --force
	cosmic-ray baseline .mutants/cosmic-ray.toml
	cosmic-ray exec .mutants/cosmic-ray.toml .mutants/session.sqlite
	cr-report .mutants/session.sqlite --show-pending | tail -n 3

# The bf16 pass's #[ignore]d tests run too where the CPU has AVX-512 BF16 (as in `make test`); elsewhere its mutants
# are reached by no test.
BF16_TESTS = $(shell grep -qw avx512_bf16 /proc/cpuinfo 2>/dev/null && echo -- -- --include-ignored)

mutants-rust:  ## cargo-mutants (cargo install cargo-mutants) on RUST_MUTATE with the pure-Rust tests
	cargo mutants --file $(RUST_MUTATE) --cargo-arg=--release $(BF16_TESTS)

# The PyO3 bindings, which cargo's tests do not build: each mutant is built as the extension in a copy of the crate
# and tested by pytest (scripts/mutate_bindings.py). A binding returning arrays gets up to some 2,900 replacements of
# its value, built from constructors its types lack (`PyResult::new`, `Bound::new`): the first ten of each are tried.
mutants-bindings:  ## cargo-mutants' mutants of BINDINGS_MUTATE against the Python tests BINDINGS_TESTS
	python -m scripts.mutate_bindings --file $(BINDINGS_MUTATE) --tests "$(BINDINGS_TESTS)" --per-function 10
