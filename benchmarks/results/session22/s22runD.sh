#!/usr/bin/env bash
# session 22 run D: final build (grouped tile-major + small backward at 3 CTAs): window CUDA tests, window sanitizers, window bench N <= 64 rows
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/fin_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 200 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_dropout.py tests/test_extremes.py 2>&1 | tail -2 | tee -a $OUT/summary.txt
SANITIZER_TOOLS="memcheck racecheck" SELECTION_ARGS="--family window" timeout 150 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/san.txt 2>&1
echo san rc $? | tee -a $OUT/summary.txt; tail -3 $OUT/san.txt | tee -a $OUT/summary.txt
timeout 220 python benchmarks/bench_window_attention.py --configs 0,5,7,6 --out $OUT/nvidia-h100-80gb-hbm3-session22-small.json > $OUT/bench_window.log 2>&1
echo bench rc $? | tee -a $OUT/summary.txt; tail -30 $OUT/bench_window.log | tee -a $OUT/summary.txt
