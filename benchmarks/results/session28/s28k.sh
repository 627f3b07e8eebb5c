#!/usr/bin/env bash
# Session 28 run K (review): one LocalBwdWsParams struct and one launcher tail (launch_local_bwd_ws)
# for both warp-specialised backward kernels (s28k) against s28a: outputs bitwise
# (tools/local_bitwise.py), and the local suites with both kernels forced on every grid.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28a_so/_C.abi3.so.xz /tmp/a.so
python tools/device/unxz.py tools/device/s28k_so/_C.abi3.so.xz /tmp/k.so
cp /tmp/a.so flash_window_attn/_C.abi3.so
timeout 100 python tools/local_bitwise.py save /tmp/ref.pt > $OUT/bitwise.txt 2>&1
cp /tmp/k.so flash_window_attn/_C.abi3.so
timeout 100 python tools/local_bitwise.py cmp /tmp/ref.pt >> $OUT/bitwise.txt 2>&1; echo "rc $?" >> $OUT/bitwise.txt
cat $OUT/bitwise.txt
FWA_LOCAL_BWD_Q_WS=1 FWA_LOCAL_BWD_KV_WS=1 timeout 250 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_extremes.py -k "not other_kernels" 2>&1 | tail -2 > $OUT/tests.txt
cat $OUT/tests.txt
