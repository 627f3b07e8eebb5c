#!/usr/bin/env bash
# Session 42 run A (timing only, s41e's kernels): the fwd+bwd timeline at config 3 and V1
# (1024, 4, 144), fp16 and bf16 (session42/timeline_bwd.py).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s41e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for dt in fp16 bf16; do
  python benchmarks/results/session42/timeline_bwd.py s41e $dt 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
done | tee $OUT/runA-timeline.txt
