#!/usr/bin/env bash
# Session 27 run G: the key side at d = 64 with 2 consumer warpgroups (232 registers, no spill)
# against 3 (160, ~3 spill instructions per step): a temporary switch FWA_TMP_KV_CONS2=1 (not
# committed); bitwise against the wgmma kernels; tests/gpu/local_validate.py (1377 cases against
# float64) with every warp-specialised kernel on every grid.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s27g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
FWA_LOCAL_BWD_KV_WS=0 FWA_LOCAL_BWD_Q_WS=0 timeout 100 python tools/local_bitwise.py save /tmp/ref0.pt > $OUT/bitwise.txt 2>&1
echo "== FWA_TMP_KV_CONS2=1, both warp-specialised backward kernels on every grid, vs both off" >> $OUT/bitwise.txt
FWA_TMP_KV_CONS2=1 FWA_LOCAL_BWD_KV_WS=1 FWA_LOCAL_BWD_Q_WS=1 timeout 100 python tools/local_bitwise.py cmp /tmp/ref0.pt >> $OUT/bitwise.txt 2>&1; echo "rc $?" >> $OUT/bitwise.txt
grep -v saved $OUT/bitwise.txt | tail -4
for r in 1 2 3; do for e in "X=1" "FWA_TMP_KV_CONS2=1"; do
  echo "== round $r $e"
  env $e timeout 60 python tools/local_breakdown.py --configs 4,0 --impls ours 2>&1 | grep -E "==|bwd_kv"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
FWA_LOCAL_FWD_WS=1 FWA_LOCAL_BWD_KV_WS=1 FWA_LOCAL_BWD_Q_WS=1 timeout 330 python tests/gpu/local_validate.py > $OUT/validate.txt 2>&1; echo "validate rc $?" >> $OUT/validate.txt
tail -6 $OUT/validate.txt
