#!/usr/bin/env bash
# Session 52 run B (profile, main's kernels = .devbuild/s51d.so.xz): ncu of the sliding op's four
# fwd+bwd kernels at block256x16 bf16 (config 0): the full set plus each pipe's utilisation
# (tensor, MUFU (xu), FMA, ALU), issue activity and warp stall reasons: is the d = 64
# warp-specialised forward (347 TFLOP/s) limited by the exponentials, the issue slots or latency?
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runB.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s51d.so.xz flash_window_attn/_C.abi3.so
M=sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active
M=$M,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_xu_cycles_active.avg.pct_of_peak_sustained_active
M=$M,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active
M=$M,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed.sum,sm__inst_executed_pipe_xu.sum
M=$M,sm__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum
M=$M,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum
timeout 300 ncu -k regex:local_attn -c 4 --set full --metrics $M -o /tmp/s52b python benchmarks/results/session46/ncu_local.py 0 bf16 > $OUT/runB-ncu-log.txt 2>&1
ncu --import /tmp/s52b.ncu-rep > $OUT/runB-ncu.txt 2>&1
ncu --import /tmp/s52b.ncu-rep --page raw --csv > /tmp/raw.csv 2>&1
python - > $OUT/runB-raw.txt <<'PY'
import csv
rows = list(csv.reader(open('/tmp/raw.csv')))
hdr = rows[0]
for r in rows[2:]:
    name = r[hdr.index('Kernel Name')][:60]
    print('==', name)
    for h, v in zip(hdr, r):
        if ('stall' in h and 'pct' not in h and 'ratio' in h) or 'pipe_' in h or 'issue_active' in h or 'inst_executed.sum' in h or 'gpu__time_duration.sum' in h:
            print('  ', h, v)
PY
wc -l $OUT/runB-raw.txt
echo "ncu rc $? $(( $(date +%s) - t0 )) s"
grep -E "^  void|local_attn|Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Compute \(SM\) Throughput|Memory Throughput|L2 Hit|Dynamic Shared|gmma_cycles|pipe_xu|pipe_fma|pipe_alu|inst_executed|issue_active|per_second|Stall|stall" $OUT/runB-ncu.txt | head -150
echo "end $(( $(date +%s) - t0 )) s"
