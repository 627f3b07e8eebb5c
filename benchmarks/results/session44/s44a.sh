#!/usr/bin/env bash
# Session 44 run A: measurements only, on main's kernels (s43b's .so: session 43's later commits
# changed no cubin). Sliding benchmark configs 0 (block256x16) and 1 (win(256,256)), every peer;
# bench_models swinv2_tiny_window16_256 (issue 3's bar model), swapped and ceiling, eager and
# compiled (timm's own eager / compile rows stand from session 24: 97.5 / 61.0 ms train).
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s43b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv > $OUT/runA-gpu.txt
timeout 200 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding-nvidia-h100-80gb-hbm3-session44-configs01.json > $OUT/runA-sliding.log 2>&1
echo "sliding rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runA-summary.txt
grep -v -i warn $OUT/runA-sliding.log | grep -E "^(block|win)|PASS|FAIL|summary" >> $OUT/runA-summary.txt
left=$(( 585 - ($(date +%s) - t0) ))
timeout $left python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap_compile,ceiling_compile,swap,ceiling --time-budget $(( left - 40 )) --out $OUT/models-nvidia-h100-80gb-hbm3-session44-swinv2_tiny_window16_256.json > $OUT/runA-models.log 2>&1
echo "models rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runA-summary.txt
tail -25 $OUT/runA-models.log >> $OUT/runA-summary.txt
cat $OUT/runA-summary.txt
