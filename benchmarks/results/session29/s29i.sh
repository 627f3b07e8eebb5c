#!/usr/bin/env bash
# Session 29 run I: run H's one failure (test_cuda_wgmma_forward_in_subprocess[2]: the child printed
# "ok 16", then exited with "terminate called without an active exception"): the test's five forms
# twice on s29g and once on s28k (= main), one process at a time.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28k_so/_C.abi3.so.xz /tmp/old.so
python tools/device/unxz.py tools/device/s29g_so/_C.abi3.so.xz /tmp/new.so
for so in new old new; do
  cp /tmp/$so.so flash_window_attn/_C.abi3.so
  echo "== $so"
  timeout 170 python -m pytest -q tests/test_window_attention.py -k "wgmma_forward_in_subprocess" 2>&1 | grep -E "passed|failed|terminate|exit code" | head -8
done
