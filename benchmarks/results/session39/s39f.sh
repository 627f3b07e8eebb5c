#!/usr/bin/env bash
# Session 39 run F: build s39f = s39c + the deadlock fix (runs D-E hung in the warp-specialised
# forward on every grid and in the random problems: a consumer holding its deferred P v's stage
# while skipping 3+ steps outside its band, e.g. block bands of 256 keys at d = 128; it now
# completes the P v at its first step outside its band). Bitwise against s38h (default grids and
# FWA_LOCAL_FWD_WS=1), the every-grid subprocess test and the random problems (two processes),
# forward kernel times at configs 2, 3.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runF-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/s39f.so
strip --strip-all -o /tmp/s39f_s.so /tmp/s39f.so && xz -T8 -3 -c /tmp/s39f_s.so > $OUT/s39f.so.xz
python tools/device/unxz.py tools/device/s38h_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 60 python tools/local_bitwise.py save /tmp/ref_default.pt > /dev/null 2>&1
FWA_LOCAL_FWD_WS=1 timeout 60 python tools/local_bitwise.py save /tmp/ref_every.pt > /dev/null 2>&1
cp /tmp/s39f.so flash_window_attn/_C.abi3.so
for g in default every; do
  E=""; [ $g = every ] && E="FWA_LOCAL_FWD_WS=1"
  echo "== grid $g: s39f vs s38h"
  env $E timeout 60 python tools/local_bitwise.py cmp /tmp/ref_$g.pt 2>&1 | grep -v -i warn | tail -3
done | tee $OUT/runF-bitwise.txt
(timeout 280 python -m pytest -q -m cuda tests/test_local_attention.py -k "ws_fwd_every_grid" --durations=2 > $OUT/runF-sub.txt 2>&1; echo "rc $?" >> $OUT/runF-sub.txt) &
(timeout 280 python -m pytest -q -m cuda tests/test_local_random.py --durations=2 > $OUT/runF-random.txt 2>&1; echo "rc $?" >> $OUT/runF-random.txt) &
wait
for f in $OUT/runF-sub.txt $OUT/runF-random.txt; do echo "== $f"; tail -6 $f; done
timeout 60 python tools/local_breakdown.py --configs 2,3 --impls ours 2>&1 | grep -E "==|fwd" | tee $OUT/runF-kb.txt
echo "total $(( $(date +%s) - t0 )) s"
