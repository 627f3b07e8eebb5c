#!/usr/bin/env bash
# Session 63 run E (H200): (1) how many 1-4-CTA clusters of window-forward-shaped CTAs (512
# threads, 200-227 KB) fit at once (tools/proto/cluster_occupancy.cu: the SMs a cluster launch
# would leave idle); (2) main's kernels (run A's base build, carried; nothing in csrc/ changed
# since) for the determinism checklist item: the repeatability tests and session 59's stress.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runE.txt) 2>&1
source benchmarks/results/device_steps.sh
nvcc -O2 -std=c++17 -arch=sm_90a -o /tmp/cluster_occupancy tools/proto/cluster_occupancy.cu && /tmp/cluster_occupancy
fwa_unpack .devbuild/s63base.so.xz flash_window_attn/_C.abi3.so
timeout 150 python -m pytest -q -m cuda tests/test_local_attention.py -k "deterministic or residual_d_backward" 2>&1 | tail -2
timeout 150 python -m pytest -q -m cuda tests/test_window_attention.py -k "determinis" 2>&1 | tail -2
echo "tests done $(( $(date +%s) - t0 )) s"
timeout 100 python benchmarks/results/session59/stress.py 1000 other 2>&1 | grep -v -i warn
timeout 100 python benchmarks/results/session59/stress.py 1000 fill 2>&1 | grep -v -i warn
echo "end $(( $(date +%s) - t0 )) s"
