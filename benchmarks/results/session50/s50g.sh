#!/usr/bin/env bash
# Session 50 run G (H200): the review's mend (one MaxH mapping and one MLP-backward warp count for
# the one-layer and batched launchers; the kernels' PTX is unchanged): build, CPB / swap CUDA tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runG.txt) 2>&1
fwa_build s50g G
timeout 150 python -m pytest -q -p no:cacheprovider -m cuda tests/test_cpb.py tests/test_swap.py 2>&1 | grep -E "passed|failed|FAILED|ERROR|Error|xpass" | tail -8
timeout 60 python benchmarks/results/session50/cpb_batch_graph.py 2>&1 | grep -v -i warn | grep -v "^    "
echo "done $(( $(date +%s) - t0 )) s"
