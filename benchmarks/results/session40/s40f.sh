#!/usr/bin/env bash
# Session 40 run F: build s40f = main with the row-tail kernel's windows interleaved and descending
# (CTA chunk_id takes batch indices nB - 1 - chunk_id, then n_chunks less each: the windows the
# main grid read last, whose k / v may still be in L2, first). Window bitwise against s39j (the
# per-window arithmetic is unchanged), forward A/B at N = 144 (config 3) 2 rounds, the timeline,
# then the row-tail subprocess tests and the window suite without its subprocess tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runF-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s40f.so.xz
python tools/device/unxz.py tools/device/s39j_so/_C.abi3.so.xz /tmp/base.so
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -8 | tee $OUT/runF-bitwise.txt
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session37/fwd_ab.py $b 3 2>&1 | grep -v -i warn
done; done | tee $OUT/runF-fwd.txt
python benchmarks/results/session39/timeline.py new 3 2>&1 | grep -v -i warn | tee $OUT/runF-timeline.txt
echo "timing done $(( $(date +%s) - t0 )) s"
(timeout 330 python -m pytest -q -m cuda tests/test_window_attention.py -k "row_tail" > $OUT/runF-rowtail.txt 2>&1; echo "rc $?" >> $OUT/runF-rowtail.txt) &
(timeout 330 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" > $OUT/runF-window.txt 2>&1; echo "rc $?" >> $OUT/runF-window.txt) &
wait
for f in $OUT/runF-rowtail.txt $OUT/runF-window.txt; do echo "== $f"; tail -2 $f; done
grep -h -E "^FAILED|^ERROR" $OUT/runF-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
