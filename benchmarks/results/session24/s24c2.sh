#!/usr/bin/env bash
# Session 24 run C2 (build s24e = s24d + the fma exponents only while |max| < 2^24): local CUDA tests and sanitizers, window tests subset, per-kernel A/B s24b -> s24e (2 rounds).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s24e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 170 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py 2>&1 | tail -3 > $OUT/tests.txt
timeout 60 python -m pytest -q -m cuda tests/test_window_attention.py -k "d32 or tiled" 2>&1 | tail -2 >> $OUT/tests.txt
cat $OUT/tests.txt
SANITIZER_TOOLS="memcheck racecheck" SELECTION_ARGS="--family local" timeout 150 bash tests/gpu/run_sanitizers.sh $OUT/sanl > $OUT/sanl.txt 2>&1
echo sanl rc $? > $OUT/kb.txt; cat $OUT/tests.txt >> $OUT/kb.txt; tail -3 $OUT/sanl.txt >> $OUT/kb.txt
for r in 1 2; do for b in s24b s24e; do
  python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
  echo "== round $r build $b"
  timeout 60 python tools/kernel_breakdown.py --configs 1,2,3 2>&1 | grep -E "GPU time|bwd_kv|bwd_q|fwd"
  timeout 80 python tools/local_breakdown.py --configs 0,4 --impls ours 2>&1 | grep -vE "^\s*$|Warning|warn"
done; done >> $OUT/kb.txt 2>&1
cat $OUT/kb.txt
