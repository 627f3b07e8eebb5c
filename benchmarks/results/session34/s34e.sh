#!/usr/bin/env bash
# Session 34 run E: build s34e = s34d with the key side's narrow last query block peeled off its
# loop (in one loop body with the full blocks, ptxas serialised every wgmma of the narrow-tail
# kernels: a wait after each). window_bitwise s34d vs s34e; fwd+bwd step GPU time (CUDA graph)
# s34d / s34e alternately, 2 rounds, bench configs 3 1 and N = 100, 196, 225, 81; kernel times; the
# narrow-block and tiled-backward tests.
export PYTHONPATH=$PWD
S=benchmarks/results/session33
R=benchmarks/results/session34
python tools/device/unxz.py tools/device/s34d_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runE-bitwise.txt 2>&1
for round in 1 2; do
  for b in s34d s34e; do
    python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
    python $S/step_graph_ab.py $b 3 1 2>&1 | grep -v Warn
    python $R/step_graph_more.py $b 2>&1 | grep -v Warn
  done
done | tee $OUT/runE-graph-ab.txt
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runE-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runE-bitwise.txt
tail -2 $OUT/runE-bitwise.txt
python $S/prof_kernels.py s34e 3 2>&1 | grep -v -i warn | tee $OUT/runE-prof.txt
timeout 240 python -m pytest -q -x -m cuda tests/test_window_attention.py -k "narrow or tiled_backward or row_tail" > $OUT/runE-pytest.txt 2>&1; echo "rc $?" >> $OUT/runE-pytest.txt
tail -3 $OUT/runE-pytest.txt
