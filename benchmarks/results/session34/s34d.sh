#!/usr/bin/env bash
# Session 34 run D: build s34d = s33n (main 99e2d15's kernels) + the tiled backward's chain of
# programmatic dependent launches (preprocess -> key side -> dsum -> query side; no D folding:
# runs B-C). window_bitwise s33n vs s34d; the new PDL bitwise test and the tiled-backward /
# dropout / graph / stream tests; fwd+bwd step GPU time in a CUDA graph, FWA_WINDOW_PDL=0 /
# default, 3 rounds; per-kernel times.
export PYTHONPATH=$PWD
S=benchmarks/results/session33
python tools/device/unxz.py tools/device/s33n_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runD-bitwise.txt 2>&1
for round in 1; do
  FWA_WINDOW_PDL=0 python $S/step_graph_ab.py s33n-nopdl 3 1 2 4 2>&1 | grep -v Warn
  python $S/step_graph_ab.py s33n 3 1 2 4 2>&1 | grep -v Warn
done | tee $OUT/runD-graph-ab.txt
python tools/device/unxz.py tools/device/s34d_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runD-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runD-bitwise.txt
tail -2 $OUT/runD-bitwise.txt
for round in 1 2 3; do
  FWA_WINDOW_PDL=0 python $S/step_graph_ab.py nopdl 3 1 2 4 2>&1 | grep -v Warn
  python $S/step_graph_ab.py default 3 1 2 4 2>&1 | grep -v Warn
done | tee -a $OUT/runD-graph-ab.txt
python $S/prof_kernels.py s34d 3 1 2>&1 | grep -v -i warn | tee $OUT/runD-prof.txt
timeout 330 python -m pytest -q -x -m cuda tests/test_window_attention.py tests/test_dropout.py -k "tiled_backward or bitwise or graph or stream or dropout or determinis" > $OUT/runD-pytest.txt 2>&1; echo "rc $?" >> $OUT/runD-pytest.txt
tail -3 $OUT/runD-pytest.txt
