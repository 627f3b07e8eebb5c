#!/usr/bin/env bash
# Session 41 run A: build s41a = the folded row tail (the N = 129..144 forward's last 16 rows in the
# main grid's CTAs, fwd_wgmma_fold_form; the row-tail kernel's warp steps shared as RowTailWarp).
# Window bitwise against s40g with FWA_WINDOW_ROW_TAIL_FOLD=0 (the row-tail kernel: must be equal)
# and with the fold (the tail rows' key norms now the main grid's: differences expected at N = 144
# only); forward A/B s40g / fold off / fold on at config 3 and V1 (1024, 4, 144), 2 rounds; the
# timeline; the row-tail subprocess tests (fold, kernel, bm strip forms).
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runA-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s41a.so.xz
python tools/device/unxz.py tools/device/s40g_so/_C.abi3.so.xz /tmp/base.so
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
(echo "== fold off"; FWA_WINDOW_ROW_TAIL_FOLD=0 timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -8
 echo "== fold on"; timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -12) | tee $OUT/runA-bitwise.txt
for r in 1 2; do
  cp /tmp/base.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session37/fwd_ab.py s40g 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
  cp /tmp/new.so flash_window_attn/_C.abi3.so
  FWA_WINDOW_ROW_TAIL_FOLD=0 python benchmarks/results/session37/fwd_ab.py fold-off 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
  python benchmarks/results/session37/fwd_ab.py fold 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
done | tee $OUT/runA-fwd.txt
cp /tmp/new.so flash_window_attn/_C.abi3.so
python benchmarks/results/session39/timeline.py fold 3 2>&1 | grep -v -i warn | tee $OUT/runA-timeline.txt
echo "timing done $(( $(date +%s) - t0 )) s"
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "row_tail and (default or kernel or bm)" > $OUT/runA-rowtail.txt 2>&1; echo "rc $?" >> $OUT/runA-rowtail.txt
tail -3 $OUT/runA-rowtail.txt
grep -h -E "^FAILED|^ERROR" $OUT/runA-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
