#!/usr/bin/env bash
# Session 50 run B (H200): the batched CPB backward with every layer's dtable first and the MLP
# backward grouped by MaxH (8 / 16 at 3 / 2 CTAs per SM): build, CPB / swap CUDA tests, the
# batched ops against the per-layer op (cpb_batch_graph.py, also in run A with main's kernels).
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runB.txt) 2>&1
fwa_build s50b B
timeout 150 python -m pytest -q -p no:cacheprovider -m cuda tests/test_cpb.py tests/test_swap.py 2>&1 | grep -E "passed|failed|FAILED|ERROR|Error|xpass" | tail -8
echo "tests $(( $(date +%s) - t0 )) s"
timeout 150 python benchmarks/results/session50/cpb_batch_graph.py 2>&1 | grep -v -i warn
echo "done $(( $(date +%s) - t0 )) s"
