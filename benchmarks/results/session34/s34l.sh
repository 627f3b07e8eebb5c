#!/usr/bin/env bash
# Session 34 run L: build s34l = s34i + the key side's narrow last query block computed into arrays
# of its own width (copied into the full-width tiles after the wait): the fp16 narrow-tail kernels
# were still serialised by ptxas after run E's peel (C7511; only bf16 was checked then).
# window_bitwise s34i vs s34l; fwd+bwd step GPU time (CUDA graph) s34i / s34l, fp16 and bf16, bench
# config 3 (N = 144); narrow-block and tiled-backward tests.
export PYTHONPATH=$PWD
S=benchmarks/results/session33
python tools/device/unxz.py tools/device/s34i_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runL-bitwise.txt 2>&1
python tools/device/unxz.py tools/device/s34l_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runL-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runL-bitwise.txt
tail -2 $OUT/runL-bitwise.txt
for round in 1 2; do
  for b in s34i s34l; do
    python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
    python -c "
import sys, torch; sys.path.insert(0, 'benchmarks'); sys.path.insert(0, '$S')
import bench_window_attention as bw; from step_graph_ab import graph_step_us
for c in [bw.CONFIGS[3], bw.Config(256, 4, 225, 32, 4, 15, 'v2')]:
    for dt in (torch.float16, torch.bfloat16):
        print(f'$b {c.name:28s} {str(dt)[6:]:9s} fwd+bwd step (graph) {graph_step_us(c, dt):8.1f} us', flush=True)
" 2>&1 | grep -v Warn
  done
done | tee $OUT/runL-graph-ab.txt
timeout 200 python -m pytest -q -x -m cuda tests/test_window_attention.py -k "narrow or tiled_backward" > $OUT/runL-pytest.txt 2>&1; echo "rc $?" >> $OUT/runL-pytest.txt
tail -3 $OUT/runL-pytest.txt
