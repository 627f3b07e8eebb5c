#!/usr/bin/env bash
# Session 40 run N: build s40n = main + the main grid's k / v copies with the L2 evict_last
# priority in the row-tail form (FwdParams::kv_l2_keep; FWA_WINDOW_KV_L2_KEEP=0 for the normal
# priority), so that the row tail, which reads every window's k and v again after the main grid,
# finds them in L2. Window bitwise against s40g, forward A/B at N = 144 (config 3, and V1 at
# (1024, 4, 144)), 2 rounds; the timeline; row-tail tests and the window suite without its
# subprocess tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runN-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s40n.so.xz
python tools/device/unxz.py tools/device/s40g_so/_C.abi3.so.xz /tmp/base.so
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -8 | tee $OUT/runN-bitwise.txt
for r in 1 2; do
  FWA_WINDOW_KV_L2_KEEP=0 python benchmarks/results/session37/fwd_ab.py normal 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
  python benchmarks/results/session37/fwd_ab.py keep 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
done | tee $OUT/runN-fwd.txt
python benchmarks/results/session39/timeline.py keep 3 2>&1 | grep -v -i warn | tee $OUT/runN-timeline.txt
echo "timing done $(( $(date +%s) - t0 )) s"
(timeout 330 python -m pytest -q -m cuda tests/test_window_attention.py -k "row_tail" > $OUT/runN-rowtail.txt 2>&1; echo "rc $?" >> $OUT/runN-rowtail.txt) &
(timeout 330 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" > $OUT/runN-window.txt 2>&1; echo "rc $?" >> $OUT/runN-window.txt) &
wait
for f in $OUT/runN-rowtail.txt $OUT/runN-window.txt; do echo "== $f"; tail -2 $f; done
grep -h -E "^FAILED|^ERROR" $OUT/runN-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
