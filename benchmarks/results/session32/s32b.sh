#!/usr/bin/env bash
# Session 32 run B: the row-tail kernel with the keys split over its warps (build s32b). The row-tail tests first,
# then the forward A/B (FWA_WINDOW_ROW_TAIL=0 / default, 2 rounds), the wgmma forward, bitwise and
# lifecycle tests, then bench config 3 (N = 144) with every peer.
set -u
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s32b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
R=benchmarks/results/session32
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
timeout 240 python -m pytest -q -x tests/test_window_attention.py -k "row_tail" > $OUT/runB-pytest-rowtail.txt 2>&1; echo "rc $?" >> $OUT/runB-pytest-rowtail.txt
tail -3 $OUT/runB-pytest-rowtail.txt
for r in 1 2; do
  FWA_WINDOW_ROW_TAIL=0 python $R/row_tail_ab.py 2>&1 | tee -a $OUT/runB-row-tail-ab.txt
  python $R/row_tail_ab.py 2>&1 | tee -a $OUT/runB-row-tail-ab.txt
done
FWA_WINDOW_ROW_TAIL=0 python $R/prof_fwd.py 2>&1 | tee $OUT/runB-prof.txt
python $R/prof_fwd.py 2>&1 | tee -a $OUT/runB-prof.txt
timeout 150 python benchmarks/bench_window_attention.py --configs 3 --out $OUT/runB-bench-n144.json > $OUT/runB-bench-n144.log 2>&1
tail -30 $OUT/runB-bench-n144.log
timeout 200 python -m pytest -q tests/test_window_attention.py -k "wgmma_forward or narrow_last_block or many_windows or clustered" > $OUT/runB-pytest-wgmma.txt 2>&1; echo "rc $?" >> $OUT/runB-pytest-wgmma.txt
tail -3 $OUT/runB-pytest-wgmma.txt
timeout 150 python -m pytest -q tests/test_lifecycle.py > $OUT/runB-pytest-lifecycle.txt 2>&1; echo "rc $?" >> $OUT/runB-pytest-lifecycle.txt
tail -3 $OUT/runB-pytest-lifecycle.txt
