#!/usr/bin/env bash
# Every check of the course: `make test` runs this. The steps (ruff, unit tests, both nbval
# passes, the strict build, the browser and JupyterLab checks) run two at a time; see
# scripts/test_all.py for the plan, and the tables it prints at the end for where the time went.
set -uo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python scripts/test_all.py "$@"
