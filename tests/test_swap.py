"""swap_window_attention on whole timm and transformers Swin models (built from config, no downloads).

The swapped model's logits and every parameter gradient equal those of the unswapped deep copy;
parameter names, order and objects, state_dict keys, train/eval mode and requires_grad flags are
unchanged; unsupported modules are left alone with a warning.
"""

from __future__ import annotations

import copy
import logging
import warnings

import pytest
import torch
from torch import nn

from flash_window_attn.modules import WindowAttention, WindowAttentionV1
from flash_window_attn.swap import swap_window_attention

from _swin_helpers import (
    LazyModule,
    assert_autocast_rule,
    assert_same_run,
    autocast_error,
    close,
    perturb_parameters,
    require_op_dropout,
)

timm_v2 = LazyModule("timm.models.swin_transformer_v2")
timm_v1 = LazyModule("timm.models.swin_transformer")

TOL = 2e-5
GRAD_TOL = 2e-4

SMALL = dict(img_size=64, patch_size=4, window_size=8, embed_dim=48, depths=(2, 2), num_heads=(3, 6),
             num_classes=10, drop_path_rate=0.0)


def seeded(build, seed: int = 0):
    """build() with torch's global generator seeded (and restored after): the models' own
    initialisation draws from it, and a test's model must not depend on which tests ran before."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def timm_v2_model(**kw):
    m = seeded(lambda: timm_v2.SwinTransformerV2(**{**SMALL, **kw}))
    perturb_parameters(m, seed=1)
    return m


def timm_v1_model(**kw):
    m = seeded(lambda: timm_v1.SwinTransformer(**{**SMALL, **kw}))
    perturb_parameters(m, seed=2)
    return m


def hf_config(kind, **kw):
    transformers = pytest.importorskip("transformers")
    Config = transformers.Swinv2Config if kind == "v2" else transformers.SwinConfig
    base = dict(image_size=64, patch_size=4, embed_dim=48, depths=[2, 2], num_heads=[3, 6],
                window_size=8, num_labels=10, drop_path_rate=0.0)
    return Config(**{**base, **kw})


def hf_model(name, **kw):
    transformers = pytest.importorskip("transformers")
    cls = getattr(transformers, name)
    config = hf_config("v2" if "v2" in name else "v1", **kw)
    m = seeded(lambda: cls(config))
    perturb_parameters(m, seed=3)
    return m


def images(n=2, seed=0):
    return torch.randn((n, 3, 64, 64), generator=torch.Generator().manual_seed(seed))


def logits(out):
    if isinstance(out, torch.Tensor):
        return out
    if getattr(out, "logits", None) is not None:
        return out.logits
    return out.last_hidden_state


def swapped_copy(model, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a supported model swaps without any warning
        return swap_window_attention(copy.deepcopy(model), verbose=False, **kw)


MODELS = {
    "timm_v2": timm_v2_model,
    "timm_v1": timm_v1_model,
    "hf_swinv2_cls": lambda: hf_model("Swinv2ForImageClassification"),
    "hf_swinv2_model": lambda: hf_model("Swinv2Model"),
    "hf_swin_cls": lambda: hf_model("SwinForImageClassification"),
    "hf_swin_model": lambda: hf_model("SwinModel"),
}


def _dropin_types():
    types = [WindowAttention, WindowAttentionV1]
    try:
        from flash_window_attn import hf

        types += [hf.FlashSwinv2SelfAttention, hf.FlashSwinAttention]
    except ImportError:
        pass
    return tuple(types)


@pytest.mark.parametrize("name", list(MODELS))
def test_swapped_model_matches(name):
    make = MODELS[name]
    ref = make()
    ours = swapped_copy(ref)
    assert ours._flash_window_attn_swapped == 4  # depths (2, 2)
    assert sum(isinstance(m, _dropin_types()) for m in ours.modules()) == 4
    assert list(ref.state_dict()) == list(ours.state_dict())
    assert [(n, p.shape) for n, p in ref.named_parameters()] == \
        [(n, p.shape) for n, p in ours.named_parameters()]
    assert [n for n, _ in ref.named_buffers()] == [n for n, _ in ours.named_buffers()]
    grads = assert_same_run(ref, ours, (images(),), tol=TOL, grad_tol=GRAD_TOL, out_fn=logits)
    # not vacuous: the attention output reaches the logits (every value projection gets a real
    # gradient) and the query projections get a gradient
    top = max(g.abs().max().item() for g in grads.values())
    v_weights = [n for n in grads if n.endswith("weight") and
                 any(k in n for k in (".attn.qkv.", ".value.", ".v_proj."))]
    q_weights = [n for n in grads if n.endswith("weight") and any(k in n for k in (".query.", ".q_proj."))]
    assert len(v_weights) == 4
    for n in v_weights:
        assert grads[n].abs().max().item() > 1e-4 * top, n
    for n in q_weights:
        assert grads[n].abs().max().item() > 0, n
    ref.eval()
    ours.eval()
    with torch.no_grad():
        x = images(seed=1)
        close(logits(ours(x)), logits(ref(x)), TOL)
        close(logits(ours(x)), logits(ref(x)), TOL)  # again, with the bias caches filled


def test_swap_keeps_parameters_modes_and_flags():
    model = timm_v2_model()
    model.train()
    model.layers[0].blocks[1].attn.eval()
    model.layers[1].blocks[0].attn.cpb_mlp.requires_grad_(False)
    model.layers[1].blocks[0].attn.logit_scale.requires_grad_(False)
    before_params = list(model.named_parameters())
    before_buffers = [(n, b) for n, b in model.named_buffers()]
    modes = {n: m.training for n, m in model.named_modules()}
    hook_calls = []
    model.layers[0].blocks[0].attn.register_forward_hook(lambda *a: hook_calls.append(1))

    out = swap_window_attention(model, verbose=False)
    assert out is model and model._flash_window_attn_swapped == 4
    after_params = list(model.named_parameters())
    assert [n for n, _ in before_params] == [n for n, _ in after_params]
    assert all(a is b for (_, a), (_, b) in zip(before_params, after_params))  # no new parameters
    assert all(a is b for (_, a), (_, b) in zip(before_buffers, model.named_buffers()))
    assert {n: m.training for n, m in model.named_modules()} == modes
    assert not model.layers[0].blocks[1].attn.training
    assert not model.layers[1].blocks[0].attn.logit_scale.requires_grad
    assert all(not p.requires_grad for p in model.layers[1].blocks[0].attn.cpb_mlp.parameters())
    assert isinstance(model.layers[0].blocks[0].attn, WindowAttention)
    model(images())
    assert hook_calls  # hooks registered on the original module still run


def test_swap_is_idempotent_and_reports(caplog, capsys):
    model = timm_v1_model()
    swap_window_attention(model)
    assert "replaced 4 window-attention module(s)" in capsys.readouterr().err
    with caplog.at_level(logging.INFO, logger="flash_window_attn"):
        swap_window_attention(model)
    assert model._flash_window_attn_swapped == 0
    assert "replaced 0" in caplog.text
    assert capsys.readouterr().err == ""  # logged (INFO shown), not printed twice
    swap_window_attention(model, verbose=False)
    assert capsys.readouterr().err == ""


def test_swap_root_module_and_shared_module():
    attn = timm_v2.WindowAttention(64, (8, 8), 2)
    perturb_parameters(attn)
    ref = copy.deepcopy(attn)
    new = swap_window_attention(attn, verbose=False)
    assert isinstance(new, WindowAttention) and new._flash_window_attn_swapped == 1
    x = torch.randn(4, 64, 64)
    with torch.no_grad():
        close(new(x), ref(x), TOL)

    shared = timm_v2.WindowAttention(64, (8, 8), 2)
    holder = nn.ModuleDict({"a": shared, "b": nn.Sequential(shared)})
    swap_window_attention(holder, verbose=False)
    assert holder._flash_window_attn_swapped == 1
    assert holder["a"] is holder["b"][0] and isinstance(holder["a"], WindowAttention)


def test_unsupported_modules_left_alone_with_warning():
    # embed_dim 60 with 3 heads: head_dim 20 in stage 0 (unsupported), 40 in stage 1 (supported)
    ref = timm_v2_model(embed_dim=60, num_heads=(3, 3))
    model = copy.deepcopy(ref)
    with pytest.warns(UserWarning, match=r"layers\.0\.blocks\.[01]\.attn .*head_dim 20") as rec:
        swap_window_attention(model, verbose=False)
    assert sum("left layers.0.blocks" in str(w.message) for w in rec) == 2
    assert model._flash_window_attn_swapped == 2
    assert type(model.layers[0].blocks[0].attn) is timm_v2.WindowAttention
    assert type(model.layers[1].blocks[1].attn) is WindowAttention
    assert_same_run(ref, model, (images(),), tol=TOL, grad_tol=GRAD_TOL)

    class Custom(timm_v2.WindowAttention):
        pass

    holder = nn.Sequential(Custom(64, (8, 8), 2))
    with pytest.warns(UserWarning, match=r"left 0 .*subclasses"):
        swap_window_attention(holder, verbose=False)
    assert type(holder[0]) is Custom


def test_swap_then_change_dtype():
    """Nothing is captured at swap time: moving the swapped model to float64 works (and is tight)."""
    ref = timm_v2_model()
    ours = swapped_copy(ref)
    ref.double()
    ours.double()
    # the op clamps at float32(ln 100); keep the logit scales under it for a float64 comparison
    with torch.no_grad():
        for m in (ref, ours):
            for n, p in m.named_parameters():
                if n.endswith("logit_scale"):
                    p.clamp_(max=4.5)
    x = images().double()
    with torch.no_grad():
        close(ours(x), ref(x), 1e-9)


def test_model_bias_cache_invalidation():
    """Eval-mode cache: same results, invalidated by an optimizer step and by set_input_size."""
    ref = timm_v2_model()
    ours = swapped_copy(ref)
    x = images(seed=2)
    ref.eval()
    ours.eval()
    with torch.no_grad():
        close(ours(x), ref(x), TOL)
        attn = ours.layers[0].blocks[0].attn
        b = attn.relative_position_bias()
        assert attn.relative_position_bias() is b

    for m in (ref, ours):
        m.train()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        m(x).square().sum().backward()
        opt.step()
        m.eval()
    with torch.no_grad():
        assert attn.relative_position_bias() is not b
        close(ours(x), ref(x), 1e-4)

    # a new window size (timm's set_input_size calls set_window_size on each attention module)
    for m in (ref, ours):
        m.set_input_size(img_size=(64, 64), window_size=(4, 4))  # (timm needs img_size here)
    assert ours.layers[0].blocks[0].attn.window_size == (4, 4)
    with torch.no_grad():
        close(ours(x), ref(x), 1e-4)


def test_hf_output_attentions_through_model():
    for name in ("Swinv2Model", "SwinModel"):
        ref = hf_model(name)
        if name == "SwinModel":
            ref.set_attn_implementation("eager")  # SDPA returns no attention weights
        ref.eval()
        ours = swapped_copy(ref)
        with torch.no_grad():
            a = ref(images(), output_attentions=True)
            b = ours(images(), output_attentions=True)
        assert len(a.attentions) == len(b.attentions) > 0
        for x, y in zip(a.attentions, b.attentions):
            close(y, x, TOL)
        close(b.last_hidden_state, a.last_hidden_state, TOL)


def test_hf_swinv2_shift_mask_is_used_twice_through_model():
    """A Swinv2 model with shifted windows: the drop-in reproduces transformers' doubled mask."""
    ref = hf_model("Swinv2ForImageClassification", window_size=4)  # 16x16 grid: shifts in both stages
    ours = swapped_copy(ref)
    shifted = [m for m in ref.modules() if type(m).__name__ == "Swinv2Layer" and m.shift_size > 0]
    assert shifted
    assert_same_run(ref, ours, (images(),), tol=TOL, grad_tol=GRAD_TOL, out_fn=logits)


