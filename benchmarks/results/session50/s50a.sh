#!/usr/bin/env bash
# Session 50 run A (H200): the swin_cpb glue refactor (cpb_per_layer, shared backward checks and
# buffers): build, CPB / swap / modules CUDA tests; the batched CPB ops against the per-layer op at
# the two models' layer lists (cpb_batch_graph.py).
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runA.txt) 2>&1
fwa_build s50a A
timeout 200 python -m pytest -q -p no:cacheprovider -m cuda tests/test_cpb.py tests/test_swap.py tests/test_modules.py 2>&1 | grep -E "passed|failed|FAILED|ERROR|Error|xpass" | tail -8
echo "tests $(( $(date +%s) - t0 )) s"
timeout 150 python benchmarks/results/session50/cpb_batch_graph.py 2>&1 | grep -v -i warn
echo "done $(( $(date +%s) - t0 )) s"
