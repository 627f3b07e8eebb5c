#!/usr/bin/env bash
# Session 40 run E: build s40e = main with the warp-specialised key side's D sums flushed per warp
# (each warp's per-query sums over its 16 keys straight into d_acc in fixed point, while the next
# step's products run) instead of staged in shared memory, summed over the 4 warps after a group
# barrier per step and flushed by 64 threads. Bitwise against s39j (dk / dv / out must not change;
# dq may, in its last bits), key-side kernel times A/B (configs 0, 4, 2; 2 rounds), then the local
# CUDA suites (three processes) and compute-sanitizer over the local family.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runE-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s40e.so.xz
python tools/device/unxz.py tools/device/s39j_so/_C.abi3.so.xz /tmp/base.so
ALL="FWA_LOCAL_FWD_WS=1 FWA_LOCAL_BWD_KV_WS=1 FWA_LOCAL_BWD_Q_WS=1"
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 60 python tools/local_bitwise.py save /tmp/ref_default.pt > /dev/null 2>&1
env $ALL timeout 60 python tools/local_bitwise.py save /tmp/ref_every.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
for g in default every; do
  E="X=1"; [ $g = every ] && E="$ALL"
  echo "== grid $g: s40e vs s39j (output 0 out, 1 dq, 2 dk, 3 dv)"
  env $E timeout 60 python tools/local_bitwise.py cmp /tmp/ref_$g.pt 2>&1 | grep -v -i warn | tail -30
done | tee $OUT/runE-bitwise.txt
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  echo "== round $r $b"
  timeout 90 python tools/local_breakdown.py --configs 0,4,2 --impls ours 2>&1 | grep -E "==|bwd_kv"
done; done 2>&1 | tee $OUT/runE-kb.txt
cp /tmp/new.so flash_window_attn/_C.abi3.so
echo "timing done $(( $(date +%s) - t0 )) s"
(timeout 300 python -m pytest -q -m cuda tests/test_local_attention.py -k "subprocess" > $OUT/runE-sub.txt 2>&1; echo "rc $?" >> $OUT/runE-sub.txt) &
(timeout 300 python -m pytest -q -m cuda tests/test_local_attention.py -k "not subprocess" > $OUT/runE-attn.txt 2>&1; echo "rc $?" >> $OUT/runE-attn.txt) &
(timeout 300 python -m pytest -q -m cuda tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py > $OUT/runE-other.txt 2>&1; echo "rc $?" >> $OUT/runE-other.txt) &
(SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family local" timeout 300 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/runE-san.txt 2>&1; echo "rc $?" >> $OUT/runE-san.txt) &
wait
for f in $OUT/runE-sub.txt $OUT/runE-attn.txt $OUT/runE-other.txt; do echo "== $f"; tail -2 $f; done
tail -6 $OUT/runE-san.txt
grep -h -E "^FAILED|^ERROR" $OUT/runE-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
