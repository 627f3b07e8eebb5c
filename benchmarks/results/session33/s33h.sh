#!/usr/bin/env bash
# Session 33 run H: build s33h = s33g (main 2ab7be5) + the tiled backward's preprocess launched as
# the bm build's programmatic dependent (it reads no bm; it waits for the build before it exits).
# window_bitwise s33g vs s33h, fwd+bwd step GPU time in a CUDA graph, FWA_WINDOW_PDL=0 / default,
# 2 rounds, and the tiled-backward, dropout and lifecycle (streams, graphs) tests.
set -u
export PYTHONPATH=$PWD
R=benchmarks/results/session33
python tools/device/unxz.py tools/device/s33g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runH-bitwise.txt 2>&1
python $R/step_graph_ab.py s33g 1 2 3 4 2>&1 | grep -v Warn | tee $OUT/runH-graph-ab.txt
python tools/device/unxz.py tools/device/s33h_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runH-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runH-bitwise.txt
tail -2 $OUT/runH-bitwise.txt
for round in 1 2; do
  FWA_WINDOW_PDL=0 python $R/step_graph_ab.py nopdl$round 1 2 3 4 2>&1 | grep -v Warn | tee -a $OUT/runH-graph-ab.txt
  python $R/step_graph_ab.py pdl$round 1 2 3 4 2>&1 | grep -v Warn | tee -a $OUT/runH-graph-ab.txt
done
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_lifecycle.py tests/test_dropout.py -k "tiled_backward or many_windows or clustered or deterministic or key_ranges or global_dbias or graph or stream or dropout or bias_mask_build or (grid_cuda and (144 or 256))" > $OUT/runH-pytest.txt 2>&1; echo "rc $?" >> $OUT/runH-pytest.txt
tail -2 $OUT/runH-pytest.txt
