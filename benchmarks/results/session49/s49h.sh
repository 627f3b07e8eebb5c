#!/usr/bin/env bash
# Session 49 run H (H200): the final code (the batch ops' device check; the hook dropping entries
# at every forward): build, CPB and swap CUDA tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runH.txt) 2>&1
fwa_build s49h H
timeout 120 python -m pytest -q -p no:cacheprovider -m cuda tests/test_cpb.py tests/test_swap.py 2>&1 | grep -E "passed|failed|FAILED|ERROR|Error|xpass" | tail -8
echo "done $(( $(date +%s) - t0 )) s"
