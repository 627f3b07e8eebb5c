#!/usr/bin/env bash
# Session 48 run B (H200): why run A's build was slower. Per-kernel GPU time (profiler) of s47c and
# the new build (default, FWA_WINDOW_BWD_Q_SUMS_D=0, FWA_WINDOW_PDL=0) and s47c with PDL off; then
# graph step time of the same settings.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s47c.so.xz /tmp/base.so
fwa_unpack .devbuild/s48a.so.xz /tmp/new.so
S="1024,3,256,32,16,16,v2 1024,4,144,32,16,12,v2"
P=benchmarks/results/session33/prof_kernels.py
G=benchmarks/results/session36/graph_ab.py
{
cp /tmp/base.so flash_window_attn/_C.abi3.so
python $P base $S; FWA_WINDOW_PDL=0 python $P base-nopdl $S
python $G base $S; FWA_WINDOW_PDL=0 python $G base-nopdl $S
cp /tmp/new.so flash_window_attn/_C.abi3.so
python $P new $S; FWA_WINDOW_BWD_Q_SUMS_D=0 python $P new-sumsd0 $S; FWA_WINDOW_PDL=0 python $P new-nopdl $S
python $G new $S; FWA_WINDOW_BWD_Q_SUMS_D=0 python $G new-sumsd0 $S; FWA_WINDOW_PDL=0 python $G new-nopdl $S
} 2>&1 | grep -v -i warn | tee $OUT/runB-prof.txt
echo "done $(( $(date +%s) - t0 )) s"
