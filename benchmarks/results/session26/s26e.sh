#!/usr/bin/env bash
# Session 26 run E: the persistent warp-specialised d = 64 forward with snake-order rounds: kernel
# times against FWA_LOCAL_FWD_WS=0 and one CTA per item, local CUDA suites, local sanitizers with
# the kernel forced on every grid.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s26e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
FWA_LOCAL_FWD_WS=1 FWA_LOCAL_FWD_WS_GRID=all python tools/local_bitwise.py save /tmp/ref1.pt > $OUT/bitwise.txt 2>&1
echo "== persistent vs one CTA per item" >> $OUT/bitwise.txt
FWA_LOCAL_FWD_WS=1 timeout 120 python tools/local_bitwise.py cmp /tmp/ref1.pt >> $OUT/bitwise.txt 2>&1; echo "rc $?" >> $OUT/bitwise.txt
cat $OUT/bitwise.txt | grep -v saved
for r in 1 2; do for e in "FWA_LOCAL_FWD_WS=0" "X=1" "FWA_LOCAL_FWD_WS_GRID=all"; do
  echo "== round $r $e"
  env $e timeout 100 python tools/local_breakdown.py --configs 4,0 --impls ours 2>&1 | grep -E "==|fwd"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
timeout 250 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py 2>&1 | tail -3 > $OUT/tests.txt
cat $OUT/tests.txt
FWA_LOCAL_FWD_WS=1 SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family local" timeout 200 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/san.txt 2>&1
tail -5 $OUT/san.txt
