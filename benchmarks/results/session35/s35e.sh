#!/usr/bin/env bash
# Session 35 run E: build s35e = s35d with the tail role's elementwise work as one instance (run-time
# mode flags; the kernel's code 6408 -> 5728 instructions, the main path's 3240). Kernel times, graph
# step A/B (FWA_WINDOW_KV_TAIL=0 / default) at bench config 3, and ncu of the key side both ways.
set -u
export PYTHONPATH=$PWD
NCU=$(which ncu || ls /usr/local/cuda/bin/ncu)
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runE-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runE-build.txt
strip --strip-all -o /tmp/s35e.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/s35e.so > $OUT/s35e_C.abi3.so.xz
for round in 1 2; do
  for e in FWA_WINDOW_KV_TAIL=0 FWA_WINDOW_KV_TAIL=1; do
    env $e python -c "
import sys, torch; sys.path.insert(0, 'benchmarks'); sys.path.insert(0, 'benchmarks/results/session33')
import bench_window_attention as bw; from step_graph_ab import graph_step_us
c = bw.CONFIGS[3]
for dt in (torch.float16, torch.bfloat16):
    print(f'[$e] {c.name:28s} {str(dt)[6:]:9s} fwd+bwd step (graph) {graph_step_us(c, dt):8.1f} us', flush=True)
" 2>&1 | grep -v -i warn
  done
done | tee $OUT/runE-graph.txt
for e in 0 1; do
  FWA_WINDOW_KV_TAIL=$e FWA_WINDOW_PDL=0 timeout 150 $NCU --clock-control none --kernel-name regex:bwd_kv_kernel --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section InstructionStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --metrics smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio \
    python benchmarks/results/session33/one_step.py 3 > $OUT/runE-ncu-tail$e.txt 2>&1
  echo "== KV_TAIL=$e rc $?"
  grep -E "Duration|Executed Instructions |Achieved Occupancy|Issued Warp Per|L2 Hit Rate|DRAM Throughput|L1/TEX Hit" $OUT/runE-ncu-tail$e.txt | head -10
  grep -E "issue_stalled" $OUT/runE-ncu-tail$e.txt | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | sort -k3 -n -r | head -10
done
