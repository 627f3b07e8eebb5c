#!/usr/bin/env bash
# Session 25 run E: the wg query side at Npad 192 (N = 129..192) on its 256-key form, warpgroup 1's
# second sub-block skipped (s25e: the new default; FWA_WINDOW_BWD_Q_WG=128 restores session 24's
# kWgmma query-side kernel there). Window / dropout / extremes CUDA suites, sanitizers, then A/B.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s25e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
S="--shape 512,4,144,32,16,12,v2 --shape 1024,4,144,32,16,12,v2 --shape 256,8,144,32,4,12,v2 --shape 512,4,169,32,16,13,v2 --shape 512,4,256,32,16,16,v2"
for r in 1 2; do for m in 128 1; do
  echo "== round $r FWA_WINDOW_BWD_Q_WG=$m"
  FWA_WINDOW_BWD_Q_WG=$m timeout 80 python tools/kernel_breakdown.py $S 2>&1 | grep -E "GPU time|bwd_q"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
timeout 280 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_dropout.py tests/test_extremes.py 2>&1 | tail -6 > $OUT/tests.txt
SANITIZER_TOOLS="memcheck racecheck" SELECTION_ARGS="--family window" timeout 150 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/san.txt 2>&1
echo san rc $? >> $OUT/tests.txt; tail -4 $OUT/san.txt >> $OUT/tests.txt
cat $OUT/tests.txt
