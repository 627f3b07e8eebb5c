#!/usr/bin/env bash
# Session 34 run I: build s34i = s34e (main's kernels) + the query side's late epilogue at Npad 192
# (warpgroup 1 adds warpgroup 0's dq part and stores at the top of the next window; one barrier
# per window instead of two). window_bitwise s34e vs s34i; fwd+bwd step GPU time (CUDA graph)
# s34e / s34i alternately, 2 rounds: bench configs 3 (N = 144) and 1 (N = 256, control), and
# N = 169 V2 and V1 (Npad 192, a narrow block of 48); query-side kernel time; tests.
export PYTHONPATH=$PWD
S=benchmarks/results/session33
R=benchmarks/results/session34
python tools/device/unxz.py tools/device/s34e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runI-bitwise.txt 2>&1
python tools/device/unxz.py tools/device/s34i_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runI-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runI-bitwise.txt
tail -2 $OUT/runI-bitwise.txt
for round in 1 2; do
  for b in s34e s34i; do
    python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
    python $S/step_graph_ab.py $b 3 1 2>&1 | grep -v Warn
    python -c "
import sys; sys.path.insert(0, 'benchmarks'); sys.path.insert(0, '$S')
import bench_window_attention as bw; from step_graph_ab import graph_step_us
for c in [bw.Config(512, 4, 169, 32, 16, 13, 'v2'), bw.Config(512, 4, 169, 32, 16, 13, 'v1')]:
    print(f'$b      {c.name:28s} fwd+bwd step (graph) {graph_step_us(c):8.1f} us', flush=True)
" 2>&1 | grep -v Warn
  done
done | tee $OUT/runI-graph-ab.txt
python $S/prof_kernels.py s34i 3 2>&1 | grep -v -i warn | tee $OUT/runI-prof.txt
timeout 300 python -m pytest -q -x -m cuda tests/test_window_attention.py -k "narrow or tiled_backward or d32 or determinis or graph" > $OUT/runI-pytest.txt 2>&1; echo "rc $?" >> $OUT/runI-pytest.txt
tail -3 $OUT/runI-pytest.txt