def test_swapped_model_dropout_reproducible():
    require_op_dropout()
    ref = timm_v2_model(attn_drop_rate=0.2)
    model = swapped_copy(ref)
    model.train()
    x = images(seed=3)
    torch.manual_seed(7)
    a = model(x)
    torch.manual_seed(7)
    b = model(x)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    torch.manual_seed(8)
    assert not torch.equal(model(x), a)
    model.eval()
    ref.eval()
    with torch.no_grad():
        close(model(x), ref(x), TOL)  # eval: no dropout in either


# ------------------------------------------------------------------------------------------------
# CUDA: the swapped model under fp16 / bf16 autocast against the fp32 original
# ------------------------------------------------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", list(MODELS))
def test_cuda_autocast_swapped_model(name, dtype, request):
    if name == "hf_swinv2_model" and dtype == torch.float16:
        # Measured on the H100 (session 6): with this model (seed 0) the last block's key.weight
        # gradient has a max-abs error of 2.1e-2 against 2 x 6.7e-3 + 2e-3 for the original fp16
        # model (the other five models 0.28-0.78 times the bound). Not the attention kernels: on the inputs each attention call of this
        # run receives, our dq / dk / dv are 5-10x closer to float64 than the original module's
        # fp16 formula, and forcing the (then less exact) tiled backward left the ratio unchanged.
        # The swapped module differs outside the kernels: it evaluates the position-bias MLP in fp32
        # where the original runs it under autocast in fp16. Control (session 7, H100): with that
        # MLP in fp16 this case is at 0.73x; over model seeds 0-3, fp32 bias 1.37 / 0.51 / 0.47 /
        # 0.77x vs fp16 bias 0.73 / 0.46 / 0.58 / 0.72x: a max-abs outlier of seed 0, not a
        # systematic loss. The fp32 bias is kept (see README); the case stays a visible xfail.
        # Not strict since session 19: on an H100 the N <= 64 forward now runs on wgmma, whose
        # different (not larger: tests/test_window_attention.py) rounding puts this outlier within
        # the rule (XPASS); with FWA_WINDOW_WGMMA_SMALL=0, and on other GPUs, it fails as before.
        request.applymarker(pytest.mark.xfail(
            strict=False, reason="HF Swinv2Model fp16, seed 0: last block key.weight max-abs error 1.37x the "
                                 "rule with the fp32 position bias and the mma.sync forward (0.73x with an fp16 "
                                 "bias; within the rule with the H100's wgmma forward)"))
    ref = MODELS[name]().cuda()
    ours = swapped_copy(ref)  # swapped after .cuda()
    x = images(8).cuda()

    # fp16 training runs with a loss scale (torch.amp.GradScaler, initial scale 2**16): without one,
    # the gradients of this small loss are fp16 subnormals inside every attention backward (eager
    # and ours alike) and the comparison would measure underflow, not the kernels. Same here:
    # scale the loss, unscale the gradients in fp32, as GradScaler does.
    loss_scale = 2.0 ** 16 if dtype == torch.float16 else 1.0

    def run(model, amp):
        model.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype, enabled=amp):
            y = logits(model(x))
        (y.float().square().mean() * loss_scale).backward()
        res = {n: p.grad.float() / loss_scale for n, p in model.named_parameters() if p.grad is not None}
        assert all(g.isfinite().all() for g in res.values()), "loss scale overflowed"
        res["output"] = y.detach().float()
        return res

    ref32, ref_lp, ours_lp = run(ref, False), run(ref, True), run(ours, True)
    assert_autocast_rule(ours_lp, ref_lp, ref32, atol=2e-3 if dtype == torch.float16 else 1e-2)


