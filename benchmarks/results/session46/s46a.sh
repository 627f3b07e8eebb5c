#!/usr/bin/env bash
# Session 46 run A (H200): main's kernels: build; graph timelines (ours, flex) of sliding configs 1
# and 0, fwd+bwd, bf16 (and ours fp16 at config 1); ncu (full set) of our four kernels at config 1 bf16.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s46a A
rm -f $OUT/s46a.so.xz
S=benchmarks/results/session46
timeout 150 python $S/graph_timeline.py 1 bf16 ours flex 2>&1 | grep -v -i warn | tee $OUT/runA-timeline.txt
timeout 60 python $S/graph_timeline.py 1 fp16 ours 2>&1 | grep -v -i warn | tee -a $OUT/runA-timeline.txt
timeout 150 python $S/graph_timeline.py 0 bf16 ours flex 2>&1 | grep -v -i warn | tee -a $OUT/runA-timeline.txt
echo "timeline done $(( $(date +%s) - t0 )) s"
timeout 200 ncu -k regex:local_attn -c 4 --set full python $S/ncu_local.py 1 bf16 > $OUT/runA-ncu.txt 2>&1
echo "ncu rc $? $(( $(date +%s) - t0 )) s"
grep -E "local_attn|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|Compute \(SM\) Throughput|Memory Throughput|L2 Hit|Block Limit|Dynamic Shared" $OUT/runA-ncu.txt | head -80
echo "end $(( $(date +%s) - t0 )) s"
