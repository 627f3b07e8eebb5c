#!/usr/bin/env bash
# Session 35 run A: build main + the row-tail launch switches (FWA_WINDOW_ROW_TAIL_FIRST: the row
# tail launched before the main grid, which follows as its programmatic dependent and waits for it
# only before it exits; FWA_WINDOW_ROW_TAIL_SLOTS: the row tail's chunking). Bitwise default vs the
# switches; forward A/B (fwd_tail_ab.py); fwd+bwd step (graph) at bench config 3; row-tail tests
# under the switch.
set -x
export PYTHONPATH=$PWD
S=benchmarks/results/session35
t0=$(date +%s)
which python; python -c "import torch; print(torch.__file__)"; MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runA-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runA-build.txt
tail -3 $OUT/runA-build.txt
strip --strip-all -o /tmp/s35a.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/s35a.so > $OUT/s35a_C.abi3.so.xz
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runA-bitwise.txt 2>&1
FWA_WINDOW_ROW_TAIL_FIRST=1 python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runA-bitwise.txt 2>&1; echo "FIRST=1 cmp rc $?" >> $OUT/runA-bitwise.txt
FWA_WINDOW_ROW_TAIL_SLOTS=9 python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runA-bitwise.txt 2>&1; echo "SLOTS=9 cmp rc $?" >> $OUT/runA-bitwise.txt
grep -E "rc|equal|differ" $OUT/runA-bitwise.txt | tail -6
for round in 1 2; do
  python $S/fwd_tail_ab.py
  FWA_WINDOW_ROW_TAIL_FIRST=1 python $S/fwd_tail_ab.py
  FWA_WINDOW_ROW_TAIL_SLOTS=6 python $S/fwd_tail_ab.py
  FWA_WINDOW_ROW_TAIL_SLOTS=9 python $S/fwd_tail_ab.py
  FWA_WINDOW_ROW_TAIL_FIRST=1 FWA_WINDOW_ROW_TAIL_SLOTS=9 python $S/fwd_tail_ab.py
  FWA_WINDOW_ROW_TAIL=0 python $S/fwd_tail_ab.py
done 2>&1 | grep -v Warn | tee $OUT/runA-fwd-ab.txt
for round in 1 2; do
  for e in "" "FWA_WINDOW_ROW_TAIL_FIRST=1" "FWA_WINDOW_ROW_TAIL_SLOTS=9"; do
    env $e python -c "
import sys, torch; sys.path.insert(0, 'benchmarks'); sys.path.insert(0, 'benchmarks/results/session33')
import bench_window_attention as bw; from step_graph_ab import graph_step_us
c = bw.CONFIGS[3]
for dt in (torch.float16, torch.bfloat16):
    print(f'[$e] {c.name:28s} {str(dt)[6:]:9s} fwd+bwd step (graph) {graph_step_us(c, dt):8.1f} us', flush=True)
" 2>&1 | grep -v Warn
  done
done | tee $OUT/runA-graph.txt
FWA_WINDOW_ROW_TAIL_FIRST=1 timeout 150 python -m pytest -q -x -m cuda tests/test_window_attention.py -k "row_tail or narrow or wgmma_forward" > $OUT/runA-pytest.txt 2>&1; echo "rc $?" >> $OUT/runA-pytest.txt
tail -3 $OUT/runA-pytest.txt
