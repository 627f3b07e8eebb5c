#!/usr/bin/env bash
# Session 32 run C: build s32c (the row-tail kernel's key split by N, Npad 128 / 192 only). The
# row-tail, wgmma forward and bitwise tests, the forward A/B at N = 144 and the backward's kernels
# at N = 144 (profile), for the next step.
set -u
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s32c_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
R=benchmarks/results/session32
timeout 300 python -m pytest -q tests/test_window_attention.py -k "row_tail or wgmma_forward or narrow_last_block" > $OUT/runC-pytest.txt 2>&1; echo "rc $?" >> $OUT/runC-pytest.txt
tail -3 $OUT/runC-pytest.txt
FWA_WINDOW_ROW_TAIL=0 python $R/row_tail_ab.py 2>&1 | tee -a $OUT/runC-row-tail-ab.txt
python $R/row_tail_ab.py 2>&1 | tee -a $OUT/runC-row-tail-ab.txt
python $R/prof_bwd.py 2>&1 | grep -v Warn | tee $OUT/runC-prof-bwd.txt
