#!/usr/bin/env bash
# Session 27 run D: the warp-specialised backward key side (local_bwd_kv_ws_kernel.cuh): bitwise
# against the wgmma kernels (both warp-specialised backward kernels on every grid vs both off),
# kernel times A/B (FWA_LOCAL_BWD_KV_WS=0 vs default), the local CUDA suites and sanitizers with
# both on every grid.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s27d_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
FWA_LOCAL_BWD_KV_WS=0 FWA_LOCAL_BWD_Q_WS=0 timeout 100 python tools/local_bitwise.py save /tmp/ref0.pt > $OUT/bitwise.txt 2>&1
echo "== FWA_LOCAL_BWD_KV_WS=1 FWA_LOCAL_BWD_Q_WS=1 vs both 0" >> $OUT/bitwise.txt
FWA_LOCAL_BWD_KV_WS=1 FWA_LOCAL_BWD_Q_WS=1 timeout 100 python tools/local_bitwise.py cmp /tmp/ref0.pt >> $OUT/bitwise.txt 2>&1; echo "rc $?" >> $OUT/bitwise.txt
grep -v saved $OUT/bitwise.txt | tail -25
for r in 1 2; do for e in "FWA_LOCAL_BWD_KV_WS=0" "X=1"; do
  echo "== round $r $e"
  env $e timeout 90 python tools/local_breakdown.py --configs 2,3,4,0 --impls ours 2>&1 | grep -E "==|bwd_kv"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
FWA_LOCAL_BWD_KV_WS=1 FWA_LOCAL_BWD_Q_WS=1 timeout 200 python -m pytest -q -m cuda -x tests/test_local_attention.py tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py 2>&1 | tail -5 > $OUT/tests.txt
cat $OUT/tests.txt
FWA_LOCAL_BWD_KV_WS=1 FWA_LOCAL_BWD_Q_WS=1 SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family local" timeout 100 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/san.txt 2>&1
tail -4 $OUT/san.txt
