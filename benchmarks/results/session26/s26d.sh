#!/usr/bin/env bash
# Session 26 run D: the persistent warp-specialised d = 64 forward (default where its grid fills the
# GPU): bitwise against FWA_LOCAL_FWD_WS=0 and against one CTA per item, kernel times, local suites.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s26d_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
FWA_LOCAL_FWD_WS=0 python tools/local_bitwise.py save /tmp/ref0.pt > $OUT/bitwise.txt 2>&1
FWA_LOCAL_FWD_WS=1 python tools/local_bitwise.py save /tmp/ref1.pt >> $OUT/bitwise.txt 2>&1
for e in "FWA_LOCAL_FWD_WS=1 FWA_LOCAL_FWD_WS_GRID=all" "X=1"; do
  echo "== $e vs ws forced" >> $OUT/bitwise.txt
  env $e timeout 120 python tools/local_bitwise.py cmp /tmp/ref1.pt >> $OUT/bitwise.txt 2>&1; echo "rc $?" >> $OUT/bitwise.txt
done
echo "== default vs FWA_LOCAL_FWD_WS=0" >> $OUT/bitwise.txt
timeout 120 python tools/local_bitwise.py cmp /tmp/ref0.pt >> $OUT/bitwise.txt 2>&1; echo "rc $?" >> $OUT/bitwise.txt
cat $OUT/bitwise.txt | grep -v saved
for r in 1 2; do for e in "FWA_LOCAL_FWD_WS=0" "X=1" "FWA_LOCAL_FWD_WS_GRID=all"; do
  echo "== round $r $e"
  env $e timeout 100 python tools/local_breakdown.py --configs 4,0 --impls ours 2>&1 | grep -E "==|fwd"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
timeout 330 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py 2>&1 | tail -8 > $OUT/tests.txt
cat $OUT/tests.txt
