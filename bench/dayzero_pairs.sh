#!/bin/sh
# Day-zero rounds of this tree beside older code, interleaved: new r1, old r1, new r2, old r2, each
# continuing its own memory; each round traced (dayzero_bench.py --trace). Old code: OLD=<a
# `git archive <commit> pipeline schemas` extraction>/pipeline. BUDGET (30), TAG (a) name the run.
# HOG=1: each round beside a CPU hog (python -c 'while 1: pass' at this script's niceness), killed after.
cd "$(dirname "$0")/.." || exit 1
B="bench/dayzero_bench.py --sessions 20000 --budget ${BUDGET:-30} --rounds 1 --workers 1 --keep --no-reference --trace"
OLD=${OLD:-/tmp/old-h15c/pipeline}
T=${TAG:-a}
HOGPID=""
if [ -n "$HOG" ]; then python3 -c 'while 1: pass' & HOGPID=$!; fi
for r in ${ROUNDS:-1 2}; do
  R=""; [ "$r" = 2 ] && R=--resume
  echo "== round $r new $(uptime)"
  .venv/bin/python $B --tag "new$T" $R
  echo "== round $r old $(uptime)"
  PYTHONPATH=$OLD .venv/bin/python $B --tag "old$T" $R
done
[ -n "$HOGPID" ] && kill "$HOGPID"
echo "== end $(uptime)"
