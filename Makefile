# Two commands do everything on a fresh machine (Python 3.11 and make):
#   make book   - set up .venv, install the pinned stack, build the HTML book into _build/html
#   make test   - same set-up, then ruff, unit tests, nbval, strict build and the browser check
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MATHJAX_VERSION := 3.2.2
MATHJAX := .vendor/static/vendor/mathjax/tex-chtml.js
NB ?= chapters/*.ipynb

.PHONY: book test check lab student reset solution execute setup vendor clean bench pdf

## set-up: create the virtual environment if missing and install exactly requirements.txt
setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

## MathJax is served from the site itself: fetched from the npm registry, never committed
vendor: $(MATHJAX)

$(MATHJAX):
	bash scripts/fetch_mathjax.sh $(MATHJAX_VERSION) .vendor

book: $(STAMP) $(MATHJAX)
	$(BIN)/jupyter-book build . -W --keep-going
	@echo
	@echo "Book built. Open this file in a browser:"
	@echo "  file://$(CURDIR)/_build/html/index.html"

test: $(STAMP) $(MATHJAX)
	bash scripts/test_all.sh

## the quick edit loop: ruff, the type check, the freshness check and the unit tests (no notebooks)
check: $(STAMP)
	$(BIN)/python scripts/test_all.py --only ruff,mypy,fresh,unit

## the whole book as one PDF (_build/pdf/book.pdf), printed offline by the browser check's Chromium
pdf: book
	bash scripts/ensure_chromium.sh
	$(BIN)/python scripts/book_pdf.py

## the student workspace: copies with the solutions blanked out (made if missing, never overwritten);
## as root (containers, many cloud machines) JupyterLab needs --allow-root, passed only then
lab: $(STAMP)
	$(BIN)/python -m course_utils.student --workspace --out student
	@if [ "$$(id -u)" = 0 ]; then \
		echo "Running as root (a container or cloud machine?): starting JupyterLab with --allow-root"; \
		COURSE_EXPLORERS=live $(BIN)/jupyter lab student/ --allow-root; \
	else \
		COURSE_EXPLORERS=live $(BIN)/jupyter lab student/; \
	fi

student: $(STAMP)
	$(BIN)/python -m course_utils.student chapters/*.ipynb --out student

## a fresh student copy of one chapter, after asking: make reset NB=01 (FORCE=1: without asking)
reset: $(STAMP)
	@test "$(NB)" != "chapters/*.ipynb" || { echo "say which chapter: make reset NB=01"; exit 2; }
	$(BIN)/python -m course_utils.student --reset $(NB) --out student $(if $(FORCE),--force)

## the reference solution of one exercise, once you have tried it: make solution EX=1.2
solution: $(STAMP)
	@test -n "$(EX)" || { echo "say which exercise: make solution EX=1.2"; exit 2; }
	@$(BIN)/python -m course_utils.student --solution $(EX)

execute: $(STAMP)
	$(BIN)/python scripts/execute_notebooks.py $(NB)

bench: $(STAMP)
	$(BIN)/python benchmarks/reversal.py --reference

clean:
	rm -rf _build reports student
