#!/usr/bin/env bash
# Session 25 run G: the wg query side at Npad > 256 in key ranges of 256 keys (one CTA per range,
# fp32 dq parts summed in range order by window_attn_bwd_dq_reduce_kernel; s25f default,
# FWA_WINDOW_BWD_Q_WG=192 keeps the kWgmma query-side kernel there), now with the dq parts capped at
# 128 MiB (launches over batches of chunks). A/B first, then the window / dropout / extremes CUDA
# suites (with the new key-range test) and the window-family sanitizers.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s25g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
S="--shape 128,6,576,32,4,24,v2 --shape 32,4,1024,32,4,32,v2 --shape 256,4,400,32,4,20,v2 --shape 512,4,144,32,16,12,v2"
for r in 1; do for m in 192 1; do
  echo "== round $r FWA_WINDOW_BWD_Q_WG=$m"
  FWA_WINDOW_BWD_Q_WG=$m timeout 80 python tools/kernel_breakdown.py $S 2>&1 | grep -E "GPU time|bwd_q|reduce"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
timeout 150 python benchmarks/bench_window_attention.py --configs 3,4 --out $OUT/nvidia-h100-80gb-hbm3-session25-qwg.json > $OUT/bench_window.log 2>&1
echo bench rc $?; tail -12 $OUT/bench_window.log
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_dropout.py tests/test_extremes.py 2>&1 | tail -8 > $OUT/tests.txt
SANITIZER_TOOLS="memcheck racecheck" SELECTION_ARGS="--family window" timeout 95 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/san.txt 2>&1
echo san rc $? >> $OUT/tests.txt; tail -4 $OUT/san.txt >> $OUT/tests.txt
cat $OUT/tests.txt
