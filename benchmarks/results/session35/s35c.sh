#!/usr/bin/env bash
# Session 35 run C (timing only): the cost of the tiled backward's M-side padding in its last
# blocks. Build s35c = main + FWA_DEBUG_SKIP_TAIL_BLOCKS=1 (the key side skips its last key block,
# the query side its last query block: wrong gradients, timing only). Kernel times
# (session33/prof_kernels.py) and fwd+bwd step (graph) with and without, N = 144, 196, 100.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runC-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runC-build.txt
for e in FWA_DEBUG_SKIP_TAIL_BLOCKS=0 FWA_DEBUG_SKIP_TAIL_BLOCKS=1; do
  env $e python benchmarks/results/session33/prof_kernels.py "$e" 3 2>&1 | grep -v Warn
done | tee $OUT/runC-prof.txt
for round in 1 2; do
  for e in FWA_DEBUG_SKIP_TAIL_BLOCKS=0 FWA_DEBUG_SKIP_TAIL_BLOCKS=1; do
    env $e python -c "
import sys, torch; sys.path.insert(0, 'benchmarks'); sys.path.insert(0, 'benchmarks/results/session33')
import bench_window_attention as bw; from step_graph_ab import graph_step_us
for c in (bw.CONFIGS[3], bw.Config(256, 6, 196, 32, 4, 14, 'v2'), bw.Config(1024, 4, 100, 32, 16, 10, 'v2')):
    print(f'[$e] {c.name:28s} bf16 fwd+bwd step (graph) {graph_step_us(c, torch.bfloat16):8.1f} us', flush=True)
" 2>&1 | grep -v Warn
  done
done | tee $OUT/runC-graph.txt
