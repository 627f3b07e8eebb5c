#!/usr/bin/env bash
# Session 62 run E (H200): main's kernels (s61b, carried; nothing in csrc/ changed since) for the
# determinism checklist item: the repeatability tests and session 59's stress with other kernels
# and with freed-memory refills between the calls.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runE.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s61b.so.xz flash_window_attn/_C.abi3.so
timeout 150 python -m pytest -q -m cuda tests/test_local_attention.py -k "deterministic or residual_d_backward" 2>&1 | tail -2
echo "tests done $(( $(date +%s) - t0 )) s"
timeout 100 python benchmarks/results/session59/stress.py 1000 other 2>&1 | grep -v -i warn
timeout 100 python benchmarks/results/session59/stress.py 1000 fill 2>&1 | grep -v -i warn
echo "end $(( $(date +%s) - t0 )) s"
