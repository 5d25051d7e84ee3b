#!/usr/bin/env bash
# Every check of the course, in order; each step runs even if an earlier one failed, then a
# summary is printed and the script fails if any step failed. Called by `make test`.
set -uo pipefail
BIN=.venv/bin
mkdir -p reports
rm -f reports/*.xml reports/*.log
failed=()

step() {  # step NAME COMMAND...
  local name="$1"; shift
  echo
  echo "=== $name ==="
  "$@" || failed+=("$name")
}

step "ruff (code and notebooks)" $BIN/ruff check .
step "unit tests" $BIN/pytest tests --ignore=tests/browser --ignore=tests/lab -q --junitxml=reports/unit.xml
step "nbval (every chapter notebook, full mode)" \
  $BIN/pytest --nbval chapters --nbval-sanitize-with tests/nbval_sanitize.cfg -q --junitxml=reports/nbval.xml
build() {
  rm -rf _build/html _build/.doctrees
  $BIN/jupyter-book build . -W --keep-going 2>&1 | tee reports/build.log
}
step "strict book build (-W --keep-going)" build
step "browser check (headless Chromium)" bash -c \
  "bash scripts/ensure_chromium.sh && $BIN/pytest tests/browser -q --junitxml=reports/browser.xml"
step "JupyterLab check (live controls, a student copy; headless Chromium)" bash -c \
  "bash scripts/ensure_chromium.sh && $BIN/pytest tests/lab -q --junitxml=reports/lab.xml"

$BIN/python scripts/test_summary.py "${failed[@]}"
