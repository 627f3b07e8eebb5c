"""DistributedDataParallel with a swapped model: a two-process training step gives the same
gradients as one process on the combined batch.

CPU (in CI): two processes, gloo backend. CUDA (marked): two processes on two GPUs with NCCL, or,
with a single GPU, two processes sharing it through gloo (the issue allows that for correctness).
Each rank runs the same swapped timm Swin V2 model on its half of the batch; DDP averages the
gradients, which must equal the gradients of the mean loss over the whole batch in one process.
"""

from __future__ import annotations

import os
import sys
import tempfile

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

timm = pytest.importorskip("timm")
from timm.models import swin_transformer_v2 as timm_v2  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _swin_helpers import perturb_parameters  # noqa: E402

from flash_window_attn import swap_window_attention  # noqa: E402

SMALL = dict(img_size=64, patch_size=4, window_size=8, embed_dim=48, depths=(2, 2), num_heads=(3, 6),
             num_classes=10, drop_path_rate=0.0)
BATCH = 4


def _model():
    torch.manual_seed(0)
    m = timm_v2.SwinTransformerV2(**SMALL)
    perturb_parameters(m, seed=1)
    n = swap_window_attention(m, verbose=False)._flash_window_attn_swapped
    assert n == 4, n
    return m


def _batch():
    g = torch.Generator().manual_seed(123)
    x = torch.randn(BATCH, 3, 64, 64, generator=g)
    y = torch.randint(0, 10, (BATCH,), generator=g)
    return x, y


def _no_tf32():
    # fp32 everywhere on CUDA: cuDNN convolutions default to TF32, whose rounding would swamp the
    # reduction-order differences this test allows for
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def _step(model, x, y):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()


def _worker(rank, world, init_file, out_dir, device_kind, backend):
    dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        if device_kind == "cuda":
            _no_tf32()
            dev = torch.device("cuda", rank % torch.cuda.device_count())
            torch.cuda.set_device(dev)
        else:
            dev = torch.device("cpu")
            torch.set_num_threads(1)
        model = _model().to(dev)
        ddp = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[dev.index] if dev.type == "cuda" else None)
        x, y = _batch()
        half = BATCH // world
        xs, ys = x[rank * half:(rank + 1) * half].to(dev), y[rank * half:(rank + 1) * half].to(dev)
        _step(ddp, xs, ys)
        if rank == 0:
            grads = {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}
            torch.save(grads, os.path.join(out_dir, "ddp_grads.pt"))
    finally:
        dist.destroy_process_group()


def _run(device_kind, backend, world=2):
    with tempfile.TemporaryDirectory() as tmp:
        init_file = os.path.join(tmp, "init")
        mp.spawn(_worker, args=(world, init_file, tmp, device_kind, backend), nprocs=world, join=True)
        ddp_grads = torch.load(os.path.join(tmp, "ddp_grads.pt"))

    dev = torch.device("cuda", 0) if device_kind == "cuda" else torch.device("cpu")
    saved = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    if device_kind == "cuda":
        _no_tf32()
    try:
        model = _model().to(dev)
        x, y = _batch()
        _step(model, x.to(dev), y.to(dev))
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
    ref = {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}

    assert ddp_grads.keys() == ref.keys()
    assert len(ref) > 0
    attn_grads = [n for n in ref if ".attn." in n and ref[n].abs().max() > 0]
    assert attn_grads, "no attention parameter received a gradient"
    for n, g in ref.items():
        # gradients of the same math in another batch split: fp32 reduction-order differences only,
        # relative to the tensor's largest entry (an element near 0 has no relative accuracy)
        atol = 1e-5 * max(g.abs().max().item(), 1e-3)
        torch.testing.assert_close(ddp_grads[n], g, rtol=1e-4, atol=atol, msg=lambda m: f"{n}: {m}")


def test_ddp_two_processes_cpu_gloo():
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    _run("cpu", "gloo")


@pytest.mark.cuda
def test_ddp_two_processes_cuda():
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    if torch.cuda.device_count() >= 2 and dist.is_nccl_available():
        _run("cuda", "nccl")
    elif dist.is_gloo_available():
        _run("cuda", "gloo")  # one GPU shared by both processes
    else:
        pytest.skip("needs NCCL with 2 GPUs, or gloo")
