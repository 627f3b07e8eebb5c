#!/usr/bin/env bash
# Session 36 run E: build s36e (= s36d). The 5 window-suite tests run D's 420 s limit cut off; the
# fwd+bwd graph step with the tail kernel off / on at (512, 4, 144) V2 and V1 and (2048, 4, 144) V2
# (several items per warp); swinv2_base_window12_192 (N = 144 in stages 1-3) swapped eager, GPU busy
# time per training step (tools/model_profile.py), tail kernel off / on, 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runE-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runE-build.txt
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "(test_cuda_many_windows and not per_cta) or backward_memory or current_stream" > $OUT/runE-window-rest.txt 2>&1; echo "rc $?" >> $OUT/runE-window-rest.txt
tail -3 $OUT/runE-window-rest.txt
for e in FWA_WINDOW_KV_TAIL=0 FWA_WINDOW_KV_TAIL=1; do
  env $e python benchmarks/results/session36/graph_ab.py $e 3 512,4,144,32,16,12,v1 2048,4,144,32,16,12,v2 2>&1 | grep -v -i warn
done | tee $OUT/runE-graph.txt
for r in 1 2; do
  for e in FWA_WINDOW_KV_TAIL=0 FWA_WINDOW_KV_TAIL=1; do
    echo "== round $r $e swinv2_base_window12_192 train"
    env $e timeout 120 python tools/model_profile.py --model swinv2_base_window12_192 --variants swap --mode train --steps 5 --top 3 2>&1 | grep -v Warning | grep "GPU time per step"
  done
done | tee $OUT/runE-model.txt
