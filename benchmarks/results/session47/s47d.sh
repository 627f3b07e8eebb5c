#!/usr/bin/env bash
# Session 47 run D (H200): main a2720d1 (the CSR read inside captures; CPU dtable). Build, the CUDA
# tests of the CPB op, the modules and the model swap, then bench_models: window16 with all four
# swapped / ceiling variants (eager, compiled) and their CUDA-graph GPU times, the other three models
# swapped / ceiling eager.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s47d D
timeout 300 python -m pytest -q -p no:cacheprovider -m cuda tests/test_cpb.py tests/test_modules.py tests/test_swap.py 2>&1 | tail -6 | tee $OUT/runD-tests.txt
timeout 60 python -m pytest -q -p no:cacheprovider tests/test_cpb.py -m "not cuda" 2>&1 | tail -2 | tee -a $OUT/runD-tests.txt
echo "tests $(( $(date +%s) - t0 )) s"
timeout 260 python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap,ceiling,swap_compile,ceiling_compile \
  --out $OUT/models-window16.json > $OUT/runD-models16.log 2>&1
echo "bench16 rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/runD-models16.log | grep -i "GPU time\|PASS\|FAIL\|fail \|pass " | head -20
timeout 150 python benchmarks/bench_models.py --models swinv2_tiny_window8_256,swinv2_base_window12_192,swinv2_base_window12to24_192to384 \
  --variants swap,ceiling --no-compile --out $OUT/models-others-eager.json > $OUT/runD-models-others.log 2>&1
echo "bench others rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/runD-models-others.log | grep -i "==\|GPU time" | head -20
