#!/usr/bin/env bash
# Session 33 run M (the review): build s33m = s33h + the op layer keeps converted bias / mask copies
# alive until it returns (the backward's preprocess runs beside the bm build that reads them).
# window_bitwise s33h vs s33m and the tests with fp16 / bf16 bias and mask dtypes, the tiled
# backward and the lifecycle (streams, graphs).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s33h_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runM-bitwise.txt 2>&1
python tools/device/unxz.py tools/device/s33m_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runM-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runM-bitwise.txt
tail -2 $OUT/runM-bitwise.txt
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_lifecycle.py -k "dtypes or tiled_backward or bias_mask or graph or stream or deterministic" > $OUT/runM-pytest.txt 2>&1; echo "rc $?" >> $OUT/runM-pytest.txt
tail -2 $OUT/runM-pytest.txt
