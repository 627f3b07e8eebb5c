#!/usr/bin/env bash
# Session 50 run E (H200): the final code (run D less the MLP forward's launch bound, which was
# slower): build, CPB / swap / modules CUDA tests, cpb_batch_graph.py, one round of the models.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runE.txt) 2>&1
fwa_build s50e E
timeout 200 python -m pytest -q -p no:cacheprovider -m cuda tests/test_cpb.py tests/test_swap.py tests/test_modules.py 2>&1 | grep -E "passed|failed|FAILED|ERROR|Error|xpass" | tail -8
echo "tests $(( $(date +%s) - t0 )) s"
timeout 100 python benchmarks/results/session50/cpb_batch_graph.py 2>&1 | grep -v -i warn | grep -v "^    "
M="--models swinv2_tiny_window16_256,swinv2_base_window12_192 --variants swap,ceiling --no-compile"
timeout 110 python benchmarks/bench_models.py $M --out $OUT/models-e.json > /tmp/g.log 2>&1
grep -h "GPU time\|^c swapped\|^e ceiling" /tmp/g.log
echo "done $(( $(date +%s) - t0 )) s"