@pytest.mark.cuda
def test_cuda_swap_before_cuda_and_compile():
    """Swap on CPU, then .cuda(), then torch.compile(model): eager and compiled logits of the
    swapped model are within the original's own bf16 error of the fp32 original."""
    ref = timm_v2_model()
    ours = swapped_copy(ref).cuda()
    ref = ref.cuda()
    ref.eval()
    ours.eval()
    x = images(8).cuda()
    compiled = torch.compile(ours)
    with torch.no_grad():
        y32 = ref(x).float()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y_lp = ref(x).float()
            eager = ours(x).float()
            got = compiled(x).float()
    base = autocast_error(y_lp, y32)
    assert autocast_error(eager, y32) <= 2 * base + 1e-2
    assert autocast_error(got, y32) <= 2 * base + 1e-2


# ------------------------------------------------------------------------------------------------
# The training step's position biases of all Swin V2 layers in one batched op call
# ------------------------------------------------------------------------------------------------

BATCH_MODELS = {"timm_v2": timm_v2_model, "hf_swinv2_cls": lambda: hf_model("Swinv2ForImageClassification")}


class _Counts:
    """Counts the batched Function's forwards / backwards and the per-layer bias computations."""

    def __init__(self, monkeypatch):
        from flash_window_attn import _swin_common as common

        self.batch = self.batch_bwd = self.layer = 0
        apply, backward, cpb_bias = common._CpbBatch.apply, common._CpbBatch.backward, common.cpb_bias

        def counted_apply(*a):
            self.batch += 1
            return apply(*a)

        def counted_backward(ctx, *g):
            self.batch_bwd += 1
            return backward(ctx, *g)

        def counted_cpb_bias(*a, **k):
            self.layer += 1
            return cpb_bias(*a, **k)

        monkeypatch.setattr(common._CpbBatch, "apply", counted_apply)
        monkeypatch.setattr(common._CpbBatch, "backward", staticmethod(counted_backward))
        monkeypatch.setattr(common, "cpb_bias", counted_cpb_bias)


