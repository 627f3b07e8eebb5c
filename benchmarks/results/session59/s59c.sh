#!/usr/bin/env bash
# Session 59 run C: main's working tree (the norm16 glue; the residual-D query side unchanged,
# reading D without waiting) built, then test_local_attention.py's CUDA tests in full.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runC.txt) 2>&1
source benchmarks/results/device_steps.sh
git status --short | head -5
fwa_build s59c C
left=$(( 590 - ($(date +%s) - t0) ))
timeout $left python -m pytest -q -m cuda tests/test_local_attention.py --durations=12 > $OUT/runC-tests.txt 2>&1
echo "tests rc $?"
grep -E "passed|failed|FAILED|Error" $OUT/runC-tests.txt | tail -8
grep -A14 "slowest" $OUT/runC-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
