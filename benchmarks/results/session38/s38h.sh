#!/usr/bin/env bash
# Session 38 run H: build s38h = s38f + the d = 64 wgmma forward at Npad 128 too (N = 65..128; offline
# 114-124 registers, no spill), reading bias and mask itself. Tests: the wgmma forward's subprocess
# tests (four d = 48-64 cases at N = 65-128 added), the tiled backward / row-tail subprocess tests
# (which take the wgmma cases above N = 64) and the window suite's other tests; forward alone
# s38f (mma.sync at d = 64, Npad 128) / s38h, then FWA_WINDOW_FWD_DIRECT_BM=0 on s38h.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runH-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/s38h.so
strip --strip-all -o /tmp/s38h_s.so /tmp/s38h.so && xz -T8 -3 -c /tmp/s38h_s.so > $OUT/s38h.so.xz
python tools/device/unxz.py tools/device/s38f_so/_C.abi3.so.xz /tmp/s38f.so
(timeout 330 python -m pytest -q -m cuda tests/test_window_attention.py -k "wgmma_forward or mma_sync_forward" > $OUT/runH-wgmma.txt 2>&1; echo "rc $?" >> $OUT/runH-wgmma.txt) &
(timeout 330 python -m pytest -q -m cuda tests/test_window_attention.py -k "tiled_backward or row_tail" > $OUT/runH-tiled.txt 2>&1; echo "rc $?" >> $OUT/runH-tiled.txt) &
(timeout 330 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" > $OUT/runH-window.txt 2>&1; echo "rc $?" >> $OUT/runH-window.txt) &
wait
for f in $OUT/runH-wgmma.txt $OUT/runH-tiled.txt $OUT/runH-window.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
grep -h -E "^FAILED|^ERROR|Fatal" $OUT/runH-*.txt | head -10
F=benchmarks/results/session37/fwd_ab.py
S="1024,4,100,64,16,10,v2 1024,4,81,64,16,9,v2 512,4,121,64,16,11,v1 8"
for round in 1 2; do
  for b in s38f s38h; do
    cp /tmp/$b.so flash_window_attn/_C.abi3.so
    python $F $b $S 2>&1 | grep -v -i warn
  done
  FWA_WINDOW_FWD_DIRECT_BM=0 python $F s38h-DIRECT_BM=0 $S 2>&1 | grep -v -i warn
done | tee $OUT/runH-fwd.txt
echo "total $(( $(date +%s) - t0 )) s"
