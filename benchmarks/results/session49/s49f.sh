#!/usr/bin/env bash
# Session 49 run F (H200): run E's bitwise step again (it could not load s49a's .so: the package now
# registers fake kernels for the batch ops, which that build lacks). The one-layer CPB op's outputs
# with s49a's build (main before the kernel bodies were shared; a copy of the package without the
# batch ops' fake kernels), then with s49e's: bitwise equal expected.
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runF.txt) 2>&1
rm -rf /tmp/oldpkg && mkdir -p /tmp/oldpkg && cp -r flash_window_attn /tmp/oldpkg/
python - <<'PY'
p = "/tmp/oldpkg/flash_window_attn/ops.py"
s = open(p).read()
a = s.index('@torch.library.register_fake("flash_window_attn::swin_cpb_bias_batch_forward")')
b = s.index('@torch.library.register_fake("flash_window_attn::dropout_keep_mask")')
open(p, "w").write(s[:a] + s[b:])
PY
fwa_unpack .devbuild/s49a.so.xz /tmp/oldpkg/flash_window_attn/_C.abi3.so
fwa_unpack .devbuild/s49e.so.xz flash_window_attn/_C.abi3.so
B=benchmarks/results/session47/cpb_bitwise.py
PYTHONPATH=/tmp/oldpkg python $B save /tmp/ref.pt 2>&1 | grep -v -i warn | tail -2
PYTHONPATH=$PWD python $B cmp /tmp/ref.pt 2>&1 | grep -v -i warn | tail -3
echo "done $(( $(date +%s) - t0 )) s"
