#!/usr/bin/env bash
# The GPU check (see scripts/gpu_check.py): FlashTree against its reference, a training step of the 0.1B / 0.9B
# configurations and the ZEH Tables 7-8 timings, in at most 8 minutes on one H200.
#   bash scripts/gpu_check.sh                         # on a GPU: writes figures/zeh_tab7_8_speed/gpu/<machine>/
#   bash scripts/gpu_check.sh --dry-run --out DIR     # the CPU rehearsal (tiny shapes, Triton's interpreter)
# PYTHON chooses the interpreter (default: the repository's .venv, else python3).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
for a in "$@"; do
  # the interpreter must be on before triton is first imported
  if [ "$a" = "--dry-run" ]; then export TRITON_INTERPRET=1; fi
done
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" NUMCOOK_PROGRESS="${NUMCOOK_PROGRESS:-0}"
exec "$PY" "$ROOT/scripts/gpu_check.py" "$@"
