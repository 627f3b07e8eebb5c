#!/usr/bin/env bash
# Session 48 run F (H200): the CPB backward reading dbias along the window's diagonals where index is
# Swin's relative position index (cpb_dtable_window_kernel), on top of run E's MLP backward. Build;
# the CPB / modules / swap CUDA tests; the CPB op's fwd+bwd graph, s48e against the new build; then
# bench_models (eager swapped / ceiling, GPU time): window16 and base_window12_192 with s47c (main
# before this session) and the new build, then the other two models with the new build. Where the
# tests fail, the model runs take s48e instead.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s48f F
timeout 200 python -m pytest -q -p no:cacheprovider -m cuda tests/test_cpb.py tests/test_modules.py tests/test_swap.py 2>&1 | tail -4 | tee $OUT/runF-tests.txt
ok=$(grep -c " passed" $OUT/runF-tests.txt); bad=$(grep -c "failed\|error" $OUT/runF-tests.txt)
echo "tests $(( $(date +%s) - t0 )) s ok=$ok bad=$bad"
fwa_unpack .devbuild/s48e.so.xz /tmp/base.so
fwa_unpack .devbuild/s47c.so.xz /tmp/s47c.so
if [ "$bad" != "0" ]; then cp /tmp/base.so /tmp/new.so; echo "TESTS FAILED: models on s48e"; fi
C=benchmarks/results/session48/cpb_graph.py
for b in base new; do cp /tmp/$b.so flash_window_attn/_C.abi3.so; python $C $b 2>&1 | grep -v -i warn; done | tee $OUT/runF-cpb.txt
echo "cpb $(( $(date +%s) - t0 )) s"
M="--variants swap,ceiling --no-compile"
cp /tmp/s47c.so flash_window_attn/_C.abi3.so
timeout 150 python benchmarks/bench_models.py --models swinv2_tiny_window16_256,swinv2_base_window12_192 $M --out $OUT/models-s47c.json > $OUT/runF-models-s47c.log 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 150 python benchmarks/bench_models.py --models swinv2_tiny_window16_256,swinv2_base_window12_192 $M --out $OUT/models-new.json > $OUT/runF-models-new.log 2>&1
timeout 120 python benchmarks/bench_models.py --models swinv2_tiny_window8_256,swinv2_base_window12to24_192to384 $M --out $OUT/models-new-others.json > $OUT/runF-models-new-others.log 2>&1
grep -h "GPU time\|^== " $OUT/runF-models-*.log
echo "done $(( $(date +%s) - t0 )) s"
