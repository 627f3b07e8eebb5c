#!/usr/bin/env bash
# Session 30 run D: the streaming wgmma forward for 256 < N <= 576 (fwd_wgmma_stream_kernel.cuh,
# s30f = main + it). Forward kernel time new vs FWA_WINDOW_WGMMA_STREAM=0 (the mma.sync forward),
# then CUDA suites (3 processes), then bench_window_attention config 4 (N = 576) with every peer.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s30f_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
S="--shape 128,6,576,32,4,24,v2 --shape 256,4,400,32,4,20,v2 --shape 512,3,289,32,4,17,v1"
for r in 1 2; do for m in 1 0; do
  echo "== stream $m round $r"
  FWA_WINDOW_WGMMA_STREAM=$m timeout 60 python tools/kernel_breakdown.py $S --iters 20 2>&1 | grep -E "GPU time|fwd"
  [ $r = 1 ] && FWA_WINDOW_WGMMA_STREAM=$m timeout 60 python tools/kernel_breakdown.py --dtype fp16 --shape 128,6,576,32,4,24,v2 --iters 20 2>&1 | grep -E "GPU time|fwd"
done; done
timeout 290 python -m pytest -q -m cuda tests/test_window_attention.py -x > $OUT/tests_window.txt 2>&1 &
timeout 290 python -m pytest -q -m cuda tests/test_extremes.py tests/test_qkvpacked.py -x > $OUT/tests_extremes.txt 2>&1 &
timeout 290 python -m pytest -q -m cuda tests/test_random_problems.py tests/test_dropout.py tests/test_modules.py -x > $OUT/tests_random.txt 2>&1 &
wait
for f in $OUT/tests_*.txt; do echo "== $f"; tail -n 3 $f; done
timeout 150 python benchmarks/bench_window_attention.py --configs 4 --out $OUT/window-s30f-n576.json > $OUT/window-s30f-n576.log 2>&1
tail -n 25 $OUT/window-s30f-n576.log
