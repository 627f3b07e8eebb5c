#!/usr/bin/env bash
# Session 33 run F: build s33f = s33e with the direct strip's loads issued together (addresses
# clamped into the N x N slice, no branch per element). window_bitwise s32m vs s33f, op forward
# A/B (FWA_WINDOW_FWD_DIRECT_BM=0 / default, 2 rounds), the wgmma forward tests.
set -u
export PYTHONPATH=$PWD
R=benchmarks/results/session33
python tools/device/unxz.py tools/device/s32m_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runF-bitwise.txt 2>&1
python tools/device/unxz.py tools/device/s33f_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runF-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runF-bitwise.txt
tail -2 $OUT/runF-bitwise.txt
for round in 1 2; do
  FWA_WINDOW_FWD_DIRECT_BM=0 python $R/fwd_direct_ab.py build$round 2>&1 | grep -v Warn | tee -a $OUT/runF-fwd-ab.txt
  python $R/fwd_direct_ab.py direct$round 2>&1 | grep -v Warn | tee -a $OUT/runF-fwd-ab.txt
done
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_lifecycle.py -k "wgmma_forward or row_tail or narrow_last_block or many_windows or graph or streams or bias_mask_build" > $OUT/runF-pytest.txt 2>&1; echo "rc $?" >> $OUT/runF-pytest.txt
tail -2 $OUT/runF-pytest.txt
