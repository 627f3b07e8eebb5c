#!/usr/bin/env bash
# Session 26 run G: the warp-specialised forward generalised to d = 128 (64-key steps, two 64-column
# TMA boxes per tile): bitwise, kernel times against FWA_LOCAL_FWD_WS=0 on the d = 128 configs (and
# d = 64 again), local suites, local sanitizers with the kernel forced on every grid.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s26g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
FWA_LOCAL_FWD_WS=0 python tools/local_bitwise.py save /tmp/ref0.pt > $OUT/bitwise.txt 2>&1
echo "== FWA_LOCAL_FWD_WS=1 vs 0" >> $OUT/bitwise.txt
FWA_LOCAL_FWD_WS=1 timeout 120 python tools/local_bitwise.py cmp /tmp/ref0.pt >> $OUT/bitwise.txt 2>&1; echo "rc $?" >> $OUT/bitwise.txt
grep -v saved $OUT/bitwise.txt
for r in 1 2; do for e in "FWA_LOCAL_FWD_WS=0" "X=1"; do
  echo "== round $r $e"
  env $e timeout 150 python tools/local_breakdown.py --configs 2,3,1,4,0 --impls ours 2>&1 | grep -E "==|fwd"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
timeout 200 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py 2>&1 | tail -3 > $OUT/tests.txt
cat $OUT/tests.txt
FWA_LOCAL_FWD_WS=1 SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family local" timeout 150 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/san.txt 2>&1
tail -4 $OUT/san.txt
