#!/usr/bin/env bash
# Session 24 run B: wgmma descriptors from per-CTA bases in the tiled backward (key side, query sides),
# the wg query side by default at Npad 128 too.
# (As run, the N = 100 part used a standalone copy of kernel_breakdown's loop, n100.py, since
# replaced by kernel_breakdown.py --shape: runB-kb.txt shows that copy's output format.) Tests, sanitizers, per-kernel A/B against HEAD (s24a).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s24b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 270 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_dropout.py tests/test_extremes.py 2>&1 | tail -15 > $OUT/tests.txt
SANITIZER_TOOLS="memcheck racecheck" SELECTION_ARGS="--family window" timeout 130 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/san.txt 2>&1
echo san rc $? >> $OUT/tests.txt; tail -4 $OUT/san.txt >> $OUT/tests.txt
for r in 1 2; do for b in s24a s24b; do
  python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
  echo "== round $r build $b"
  timeout 100 python tools/kernel_breakdown.py --configs 1,2,3,4 2>&1 | grep -E "GPU time|config|bwd_kv|bwd_q|preprocess|dsum|fwd|reduce"
  echo "-- N=100 (1024,4,100)"; timeout 60 python tools/kernel_breakdown.py --shape 1024,4,100,32,16,10,v2 2>&1 | grep -E "GPU time|bwd_q|bwd_kv|fwd"
done; done > $OUT/kb.txt 2>&1
cat $OUT/tests.txt
