#!/usr/bin/env bash
# Session 36 run F (TIMING ONLY, wrong gradients): main + tools/patches/window-bwd-preprocess-skip-
# norms-TIMING-ONLY.patch (applied in the working tree for this build only). With
# FWA_DEBUG_SKIP_NORMS=1 the backward's preprocess reads out and dout only (D), not q and k, and
# writes 1 as the inverse norms: the step's cost of the norms, i.e. what a forward that saved its
# q / k inverse norms for the backward would gain. Preprocess kernel time and graph step A/B at
# configs 3 (N = 144), 1 (N = 256) and 4 (N = 576).
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runF-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runF-build.txt
for e in FWA_DEBUG_SKIP_NORMS=0 FWA_DEBUG_SKIP_NORMS=1; do
  env $e python benchmarks/results/session33/prof_kernels.py "$e" 3 1 2>&1 | grep -v -i warn | grep -E "preprocess|sum of"
done | tee $OUT/runF-prof.txt
for round in 1 2; do
  for e in FWA_DEBUG_SKIP_NORMS=0 FWA_DEBUG_SKIP_NORMS=1; do
    env $e python benchmarks/results/session36/graph_ab.py $e 3 1 4 2>&1 | grep -v -i warn
  done
done | tee $OUT/runF-graph.txt
