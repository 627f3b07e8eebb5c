#!/usr/bin/env bash
# Session 47 run A (H200): main's kernels. The session-46 chunk-cap test (not yet run), the window16
# training step's kernels per step (swapped / ceiling eager, tools/model_profile.py), then
# bench_models on window16 with the compiled variants and their CUDA-graph GPU times.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s47a A
timeout 150 python -m pytest -q -x -p no:cacheprovider \
  "tests/test_local_extremes.py::test_cuda_backward_preprocess_rows_past_its_chunk_cap" 2>&1 | tail -4 | tee $OUT/runA-tests.txt
echo "tests $(( $(date +%s) - t0 )) s"
timeout 150 python tools/model_profile.py --variants swap,ceiling --mode train --steps 5 --top 40 2>&1 \
  | grep -v -i warn > $OUT/runA-profile.txt
echo "profile rc $? $(( $(date +%s) - t0 )) s"
grep "==" $OUT/runA-profile.txt
timeout 330 python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap_compile,ceiling_compile \
  --out $OUT/models-window16-compiled.json > $OUT/runA-models.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/runA-models.log | tail -24
