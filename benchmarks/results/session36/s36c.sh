#!/usr/bin/env bash
# Session 36 run C: s36c = s36a with the copy cursor's per-lane source pointers advanced per unit
# and (b, h) advanced per item with no division (run B: 118 instructions per unit on copies, 90 per
# unit of per-item work, spilled ldmatrix offsets). Bitwise KV_TAIL=0 vs default; kernel times;
# graph step A/B; kv_tail tests; ncu of the tail kernel.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runC-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runC-build.txt
grep -E " error|error:" $OUT/runC-build.txt | head -20
strip --strip-all -o /tmp/s36c.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/s36c.so > $OUT/s36c_C.abi3.so.xz
timeout 200 python -m pytest -q -m cuda tests/test_window_attention.py -k "kv_tail" -x > $OUT/runC-pytest-tail.txt 2>&1; echo "rc $?" >> $OUT/runC-pytest-tail.txt
tail -5 $OUT/runC-pytest-tail.txt
FWA_WINDOW_KV_TAIL=0 python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runC-bitwise.txt 2>&1
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runC-bitwise.txt 2>&1; echo "KV_TAIL default vs 0: cmp rc $?" >> $OUT/runC-bitwise.txt
grep -v "^ *equal" $OUT/runC-bitwise.txt | tail -12
for e in FWA_WINDOW_KV_TAIL=0 FWA_WINDOW_KV_TAIL=1; do
  env $e python benchmarks/results/session33/prof_kernels.py "$e" 3 2>&1 | grep -v -i warn | grep -E "kv_|q_wg|dsum|sum of"
done | tee $OUT/runC-prof.txt
for round in 1 2; do
  for e in FWA_WINDOW_KV_TAIL=0 FWA_WINDOW_KV_TAIL=1; do
    env $e python benchmarks/results/session36/graph_ab.py $e 3 2>&1 | grep -v -i warn
  done
done | tee $OUT/runC-graph.txt
NCU=$(which ncu || ls /usr/local/cuda/bin/ncu)
FWA_WINDOW_PDL=0 timeout 200 $NCU --clock-control none --kernel-name regex:kv_tail --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section InstructionStats --section SchedulerStats --section LaunchStats --section SourceCounters \
  -o /tmp/tailc python benchmarks/results/session33/one_step.py 3 > $OUT/runC-ncu-log.txt 2>&1
$NCU -i /tmp/tailc.ncu-rep --print-details all > $OUT/runC-ncu-tail.txt 2>&1
$NCU -i /tmp/tailc.ncu-rep --page source --csv --print-source sass > $OUT/runC-ncu-source.csv 2>&1
grep -E "Duration|Executed Instructions |Issued Warp Per|DRAM Throughput|Registers Per|Achieved Occupancy" $OUT/runC-ncu-tail.txt | head -8
