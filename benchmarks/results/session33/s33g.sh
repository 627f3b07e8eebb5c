#!/usr/bin/env bash
# Session 33 run G: build s33g = s33f with the bias+mask rows read directly only at Npad >= 128
# (Npad 64 keeps the bm build and the forward's programmatic dependent launch). window_bitwise
# s32m vs s33g, op forward A/B (2 rounds), the new bitwise test and the wgmma forward / row-tail /
# lifecycle tests, bench configs 1 and 3 with every peer.
set -u
export PYTHONPATH=$PWD
R=benchmarks/results/session33
python tools/device/unxz.py tools/device/s32m_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runG-bitwise.txt 2>&1
python tools/device/unxz.py tools/device/s33g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runG-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runG-bitwise.txt
tail -2 $OUT/runG-bitwise.txt
for round in 1 2; do
  FWA_WINDOW_FWD_DIRECT_BM=0 python $R/fwd_direct_ab.py build$round 2>&1 | grep -v Warn | tee -a $OUT/runG-fwd-ab.txt
  python $R/fwd_direct_ab.py direct$round 2>&1 | grep -v Warn | tee -a $OUT/runG-fwd-ab.txt
done
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_lifecycle.py -k "wgmma_forward or row_tail or narrow_last_block or many_windows or graph or streams or bias_mask_build" > $OUT/runG-pytest.txt 2>&1; echo "rc $?" >> $OUT/runG-pytest.txt
tail -2 $OUT/runG-pytest.txt
timeout 200 python benchmarks/bench_window_attention.py --configs 1,3 --out $OUT/runG-bench.json > $OUT/runG-bench.log 2>&1
tail -14 $OUT/runG-bench.log
