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
step "shipped results match the code's recipes" $BIN/python -m course_utils.runs check
step "unit tests" $BIN/pytest tests --ignore=tests/browser --ignore=tests/lab -q --junitxml=reports/unit.xml
# Every notebook of the book, in full mode: each stored text output must be printed again.
nbval() {  # nbval REPORT [VAR=VALUE ...]: one pass over every notebook with those variables set
  local report="$1"; shift
  env "$@" $BIN/pytest --nbval book/intro.ipynb chapters --nbval-sanitize-with tests/nbval_sanitize.cfg -q \
    --junitxml="reports/$report.xml"
}
step "nbval, pass 1 (this machine's numerics)" nbval nbval
# Pass 2 proves that the stored text does not depend on the machine: PyTorch's plain C++
# kernels instead of its AVX2/AVX-512 ones, and one thread instead of several, change the
# low-order bits of float results (book/setup.md says what was measured).
step "nbval, pass 2 (ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1)" \
  nbval nbval_portable ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1
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
