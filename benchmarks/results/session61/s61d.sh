#!/usr/bin/env bash
# Session 61 run D (H200): the final build (s61b, carried; later commits change comments only):
# the rest of test_local_attention.py's CUDA tests (run B ran the grid / scale-sign /
# determinism ones), the random-problem, lifecycle and extremes suites, and the repeatability
# stress with other kernels between calls (session59/stress.py `other`).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runD.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s61b.so.xz flash_window_attn/_C.abi3.so
timeout 280 python -m pytest -q -m cuda tests/test_local_attention.py -k "not (grid_cuda or scale_sign or deterministic)" > $OUT/runD-tests.txt 2>&1
tail -2 $OUT/runD-tests.txt
echo "suite rest done $(( $(date +%s) - t0 )) s"
timeout 60 python -m pytest -q -m cuda tests/test_local_random.py 2>&1 | tail -1
timeout 110 python -m pytest -q -m cuda tests/test_local_lifecycle.py tests/test_local_extremes.py 2>&1 | tail -1
echo "suites done $(( $(date +%s) - t0 )) s"
timeout 80 python benchmarks/results/session59/stress.py 1000 other 2>&1 | grep -v -i warn
echo "end $(( $(date +%s) - t0 )) s"
