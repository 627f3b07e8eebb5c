#!/usr/bin/env bash
# Session 48 run C (H200, main's s47c build): where swinv2_base_window12_192's swapped training
# step goes (graph timeline, all package kernels), the op's per-kernel time at its four stage shapes,
# and the fwd+bwd graph step at those shapes under the dispatch switches.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s47c.so.xz /tmp/base.so
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 150 python tools/graph_step_timeline.py --model swinv2_base_window12_192 --variants swap,ceiling --top 40 2>&1 | grep -v -i warn > $OUT/runC-timeline.txt
echo "timeline rc $? $(( $(date +%s) - t0 )) s"
S="1024,4,144,32,16,12,v2 256,8,144,32,4,12,v2 64,16,144,32,1,12,v2 64,32,36,32,1,6,v2"
python benchmarks/results/session33/prof_kernels.py default $S 2>&1 | grep -v -i warn > $OUT/runC-prof.txt
echo "prof $(( $(date +%s) - t0 )) s"
G=benchmarks/results/session36/graph_ab.py
{
python $G default $S
FWA_WINDOW_KV_TAIL=0 python $G kvtail0 $S
FWA_WINDOW_BWD_Q_FOLD=0 python $G fold0 $S
FWA_WINDOW_PDL=0 python $G pdl0 $S
python $G default $S
} 2>&1 | grep -v -i warn > $OUT/runC-graph.txt
echo "done $(( $(date +%s) - t0 )) s"
