#!/usr/bin/env bash
# Session 50 run F (H200): run E's build (the code since differs in comments only), the CPB CUDA
# tests with the two new cases (18 layers of one head-count class; a saved tensor on another device).
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runF.txt) 2>&1
fwa_unpack .devbuild/s50e.so.xz flash_window_attn/_C.abi3.so
timeout 150 python -m pytest -q -p no:cacheprovider -m cuda tests/test_cpb.py 2>&1 | grep -E "passed|failed|FAILED|ERROR|Error|xpass" | tail -8
echo "done $(( $(date +%s) - t0 )) s"