def _sgd_steps(model, x, steps, amp_device=None):
    """`steps` SGD steps of model on x; per step the output, every gradient and the parameters."""
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    out = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(amp_device or "cpu", dtype=torch.bfloat16, enabled=amp_device is not None):
            y = logits(model(x))
        y.float().square().mean().backward()
        res = {"output": y.detach().clone()}
        res.update({f"grad {n}": p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
        opt.step()
        res.update({n: p.detach().clone() for n, p in model.named_parameters()})
        out.append(res)
    return out


@pytest.mark.parametrize("device", [pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.cuda)])
@pytest.mark.parametrize("name", list(BATCH_MODELS))
def test_cpb_batch_is_bitwise_the_per_layer_step(name, device, monkeypatch):
    """A swapped Swin V2 model's training step computes all its layers' position biases in one
    batched op call (one batched backward), and its outputs, gradients and the parameters after
    two SGD steps are bitwise those of each layer computing its own (FWA_CPB_BATCH off); on CUDA
    under bf16 autocast (the batch runs the fused kernels there, batched launches)."""
    from flash_window_attn import _swin_common as common

    base = BATCH_MODELS[name]()
    x = images(2, seed=5).to(device)
    amp = "cuda" if device == "cuda" else None
    runs = {}
    for on in (False, True):
        monkeypatch.setattr(common, "CPB_BATCH", on)
        counts = _Counts(monkeypatch)
        model = swapped_copy(base).to(device).train()
        runs[on] = _sgd_steps(model, x, 2, amp)
        n_layers = sum(1 for m in model.modules() if hasattr(type(m), "_cpb_batch_inputs"))
        assert n_layers == 4
        if on:
            assert (counts.batch, counts.batch_bwd, counts.layer) == (2, 2, 0)
        else:
            assert (counts.batch, counts.layer) == (0, 2 * n_layers)
    for step, (a, b) in enumerate(zip(runs[True], runs[False])):
        assert a.keys() == b.keys()
        for key in b:
            assert torch.equal(a[key], b[key]), f"step {step}: {key} differs"


@pytest.mark.parametrize("reentrant", [False, True], ids=["non-reentrant", "reentrant"])
def test_cpb_batch_with_activation_checkpointing(reentrant, monkeypatch):
    """timm's grad checkpointing recomputes each block in the backward: non-reentrant recomputation
    must save the tensors the forward saved (the layer takes the batch's bias again), reentrant
    backpropagates each block on its own (the batched backward runs once per block, adding that
    block's gradients). Both give bitwise the gradients of the plain per-layer step."""
    from flash_window_attn import _swin_common as common

    timm_layers = pytest.importorskip("timm.layers")
    base = timm_v2_model()
    x = images(2, seed=6)
    monkeypatch.setattr(common, "CPB_BATCH", False)
    ref = swapped_copy(base).train()
    logits(ref(x)).square().mean().backward()
    monkeypatch.setattr(common, "CPB_BATCH", True)
    counts = _Counts(monkeypatch)
    before = timm_layers.use_reentrant_ckpt()
    timm_layers.set_reentrant_ckpt(reentrant)
    try:
        model = swapped_copy(base).train()
        model.set_grad_checkpointing(True)
        logits(model(x.clone().requires_grad_(reentrant))).square().mean().backward()
    finally:
        timm_layers.set_reentrant_ckpt(before)
    assert counts.batch == 1 and counts.batch_bwd == (4 if reentrant else 1)
    for (n, p), q in zip(model.named_parameters(), ref.parameters()):
        assert p.grad is not None and torch.equal(p.grad, q.grad), n


def test_cpb_batch_entries_and_installation(monkeypatch):
    """When a layer takes the batch's bias and when it computes its own; one hook per model."""
    from flash_window_attn import _swin_common as common

    monkeypatch.setattr(common, "CPB_BATCH", True)
    counts = _Counts(monkeypatch)
    model = swapped_copy(timm_v2_model())
    model = swap_window_attention(model, verbose=False)   # again: still one hook
    assert len(model._forward_pre_hooks) == 1
    layers = [m for m in model.modules() if isinstance(m, WindowAttention)]
    x = images(2, seed=7)
    model.eval()
    with torch.no_grad():
        model(x)
    model.train()
    with torch.no_grad():
        model(x)
    # eval / no grad: no batch; each layer's own bias, computed once and cached (the second call)
    assert (counts.batch, counts.layer) == (0, 4)
    counts.layer = 0
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(x).square().mean().backward()
    assert (counts.batch, counts.layer) == (1, 0)
    # a layer called on its own after the model's forward takes the same entry while its inputs
    # are unchanged, and computes its own bias once an optimizer step changed them
    blk = layers[0]
    tokens = torch.randn(8, 64, blk.qkv.in_features)
    blk(tokens).sum().backward()
    assert counts.layer == 0
    opt.step()
    blk(tokens).sum().backward()
    assert counts.layer == 1
    # a deep copy batches its own layers
    twin = copy.deepcopy(model)
    twin(x).sum().backward()
    twin_layers = [m for m in twin.modules() if isinstance(m, WindowAttention)]
    assert all(common._PREFETCH_ATTR in m.__dict__ for m in twin_layers)
    own = {id(p) for p in model.parameters()}
    assert not any(id(t) in own for m in twin_layers for t, _ in m.__dict__[common._PREFETCH_ATTR].key)
    import pickle

    again = pickle.loads(pickle.dumps(twin))   # entries are not pickled (copies hold None)
    assert all(m.__dict__.get(common._PREFETCH_ATTR) is None for m in again.modules())
    again(x).sum().backward()
    # .to() / set_window_size drop a layer's entry
    model(x)
    assert common._PREFETCH_ATTR in layers[1].__dict__
    model.float()
    assert not any(common._PREFETCH_ATTR in m.__dict__ for m in layers)


@pytest.mark.cuda
def test_cuda_cpb_batch_in_captured_training_step():
    """A swapped model's training step captured in a CUDA graph (as bench_models' GPU-time
    figures are), with the batched position biases (their index plans cached by the warm-up calls):
    replays, also with new input values, give the eager step's output and gradients bitwise."""
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    import _bench_common   # the benchmarks' CUDA-graph capture

    model = swapped_copy(timm_v2_model()).cuda().train()
    params = list(model.parameters())
    x = images(4, seed=8).cuda()

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = model(x)
        grads = torch.autograd.grad(y.float().square().mean(), params)
        return (y, *grads)

    graph, captured = _bench_common.cuda_graph_capture(step, warmup=2)
    for seed in (8, 9):
        x.copy_(images(4, seed=seed).cuda())
        want = step()
        for t in captured:
            t.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        for i, (a, b) in enumerate(zip(captured, want)):
            assert torch.equal(a, b), f"seed {seed}: result {i} differs"


def test_cpb_batch_hook_compiles_fullgraph():
    """torch.compile(fullgraph=True) of a swapped Swin V2 model in training mode: the batching hook
    is a no-op while tracing (each layer's position-bias op is in the graph), so no graph break;
    forward and gradients equal to the eager (batched) step."""
    import torch._dynamo

    torch._dynamo.reset()
    base = timm_v2_model()
    eager = swapped_copy(base).train()
    compiled_model = swapped_copy(base).train()
    compiled = torch.compile(compiled_model, fullgraph=True)
    x = images(2, seed=9)
    y_ref = eager(x)
    y_ref.square().mean().backward()
    y = compiled(x)
    y.square().mean().backward()
    close(y, y_ref, TOL)
    for (n, p), q in zip(compiled_model.named_parameters(), eager.parameters()):
        close(p.grad, q.grad, GRAD_TOL, msg=n)
    torch._dynamo.reset()
