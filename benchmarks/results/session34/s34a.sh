#!/usr/bin/env bash
# Session 34 run A: build s34a = s33n (main 99e2d15's kernels) + the warpgroup query side summing D
# from the key side's partials (no dsum kernel at Npad <= 256) and the tiled backward's programmatic
# dependent launches (preprocess -> key side -> query side). window_bitwise s33n vs s34a; the new
# bitwise test and the tiled-backward / dropout / graph / stream tests; fwd+bwd step GPU time in a
# CUDA graph with each switch off; per-kernel times.
export PYTHONPATH=$PWD
R=benchmarks/results/session34
S=benchmarks/results/session33
python tools/device/unxz.py tools/device/s33n_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runA-bitwise.txt 2>&1
python tools/device/unxz.py tools/device/s34a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runA-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runA-bitwise.txt
tail -2 $OUT/runA-bitwise.txt
for round in 1 2; do
  FWA_WINDOW_BWD_Q_DSUM=0 FWA_WINDOW_PDL=0 python $S/step_graph_ab.py none 3 1 2 4 2>&1 | grep -v Warn
  FWA_WINDOW_BWD_Q_DSUM=0 python $S/step_graph_ab.py pdl-only 3 1 2 4 2>&1 | grep -v Warn
  FWA_WINDOW_PDL=0 python $S/step_graph_ab.py fold-only 3 1 2 4 2>&1 | grep -v Warn
  python $S/step_graph_ab.py default 3 1 2 4 2>&1 | grep -v Warn
done | tee $OUT/runA-graph-ab.txt
python $S/prof_kernels.py s34a 3 1 2>&1 | grep -v -i warn | tee $OUT/runA-prof.txt
timeout 330 python -m pytest -q -x -m cuda tests/test_window_attention.py tests/test_dropout.py -k "tiled_backward or bitwise or graph or stream or dropout or determinis" > $OUT/runA-pytest.txt 2>&1; echo "rc $?" >> $OUT/runA-pytest.txt
tail -3 $OUT/runA-pytest.txt
