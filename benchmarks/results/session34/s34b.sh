#!/usr/bin/env bash
# Session 34 run B: build s34b = s34a with the query side's D (q_dsum_partials) computed while the
# item's first S and dP products run (in s34a it came before them: run A's fold alone was slower).
# window_bitwise s33n vs s34b; the new bitwise test; fwd+bwd step GPU time in a CUDA graph with
# each switch off, 2 rounds; per-kernel times.
export PYTHONPATH=$PWD
S=benchmarks/results/session33
python tools/device/unxz.py tools/device/s33n_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runB-bitwise.txt 2>&1
python tools/device/unxz.py tools/device/s34b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runB-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runB-bitwise.txt
tail -2 $OUT/runB-bitwise.txt
for round in 1 2; do
  FWA_WINDOW_BWD_Q_DSUM=0 FWA_WINDOW_PDL=0 python $S/step_graph_ab.py none 3 1 2 2>&1 | grep -v Warn
  FWA_WINDOW_BWD_Q_DSUM=0 python $S/step_graph_ab.py pdl-only 3 1 2 2>&1 | grep -v Warn
  FWA_WINDOW_PDL=0 python $S/step_graph_ab.py fold-only 3 1 2 2>&1 | grep -v Warn
  python $S/step_graph_ab.py default 3 1 2 2>&1 | grep -v Warn
done | tee $OUT/runB-graph-ab.txt
FWA_WINDOW_PDL=0 python $S/prof_kernels.py s34b-nopdl 3 1 2>&1 | grep -v -i warn | tee $OUT/runB-prof.txt
timeout 200 python -m pytest -q -x -m cuda tests/test_window_attention.py -k "dsum_and_pdl" > $OUT/runB-pytest.txt 2>&1; echo "rc $?" >> $OUT/runB-pytest.txt
tail -3 $OUT/runB-pytest.txt
