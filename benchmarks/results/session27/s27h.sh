#!/usr/bin/env bash
# Session 27 run H: the review refactor of the warp-specialised kernels (shared rounds, epilogue,
# tensor maps and launch in local_ws.cuh; the key / query sides' elementwise step code shared with
# the wgmma kernels): outputs bitwise against run D's build (default switches, and every
# warp-specialised kernel on every grid), kernel times against run D's build, the local CUDA
# suites with every warp-specialised kernel on every grid, local sanitizers likewise.
export PYTHONPATH=$PWD
ALL="FWA_LOCAL_FWD_WS=1 FWA_LOCAL_BWD_KV_WS=1 FWA_LOCAL_BWD_Q_WS=1"
python tools/device/unxz.py tools/device/s27d_so/_C.abi3.so.xz /tmp/d.so
python tools/device/unxz.py tools/device/s27h_so/_C.abi3.so.xz /tmp/h.so
cp /tmp/d.so flash_window_attn/_C.abi3.so
timeout 100 python tools/local_bitwise.py save /tmp/ref_def.pt > $OUT/bitwise.txt 2>&1
env $ALL timeout 100 python tools/local_bitwise.py save /tmp/ref_all.pt >> $OUT/bitwise.txt 2>&1
cp /tmp/h.so flash_window_attn/_C.abi3.so
echo "== default switches, refactor vs run D" >> $OUT/bitwise.txt
timeout 100 python tools/local_bitwise.py cmp /tmp/ref_def.pt >> $OUT/bitwise.txt 2>&1; echo "rc $?" >> $OUT/bitwise.txt
echo "== every warp-specialised kernel on every grid, refactor vs run D" >> $OUT/bitwise.txt
env $ALL timeout 100 python tools/local_bitwise.py cmp /tmp/ref_all.pt >> $OUT/bitwise.txt 2>&1; echo "rc $?" >> $OUT/bitwise.txt
grep -v saved $OUT/bitwise.txt
for r in 1 2; do for so in d h; do
  cp /tmp/$so.so flash_window_attn/_C.abi3.so
  echo "== round $r build $so"
  timeout 80 python tools/local_breakdown.py --configs 2,1,4,0 --impls ours 2>&1 | grep -E "==|local_attn"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
cp /tmp/h.so flash_window_attn/_C.abi3.so
env $ALL timeout 250 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py 2>&1 | tail -2 > $OUT/tests.txt
cat $OUT/tests.txt
env $ALL SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family local" timeout 80 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/san.txt 2>&1
tail -4 $OUT/san.txt
