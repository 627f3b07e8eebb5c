#!/usr/bin/env bash
# Session 39 run J: build s39j = s39f + the backward query side's dq product deferred at d = 64
# (issued with the next computed step's S and dP; 3 stages; FWA_LOCAL_BWD_Q_DEFER=0 the previous
# kernel, same instructions, register names differ). Bitwise against s38h (default grids and
# every warp-specialised kernel on every grid), query-side kernel times A/B (configs 0 block256x16,
# 4 causal; 2 rounds), then the local CUDA suites (three processes).
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runJ-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/s39j.so
strip --strip-all -o /tmp/s39j_s.so /tmp/s39j.so && xz -T8 -3 -c /tmp/s39j_s.so > $OUT/s39j.so.xz
ALL="FWA_LOCAL_FWD_WS=1 FWA_LOCAL_BWD_KV_WS=1 FWA_LOCAL_BWD_Q_WS=1"
python tools/device/unxz.py tools/device/s38h_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 60 python tools/local_bitwise.py save /tmp/ref_default.pt > /dev/null 2>&1
env $ALL timeout 60 python tools/local_bitwise.py save /tmp/ref_every.pt > /dev/null 2>&1
cp /tmp/s39j.so flash_window_attn/_C.abi3.so
for g in default every; do
  E="X=1"; [ $g = every ] && E="$ALL"
  echo "== grid $g: s39j vs s38h"
  env $E timeout 60 python tools/local_bitwise.py cmp /tmp/ref_$g.pt 2>&1 | grep -v -i warn | tail -3
done | tee $OUT/runJ-bitwise.txt
for r in 1 2; do for e in "FWA_LOCAL_BWD_Q_DEFER=0" "X=1"; do
  echo "== round $r $e"
  env $e timeout 60 python tools/local_breakdown.py --configs 0,4 --impls ours 2>&1 | grep -E "==|bwd_q"
done; done 2>&1 | tee $OUT/runJ-kb.txt
(timeout 300 python -m pytest -q -m cuda tests/test_local_attention.py -k "subprocess" > $OUT/runJ-sub.txt 2>&1; echo "rc $?" >> $OUT/runJ-sub.txt) &
(timeout 300 python -m pytest -q -m cuda tests/test_local_attention.py -k "not subprocess" > $OUT/runJ-attn.txt 2>&1; echo "rc $?" >> $OUT/runJ-attn.txt) &
(timeout 300 python -m pytest -q -m cuda tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py > $OUT/runJ-other.txt 2>&1; echo "rc $?" >> $OUT/runJ-other.txt) &
wait
for f in $OUT/runJ-sub.txt $OUT/runJ-attn.txt $OUT/runJ-other.txt; do echo "== $f"; tail -2 $f; done
grep -h -E "^FAILED|^ERROR" $OUT/runJ-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
