#!/usr/bin/env bash
# Session 63 run D (profile, main's kernels = .devbuild/s63base.so.xz): run B again with
# --cache-control none. ncu flushes the caches before each pass by default, which could make the
# CTA prologues' loads of the L2-resident bias / mask / tiles look slower than in a real run (run
# C shortened the forward's prologue without a measurable gain). (Result: the same shares as run B.) Per-instruction warp-stall sampling
# (ncu SourceCounters) of the window op's three big kernels at swinv2_tiny_window16_256's stage-1
# shape (session47/ncu_window.py: B_ 1024, H 3, N 256, d 32, V2 + bias + 16-window mask, bf16).
# The SASS source pages go to $OUT as xz-compressed CSV (summarise with tools/ncu_source_summary.py).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runD.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s63base.so.xz flash_window_attn/_C.abi3.so
for k in fwd_wgmma bwd_kv_kernel bwd_q_wg; do
  timeout 150 ncu -k regex:window_attn_$k -c 1 --cache-control none --section SourceCounters --section WarpStateStats \
    -o /tmp/s63d_$k python benchmarks/results/session47/ncu_window.py > /tmp/ncu_$k.log 2>&1
  echo "ncu $k rc $? $(( $(date +%s) - t0 )) s"; tail -3 /tmp/ncu_$k.log
  ncu --import /tmp/s63d_$k.ncu-rep --page source --csv --print-source sass > /tmp/src_$k.csv 2> /tmp/src_$k.err
  echo "source page $k rc $? lines $(wc -l < /tmp/src_$k.csv)"; head -c 600 /tmp/src_$k.err
  xz -T8 -6 -c /tmp/src_$k.csv > $OUT/runD-source-$k.csv.xz
  ncu --import /tmp/s63d_$k.ncu-rep > $OUT/runD-details-$k.txt 2>&1
done
ls -la $OUT
echo "end $(( $(date +%s) - t0 )) s"
