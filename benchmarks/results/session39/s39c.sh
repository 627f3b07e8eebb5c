#!/usr/bin/env bash
# Session 39 run C: build s39c = the deferred P v at d = 128 only (d = 64's SASS identical to
# main's before the session, offline), no switch. Bitwise against s38h (main's sliding kernels
# before the session; default grids and FWA_LOCAL_FWD_WS=1), the local CUDA suites, forward kernel
# times at configs 2, 3 (and 0, 4 unchanged).
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runC-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/s39c.so
strip --strip-all -o /tmp/s39c_s.so /tmp/s39c.so && xz -T8 -3 -c /tmp/s39c_s.so > $OUT/s39c.so.xz
python tools/device/unxz.py tools/device/s38h_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 100 python tools/local_bitwise.py save /tmp/ref_default.pt > /dev/null 2>&1
FWA_LOCAL_FWD_WS=1 timeout 100 python tools/local_bitwise.py save /tmp/ref_every.pt > /dev/null 2>&1
cp /tmp/s39c.so flash_window_attn/_C.abi3.so
for g in default every; do
  E=""; [ $g = every ] && E="FWA_LOCAL_FWD_WS=1"
  echo "== grid $g: s39c vs s38h"
  env $E timeout 100 python tools/local_bitwise.py cmp /tmp/ref_$g.pt 2>&1 | grep -v -i warn | tail -3
done | tee $OUT/runC-bitwise.txt
timeout 100 python tools/local_breakdown.py --configs 2,3,0,4 --impls ours 2>&1 | grep -E "==|fwd" | tee $OUT/runC-kb.txt
timeout 300 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py > $OUT/runC-tests.txt 2>&1; echo "rc $?" >> $OUT/runC-tests.txt
tail -4 $OUT/runC-tests.txt; grep -E "^FAILED|^ERROR" $OUT/runC-tests.txt | head
echo "total $(( $(date +%s) - t0 )) s"
