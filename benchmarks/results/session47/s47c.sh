#!/usr/bin/env bash
# Session 47 run C (H200): the CPB op's backward reads, inside a CUDA-graph capture, the CSR of index
# cached by an eager call before it (no sort in the graph). Build, the CPB / module graph tests,
# the window16 training-step timeline as a graph, then bench_models window16 swapped / ceiling eager.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s47c C
timeout 200 python -m pytest -q -x -p no:cacheprovider tests/test_cpb.py "tests/test_modules.py::test_cuda_compile_reduce_overhead_v2" 2>&1 | tail -4 | tee $OUT/runC-tests.txt
echo "tests $(( $(date +%s) - t0 )) s"
timeout 120 python tools/graph_step_timeline.py --variants swap --top 12 2>&1 | grep -v -i warn > $OUT/runC-timeline.txt
echo "timeline rc $? $(( $(date +%s) - t0 )) s"
grep "==" $OUT/runC-timeline.txt
timeout 200 python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap,ceiling --no-compile \
  --out $OUT/models-window16-eager.json > $OUT/runC-models.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/runC-models.log | tail -16
