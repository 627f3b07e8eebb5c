#!/usr/bin/env bash
# Session 32 run J: build s32j = s32e + the two window forwards' copies through one helper
# (Sw64RowCopier) and the row-tail kernel's body only in the sm_90a code. window_bitwise s32e vs
# s32j, the forward tests, the lifecycle tests, the forward A/B once.
set -u
export PYTHONPATH=$PWD
R=benchmarks/results/session32
python tools/device/unxz.py tools/device/s32e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runJ-bitwise.txt 2>&1
python tools/device/unxz.py tools/device/s32j_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runJ-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runJ-bitwise.txt
tail -2 $OUT/runJ-bitwise.txt
timeout 300 python -m pytest -q tests/test_window_attention.py tests/test_lifecycle.py -k "row_tail or wgmma_forward or narrow_last_block or many_windows or graph or streams or determinism" > $OUT/runJ-pytest.txt 2>&1; echo "rc $?" >> $OUT/runJ-pytest.txt
tail -3 $OUT/runJ-pytest.txt
python $R/row_tail_ab.py 2>&1 | tee $OUT/runJ-row-tail-ab.txt
