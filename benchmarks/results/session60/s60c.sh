#!/usr/bin/env bash
# Session 60 run C (H200): main's build (s60c, carried; 1c418a3 differs from it in comments only):
# win(256,256) GPU time under the forward's warpgroup switches now that the copies are cheap;
# the repeatability stress with other kernels between calls (stress.py `other`); the whole
# test_local_attention.py CUDA suite; lifecycle + extremes suites.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runC.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s60c.so.xz flash_window_attn/_C.abi3.so
G=benchmarks/results/session45/local_graph_ab.py
timeout 60 python $G default 1 2>&1 | grep -v -i warn
FWA_LOCAL_WG=2 timeout 60 python $G wg=2 1 2>&1 | grep -v -i warn
FWA_LOCAL_WG=3 timeout 60 python $G wg=3 1 2>&1 | grep -v -i warn
echo "switches done $(( $(date +%s) - t0 )) s"
timeout 75 python benchmarks/results/session59/stress.py 1000 other 2>&1 | grep -v -i warn
echo "stress done $(( $(date +%s) - t0 )) s"
timeout 360 python -m pytest -q -m cuda tests/test_local_attention.py > $OUT/runC-tests.txt 2>&1
tail -3 $OUT/runC-tests.txt
timeout 100 python -m pytest -q -m cuda tests/test_local_lifecycle.py tests/test_local_extremes.py 2>&1 | tail -1
echo "end $(( $(date +%s) - t0 )) s"
