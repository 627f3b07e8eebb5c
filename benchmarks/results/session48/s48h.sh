#!/usr/bin/env bash
# Session 48 run H (H200, not kept): the window-form dtable with one head per CTA and 16-entry load
# steps (kWinHeads 1, kStep 16) instead of 4 and 8: the CPB tests, the CPB graph, the two models.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s48h H
timeout 100 python -m pytest -q -x -p no:cacheprovider -m cuda tests/test_cpb.py 2>&1 | tail -2
echo "tests $(( $(date +%s) - t0 )) s"
python benchmarks/results/session48/cpb_graph.py new 2>&1 | grep -v -i warn
timeout 60 python benchmarks/bench_models.py --models swinv2_tiny_window16_256,swinv2_base_window12_192 --variants swap,ceiling --no-compile --out $OUT/models-h.json 2>&1 | grep -h "GPU time\|^== "
echo "done $(( $(date +%s) - t0 )) s"
