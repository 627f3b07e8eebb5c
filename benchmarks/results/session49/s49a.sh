#!/usr/bin/env bash
# Session 49 run A (H200): main with swin_cpb_cuda.cpp's IndexPlan refactor (s49a): build, the CPB /
# modules / swap CUDA tests (the graph-capture [permuted] case first run here). Then
# tools/patches/cpb-pdl-chains-SLOWER.patch on top (s49b): CPB bitwise against s49a, the CPB
# CUDA tests, the CPB op's graph (s49a / s49b, every kernel listed), and the models' GPU time
# (eager swapped / ceiling, window16 and base_window12_192), s49a / s49b alternating twice.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runA.txt) 2>&1
fwa_build s49a A
T="tests/test_cpb.py tests/test_modules.py tests/test_swap.py"
timeout 200 python -m pytest -q -p no:cacheprovider -m cuda $T 2>&1 | grep -E "passed|failed|FAILED|ERROR|xpass" | tail -8
timeout 60 python -m pytest -q -p no:cacheprovider -m cuda "tests/test_cpb.py::test_cuda_graph_capture_reads_the_cached_csr" -v 2>&1 | grep -E "PASS|FAIL|ERROR" | head
echo "tests A $(( $(date +%s) - t0 )) s"
cp $OUT/s49a.so.xz .devbuild/ && cp /tmp/new.so /tmp/s49a.so
patch -s -p1 < tools/patches/cpb-pdl-chains-SLOWER.patch && echo "patch applied"
fwa_build s49b B
fwa_bitwise_vs s49a B benchmarks/results/session47/cpb_bitwise.py
timeout 200 python -m pytest -q -p no:cacheprovider -m cuda $T 2>&1 | grep -E "passed|failed|FAILED|ERROR|xpass" | tail -8
echo "tests B $(( $(date +%s) - t0 )) s"
cp /tmp/new.so /tmp/s49b.so
C=benchmarks/results/session48/cpb_graph.py
cp /tmp/s49a.so flash_window_attn/_C.abi3.so; python $C s49a all 2>&1 | grep -v -i warn
cp /tmp/s49b.so flash_window_attn/_C.abi3.so; python $C s49b 2>&1 | grep -v -i warn
echo "cpb $(( $(date +%s) - t0 )) s"
M="--models swinv2_tiny_window16_256,swinv2_base_window12_192 --variants swap,ceiling --no-compile"
for r in 1 2; do for b in s49a s49b; do
  [ $(( $(date +%s) - t0 )) -gt 480 ] && break
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  timeout 100 python benchmarks/bench_models.py $M --out /tmp/m.json > /tmp/g.log 2>&1
  echo "round $r $b"; grep -h "GPU time" /tmp/g.log
done; done
echo "done $(( $(date +%s) - t0 )) s"
