#!/usr/bin/env bash
# Session 30 run C: main 73828e6 (s30e: session 29's kernels + the CPB op's C++ autocast guard; the
# modules call the op without a Python autocast context): CUDA tests of the modules, swap, CPB,
# compile / opcheck and dropout; then module_host, old (s29g + the old _swin_common.py, the
# session's swin_common_autocast.patch reversed; run as it was, with a full copy) and new,
# 3 rounds each, interleaved.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s29g_so/_C.abi3.so.xz /tmp/old.so
python tools/device/unxz.py tools/device/s30e_so/_C.abi3.so.xz /tmp/new.so
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 300 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py tests/test_compile_opcheck.py tests/test_dropout.py 2>&1 | tail -4
for r in 1 2 3; do
  patch -s -p1 -R < benchmarks/results/session30/swin_common_autocast.patch; cp /tmp/old.so flash_window_attn/_C.abi3.so
  echo "== old host round $r"; timeout 60 python tools/module_host.py --iters 400 2>&1 | grep "host issue"
  patch -s -p1 < benchmarks/results/session30/swin_common_autocast.patch; cp /tmp/new.so flash_window_attn/_C.abi3.so
  echo "== new host round $r"; timeout 60 python tools/module_host.py --iters 400 2>&1 | grep "host issue"
done
