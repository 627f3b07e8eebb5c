#!/usr/bin/env bash
# Session 23 run C: default query-side choice (wg kernel at Npad 256 only), ncu of the N = 256 backward
# kernels, the window benchmark's N > 64 rows.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s23c_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 150 python -m pytest -q -x tests/test_window_attention.py -k "tiled_backward_d32_forms" 2>&1 | tail -3 | tee $OUT/summary.txt
timeout 150 ncu -k regex:"bwd_kv|bwd_q" -c 2 --set full python tools/device/s20fb.py 1024 6 256 16 > $OUT/ncu.txt 2>&1
echo ncu rc $? | tee -a $OUT/summary.txt
timeout 280 python benchmarks/bench_window_attention.py --configs 1,2,3,4 --out $OUT/nvidia-h100-80gb-hbm3-session23-large.json > $OUT/bench_window.log 2>&1
echo bench rc $? | tee -a $OUT/summary.txt; tail -30 $OUT/bench_window.log | tee -a $OUT/summary.txt
