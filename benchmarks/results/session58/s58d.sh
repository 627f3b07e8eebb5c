#!/usr/bin/env bash
# Session 58 run D: run B's build (s58b): determinism.py (which stage is not repeatable), then the
# residual-D backward test three times.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runD.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s58b.so.xz flash_window_attn/_C.abi3.so
timeout 80 python benchmarks/results/session58/determinism.py 150 2>&1 | grep -v -i warn
echo "determinism done $(( $(date +%s) - t0 )) s"
for r in 1 2 3; do timeout 40 python -m pytest -q -m cuda tests/test_local_attention.py -k "residual_d_backward" 2>&1 | tail -1; done
echo "end $(( $(date +%s) - t0 )) s"
