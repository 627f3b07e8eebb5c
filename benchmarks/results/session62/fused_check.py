"""Session 62 prototype check: the fused-dq key side (FWA_LOCAL_BWD_FUSED_DQ = 1 fp32 red.add,
2 int64 fixed point, 3 (run B) fp32 bulk reduction from shared memory, 5 (run D) one bulk
reduction per step of the summed consumers' partials) against the default backward (0) and a float64 dense reference.

Both warp-specialised sides are forced on every grid (FWA_LOCAL_BWD_{Q,KV}_WS=1, read once per
process) so that every case takes the residual-D backward, where the fused form applies (d = 64
bucket). Per case and mode: max |err| of dq, dk, dv against float64, whether dk / dv are bitwise
mode 0's, whether dq repeats bitwise.

    python benchmarks/results/session62/fused_check.py

Needs tools/patches/local-bwd-kv-ws-fused-dq-NOT-KEPT.patch applied (the switch is not in
main: NOTES.md session 62 runs A-D).
"""
import os
import sys

os.environ["FWA_LOCAL_BWD_Q_WS"] = "1"
os.environ["FWA_LOCAL_BWD_KV_WS"] = "1"
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
import flash_window_attn as fwa  # noqa: E402
from flash_window_attn.local_reference import local_attention_reference  # noqa: E402

MODES = [int(m) for m in os.environ.get("FUSED_MODES", "0,1,2").split(",")]
CASES = [  # name, B, H, Hkv, L, d, left, right, block
    ("block256x16", 1, 12, 12, 4096, 64, 15, 0, 256),
    ("causal", 2, 4, 4, 2048, 64, -1, 0, 1),
    ("win(100,20) gqa4 d40 L1000", 1, 8, 2, 1000, 40, 100, 20, 1),
    ("win(300,300) L1536", 2, 4, 4, 1536, 64, 300, 300, 1),
    ("full L17", 2, 2, 1, 17, 64, -1, -1, 1),
    ("block100x3 L1000 gqa2", 1, 4, 2, 1000, 56, 2, 0, 100),
]


def run(q, k, v, do, left, right, block, mode):
    os.environ["FWA_LOCAL_BWD_FUSED_DQ"] = str(mode)
    qq, kk, vv = (t.detach().clone().requires_grad_() for t in (q, k, v))
    if block == 1:
        out = fwa.sliding_window_attention(qq, kk, vv, window=(left, right))
    else:
        out = fwa.block_sliding_window_attention(qq, kk, vv, block, left + 1)
    dq, dk, dv = torch.autograd.grad(out, (qq, kk, vv), do)
    torch.cuda.synchronize()
    return out, dq, dk, dv


def main():
    bad = 0
    for dt in (torch.float16, torch.bfloat16):
        for name, B, H, Hkv, L, d, left, right, block in CASES:
            g = torch.Generator(device="cuda").manual_seed(L + d + H)
            q = torch.randn(B, H, L, d, device="cuda", dtype=dt, generator=g)
            k = torch.randn(B, Hkv, L, d, device="cuda", dtype=dt, generator=g)
            v = torch.randn(B, Hkv, L, d, device="cuda", dtype=dt, generator=g)
            do = torch.randn(B, H, L, d, device="cuda", dtype=dt, generator=g)
            q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
            ref = local_attention_reference(q64, k64, v64, left=left, right=right, block=block)
            ref = ref[0] if isinstance(ref, tuple) else ref
            rg = torch.autograd.grad(ref, (q64, k64, v64), do.double())
            res = {m: run(q, k, v, do, left, right, block, m) for m in MODES}
            again = {m: run(q, k, v, do, left, right, block, m) for m in MODES[1:]}
            line = [f"{name:28s} {str(dt)[6:]:9s}"]
            for m in MODES:
                errs = [(res[m][i + 1].double() - rg[i]).abs().max().item() for i in range(3)]
                line.append(f"m{m} dq {errs[0]:.2e} dk {errs[1]:.2e} dv {errs[2]:.2e}")
            e0 = (res[0][1].double() - rg[0]).abs().max().item()
            kv_same = all(torch.equal(res[m][i], res[0][i]) for m in MODES[1:] for i in (0, 2, 3))
            dq_diff = [not torch.equal(res[m][1], res[0][1]) for m in MODES[1:]]
            rep = [torch.equal(again[m][1], res[m][1]) for m in MODES[1:]]
            line.append(f"out/dk/dv==m0 {kv_same} dq!=m0 {dq_diff} repeat {rep}")
            ok = kv_same and all((res[m][1].double() - rg[0]).abs().max().item() <= 2 * e0 + 1e-3 for m in MODES[1:])
            ok = ok and (2 not in MODES or rep[MODES[1:].index(2)])
            bad += not ok
            print(" | ".join(line) + ("" if ok else "  <-- FAIL"), flush=True)
    print("FAILED" if bad else "ALL OK", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
