#!/usr/bin/env bash
# Session 51 run E (H200): run D's build (.devbuild/s51d.so.xz, carried; main's code since), the
# sliding-window CUDA tests that force the warp-specialised kernels on every grid (now PDL
# dependents) and the extremes suite.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runE.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s51d.so.xz flash_window_attn/_C.abi3.so
timeout 330 python -m pytest -q -m cuda tests/test_local_attention.py -k "ws_bwd or ws_fwd_every or mma_sync" 2>&1 | tail -3
echo "ws tests done $(( $(date +%s) - t0 )) s"
timeout 200 python -m pytest -q -m cuda tests/test_local_extremes.py 2>&1 | tail -3
echo "end $(( $(date +%s) - t0 )) s"
