"""Backward check of the small-window path, N <= 64 (s22smallgrad.py LABEL SAVE|CMP PATH): check_problem (float64 rule)
on N <= 64 cases (V1 and V2, shift / dead masks, d 16-64), and the gradients saved (SAVE) or compared (CMP) with another process's."""
import sys, hashlib
import torch
from flash_window_attn.testing import make_problem, check_problem, run_ours
from flash_window_attn.ops import window_attention

label, mode, path = sys.argv[1], sys.argv[2], sys.argv[3]
cases = [(256, 3, 64, 32, "bfloat16", "v2", "shift", "normal"), (128, 4, 49, 32, "float16", "v2", "shift", "normal"),
         (96, 3, 49, 32, "bfloat16", "v1", "shift", "normal"), (64, 3, 64, 24, "float16", "v2", None, "clustered"),
         (40, 2, 33, 16, "bfloat16", "v2", "shift", "normal"), (64, 4, 64, 64, "float16", "v1", None, "normal"),
         (32, 2, 64, 64, "bfloat16", "v2", "shift", "normal"), (16, 2, 7, 32, "float16", "v2", "dead", "normal"),
         (4, 2, 64, 32, "bfloat16", "v2", "shift", "normal")]
saved = {} if mode == "SAVE" else torch.load(path)
allok = True
for i, (B_, H, N, d, dt, ver, mask, values) in enumerate(cases):
    pr = make_problem(B_, H, N, d, dtype=getattr(torch, dt), device="cuda", version=ver, bias="hnn", mask=mask,
                      nW=4 if mask else 1, layout="packed" if i % 2 else "contiguous", values=values, seed=700 + i)
    ok, lines = check_problem(pr)
    allok &= ok
    print(f"[{label}] case {i} {pr.desc}: {'ok' if ok else 'FAIL'}", flush=True)
    for l in lines[:6]:
        print("   ", l)
    ours = run_ours(pr, window_attention)
    grads = {k: v.detach().float().cpu() for k, v in ours.items() if torch.is_tensor(v)}
    ours2 = run_ours(pr, window_attention)
    det = all(torch.equal(grads[k], ours2[k].detach().float().cpu()) for k in grads)
    msg = f"    run-to-run bitwise {det}"
    if mode == "SAVE":
        saved[i] = grads
    else:
        diffs = []
        for k, v in grads.items():
            o = saved[i][k]
            same = torch.equal(v, o)
            rel = ((v - o).abs().max() / o.abs().max().clamp_min(1e-30)).item() if not same else 0.0
            diffs.append(f"{k}:{'=' if same else f'{rel:.1e}'}")
        msg += "  vs other: " + " ".join(diffs)
    print(msg, flush=True)
if mode == "SAVE":
    torch.save(saved, path)
print(f"[{label}] all ok: {allok}")
