#!/usr/bin/env bash
# Session 41 run D: build s41d = s41a with RowTailWarp computing P inside its P v loop again (as
# the row-tail kernel did before session 41; the fold path then spills 48 instead of 80 bytes).
# Window bitwise against s41a (same arithmetic: must be equal), forward A/B s40g / s41a / s41d at
# N = 80, 72 (the row-tail kernel) and config 3 (the fold), 2 rounds; the row-tail tests (default,
# kernel and bm-strip forms) and the narrow-last-block bitwise test; compute-sanitizer memcheck and
# racecheck over the window family.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runD-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s41d.so.xz
python tools/device/unxz.py tools/device/s40g_so/_C.abi3.so.xz /tmp/base.so
python tools/device/unxz.py tools/device/s41a_so/_C.abi3.so.xz /tmp/s41a.so
cp /tmp/s41a.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
FWA_WINDOW_ROW_TAIL_FOLD=0 timeout 120 python tools/window_bitwise.py save /tmp/wref0.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
(echo "== fold on"; timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -4
 echo "== fold off"; FWA_WINDOW_ROW_TAIL_FOLD=0 timeout 120 python tools/window_bitwise.py cmp /tmp/wref0.pt 2>&1 | grep -v -i warn | tail -4) | tee $OUT/runD-bitwise.txt
for r in 1 2; do for b in base s41a new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session41/fwd_any_n.py $b 1024,4,80,32,16 1024,4,72,32,16 2>&1 | grep -v -i warn
  python benchmarks/results/session37/fwd_ab.py $b 3 2>&1 | grep -v -i warn
done; done | tee $OUT/runD-fwd.txt
cp /tmp/new.so flash_window_attn/_C.abi3.so
echo "timing done $(( $(date +%s) - t0 )) s"
(timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "(row_tail and (default or kernel or bm)) or narrow_last_block" > $OUT/runD-sub.txt 2>&1; echo "rc $?" >> $OUT/runD-sub.txt) &
(SANITIZER_TOOLS="memcheck racecheck" SELECTION_ARGS="--family window" timeout 300 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/runD-san.txt 2>&1; echo "rc $?" >> $OUT/runD-san.txt) &
wait
rm -f $OUT/san/*.log $OUT/san/*.out
for f in $OUT/runD-sub.txt $OUT/runD-san.txt; do echo "== $f"; tail -n 4 $f; done
grep -h -E "^FAILED|^ERROR" $OUT/runD-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
