#!/usr/bin/env bash
# Session 33 run N (second review): build s33n = s33m + one launch-config helper for the three
# programmatic dependent launches and one dispatch over the narrow block widths (forward, key side,
# query side). window_bitwise s33m vs s33n, the narrow-block / row-tail / direct-rows / PDL /
# lifecycle tests, the op forward at N = 144 (FWA_WINDOW_PDL=0 / default).
export PYTHONPATH=$PWD
R=benchmarks/results/session33
python tools/device/unxz.py tools/device/s33m_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runN-bitwise.txt 2>&1
python tools/device/unxz.py tools/device/s33n_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runN-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runN-bitwise.txt
tail -2 $OUT/runN-bitwise.txt
timeout 280 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_lifecycle.py -k "bitwise or row_tail or tiled_backward_d32 or graph or stream" > $OUT/runN-pytest.txt 2>&1; echo "rc $?" >> $OUT/runN-pytest.txt
tail -2 $OUT/runN-pytest.txt
python $R/step_graph_ab.py s33n 3 1 2>&1 | grep -v Warn | tee $OUT/runN-graph.txt
