# Two commands matter: `make run` (serve on embedded SQLite) and `make test` (the whole suite).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TEST_WORKERS ?= auto
STAMP := $(VENV)/.installed

.PHONY: setup run test lint format bench image image-test clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: ## create or refresh .venv
	rm -f $(STAMP)
	$(MAKE) $(STAMP)

run: $(STAMP) ## migrate, bootstrap a sandbox platform on first start, serve on 127.0.0.1:8000
	$(BIN)/platpay serve

test: $(STAMP) ## the whole suite (SQLite always; PostgreSQL too when PLATPAY_TEST_DATABASE_URL is set)
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: $(STAMP) ## ruff, then mypy over platpay/ and bench/ ([tool.mypy] in pyproject.toml); CI runs it before the suite
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP) ## benchmarks, figures only (bench/README.md); HTTP_ARGS / JOBS_ARGS pass options through
	bench/run_all.sh

image: $(STAMP) ## the container image localhost/platpay:VERSION from the wheel, with podman (docs/operations.md, Container image)
	tools/image/build.sh

image-test: image ## run the image: /readyz, one payment, HEALTHCHECK, read-only root, a SIGTERM drain (~1 min)
	PLATPAY_TEST_IMAGE=1 $(BIN)/pytest -q -n 0 -p no:randomly -s tests/install/test_image.py

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache build
