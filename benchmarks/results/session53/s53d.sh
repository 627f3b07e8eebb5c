#!/usr/bin/env bash
# Session 53 run D (profile, main's kernels = .devbuild/s52e.so.xz): per-instruction warp-stall
# sampling (ncu SourceCounters) of the d = 64 warp-specialised forward and key side at
# block256x16 bf16 (config 0): where in a step do the consumer warps wait (the wgmma waits, the
# exponentials, the mbarriers)? Runs A-C ruled out phase lock between the consumers as the
# forward's limit. The SASS-level source pages go to $OUT as xz-compressed CSV.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runD.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s52e.so.xz flash_window_attn/_C.abi3.so
for k in fwd_ws kv_ws; do
  timeout 200 ncu -k regex:local_attn_$k -c 1 --section SourceCounters --section WarpStateStats \
    -o /tmp/s53d_$k python benchmarks/results/session46/ncu_local.py 0 bf16 > /tmp/ncu_$k.log 2>&1
  echo "ncu $k rc $? $(( $(date +%s) - t0 )) s"; tail -3 /tmp/ncu_$k.log
  ncu --import /tmp/s53d_$k.ncu-rep --page source --csv --print-source sass > /tmp/src_$k.csv 2> /tmp/src_$k.err
  echo "source page $k rc $? lines $(wc -l < /tmp/src_$k.csv)"; head -c 600 /tmp/src_$k.err
  head -2 /tmp/src_$k.csv | cut -c1-1500
  xz -T8 -6 -c /tmp/src_$k.csv > $OUT/runD-source-$k.csv.xz
  ncu --import /tmp/s53d_$k.ncu-rep > $OUT/runD-details-$k.txt 2>&1
done
ls -la $OUT
echo "end $(( $(date +%s) - t0 )) s"
