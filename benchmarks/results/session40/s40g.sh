#!/usr/bin/env bash
# Session 40 run G: build s40g = s40f with the row-tail kernel at 4 CTAs per SM (launch bounds
# (128, 4): 126-128 registers, no spill) in 52 KB at N = 144: the warps' partial results written
# into the window's own stage after an extra barrier (every warp done with its q, k, v), the next
# window's copies issued after the top barrier. Window bitwise against s40f, forward A/B at N = 144
# (config 3) and N = 80 (Npad 128, a 16-row tail), 2 rounds; the timeline; row-tail tests and the
# window suite without its subprocess tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runG-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s40g.so.xz
python tools/device/unxz.py tools/device/s40f_so/_C.abi3.so.xz /tmp/base.so
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -8 | tee $OUT/runG-bitwise.txt
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session37/fwd_ab.py $b 3 1024,4,80,32,16,9,v2 2>&1 | grep -v -i warn
done; done | tee $OUT/runG-fwd.txt
python benchmarks/results/session39/timeline.py new 3 2>&1 | grep -v -i warn | tee $OUT/runG-timeline.txt
echo "timing done $(( $(date +%s) - t0 )) s"
(timeout 330 python -m pytest -q -m cuda tests/test_window_attention.py -k "row_tail" > $OUT/runG-rowtail.txt 2>&1; echo "rc $?" >> $OUT/runG-rowtail.txt) &
(timeout 330 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" > $OUT/runG-window.txt 2>&1; echo "rc $?" >> $OUT/runG-window.txt) &
wait
for f in $OUT/runG-rowtail.txt $OUT/runG-window.txt; do echo "== $f"; tail -2 $f; done
grep -h -E "^FAILED|^ERROR" $OUT/runG-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
