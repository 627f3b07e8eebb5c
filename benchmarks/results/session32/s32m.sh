#!/usr/bin/env bash
# Session 32 run M (the review): build s32m = s32j + one strip loader for both window forwards
# (load_fwd_strip) and the kv launcher's tail switch only where it applies. window_bitwise s32j vs
# s32m, the forward / d32 backward / narrow-block / row-tail / lifecycle tests, and the row-tail A/B
# script through the benchmark's new op_forward_us.
set -u
export PYTHONPATH=$PWD
R=benchmarks/results/session32
python tools/device/unxz.py tools/device/s32j_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runM-bitwise.txt 2>&1
python tools/device/unxz.py tools/device/s32m_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runM-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runM-bitwise.txt
tail -2 $OUT/runM-bitwise.txt
timeout 330 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_lifecycle.py -k "wgmma_forward or narrow_last_block or row_tail or tiled_backward_d32 or many_windows or graph or streams" > $OUT/runM-pytest.txt 2>&1; echo "rc $?" >> $OUT/runM-pytest.txt
tail -2 $OUT/runM-pytest.txt
python $R/row_tail_ab.py 2>&1 | tee $OUT/runM-row-tail-ab.txt
