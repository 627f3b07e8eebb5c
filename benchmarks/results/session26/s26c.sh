#!/usr/bin/env bash
# Session 26 run C: the warp-specialised TMA forward at d = 64 (FWA_LOCAL_FWD_WS=2|3): bitwise
# against the default forward, kernel GPU time on the causal / block256x16 configs, then the grid.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s26c_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/local_bitwise.py save /tmp/ref.pt > $OUT/bitwise.txt 2>&1
for e in "FWA_LOCAL_FWD_WS=3" "FWA_LOCAL_FWD_WS=2" "FWA_LOCAL_FWD_WS=3 FWA_LOCAL_FWD_WS_STAGES=3" "FWA_LOCAL_FWD_WS=2 FWA_LOCAL_FWD_WS_STAGES=3"; do
  echo "== $e" >> $OUT/bitwise.txt
  env $e timeout 120 python tools/local_bitwise.py cmp /tmp/ref.pt >> $OUT/bitwise.txt 2>&1; echo "rc $?" >> $OUT/bitwise.txt
done
cat $OUT/bitwise.txt | tail -30
for r in 1 2; do for e in "X=1" "FWA_LOCAL_FWD_WS=3" "FWA_LOCAL_FWD_WS=2" "FWA_LOCAL_FWD_WS=3 FWA_LOCAL_FWD_WS_STAGES=3" "FWA_LOCAL_FWD_WS=2 FWA_LOCAL_FWD_WS_STAGES=3"; do
  echo "== round $r $e"
  env $e timeout 100 python tools/local_breakdown.py --configs 4,0 --impls ours 2>&1 | grep -E "==|fwd"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
timeout 240 python -m pytest -q -m cuda tests/test_local_attention.py -k "other_kernels and ws_fwd" 2>&1 | tail -5 > $OUT/tests.txt
cat $OUT/tests.txt
