#!/usr/bin/env bash
# Session 26 run J: the warp-specialised forward with 3 k / v stages (FWA_LOCAL_FWD_WS_STAGES=3)
# against 2, kernel times on the d = 128 long configs and the d = 64 ones; the grid through 3 stages.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s26j_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for r in 1 2; do for e in "X=1" "FWA_LOCAL_FWD_WS_STAGES=3"; do
  echo "== round $r $e"
  env $e timeout 120 python tools/local_breakdown.py --configs 2,3,4,0 --impls ours 2>&1 | grep -E "==|fwd"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
FWA_LOCAL_FWD_WS_STAGES=3 timeout 150 python -m pytest -q -m cuda tests/test_local_attention.py -k "other_kernels and ws_fwd_every" 2>&1 | tail -2
