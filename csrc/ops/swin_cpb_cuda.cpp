// CUDA implementations of the swin_cpb_bias ops (schemas and the CPU / ATen implementation:
// swin_cpb.cpp). float32 (the drop-in modules run the MLP outside autocast, in the parameters'
// dtype, float32 in practice) with at most kCpbMaxHeads heads runs the fused kernels of
// csrc/kernels/swin_cpb.cu: 2 launches forward, 2 backward. Other dtypes, more heads, or the
// environment variable FWA_CPB_ATEN=1 (for A/B measurements) take the ATen implementation.
//
// The backward's deterministic gather-reduction needs the CSR inverse of index (positions sorted
// stably by index value, and each value's slice). Computing it is a sort, a few launches; index is
// a per-layer constant buffer, so the CSR is cached per index tensor: keyed on the TensorImpl
// (held weakly, so a freed tensor's entry is dropped and its address is not reused while the entry
// exists) and its version counter (bumped by in-place writes). The kernels also check the CSR
// against index as they read it and write NaN where they disagree (a write the version counter
// did not see, e.g. through `.data`), so a stale entry cannot go unnoticed. Nothing is cached while
// the stream is being captured into a CUDA graph (the tensors would belong to the graph's pool),
// nor for inference tensors (no version counter). A capture does read an entry cached before it
// (the warm-up calls before a capture, as torch.compile's "reduce-overhead" and
// torch.cuda.make_graphed_callables make, leave one per layer): the graph then replays no sort
// (session 47: ~0.6 ms of sort launches and gaps per swinv2_tiny_window16_256 training step, bs 64),
// and the entry's two tensors are kept alive from then on (graph_retained), since the graph reads
// them at every replay even after the entry itself is dropped.
//
// Where index is Swin's relative position index of its window (as every Swin V2 layer's is), the
// backward needs no CSR: it reads dbias along the window's diagonals (CpbParams::win_h; session 48:
// the CSR walk's gathers took 7-12 us per call at timm's window 16 and 12 shapes). Whether it is
// so is checked when an entry is made (one comparison with the formula's index on the device and a
// sync, once per index tensor and version; no sort then); an index seen first inside a capture or
// an inference tensor, whose CSR is not cached, takes the CSR walk. FWA_CPB_WINDOW_DTABLE=0 (A/B
// timing, tests) always takes the CSR walk.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/library.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "kernels/swin_cpb.h"
#include "ops/swin_cpb_common.h"

namespace flash_window_attn {
namespace {

bool force_aten() {
  static const bool v = [] {
    const char* e = std::getenv("FWA_CPB_ATEN");
    return e != nullptr && *e != '\0' && std::strcmp(e, "0") != 0;
  }();
  return v;
}

bool fused_eligible(const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1,
                    const at::Tensor& w2, const CpbSizes& s) {
  if (force_aten()) return false;
  if (coords.scalar_type() != at::kFloat || w1.scalar_type() != at::kFloat || w2.scalar_type() != at::kFloat)
    return false;
  if (b1.has_value() && b1->scalar_type() != at::kFloat) return false;
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  return s.H <= fwa::kCpbMaxHeads && s.T < kIntMax && s.hidden < kIntMax && s.N * s.N < kIntMax;
}

void check_cuda(cudaError_t err, const char* what) {
  TORCH_CHECK(err == cudaSuccess, kCpbOp, what, " failed: ", cudaGetErrorString(err));
}

// The kernel parameters; `keep` holds the contiguous copies made (usually none) while the kernels run.
fwa::CpbParams params(const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1,
                      const at::Tensor& w2, const at::Tensor& index, const CpbSizes& s,
                      std::vector<at::Tensor>& keep) {
  auto contig = [&](const at::Tensor& t) -> const at::Tensor& {
    keep.push_back(t.contiguous());
    return keep.back();
  };
  keep.reserve(5);
  fwa::CpbParams p;
  p.coords = contig(coords).data_ptr<float>();
  p.w1 = contig(w1).data_ptr<float>();
  p.b1 = b1.has_value() ? contig(*b1).data_ptr<float>() : nullptr;
  p.w2 = contig(w2).data_ptr<float>();
  p.index = contig(index).data_ptr<int64_t>();
  p.T = static_cast<int>(s.T);
  p.hidden = static_cast<int>(s.hidden);
  p.H = static_cast<int>(s.H);
  p.N = static_cast<int>(s.N);
  return p;
}

// The backward's saved tensors on w1's device (ValueError naming the tensor otherwise).
void check_saved_devices(const at::Tensor& grad, const at::Tensor& h, const at::Tensor& sig, const at::Tensor& w1) {
  for (const auto& [t, name] : {std::pair<const at::Tensor*, const char*>{&grad, "grad"}, {&h, "h"}, {&sig, "sig"}})
    TORCH_CHECK_VALUE(t->device() == w1.device(), kCpbOp, name, " is on device ", t->device(),
                      " but w1 is on device ", w1.device());
}

// Whether the saved tensors suit the fused backward: the forward's float32 activations and a
// floating grad (read as float32).
bool saved_eligible(const at::Tensor& grad, const at::Tensor& h, const at::Tensor& sig) {
  return h.scalar_type() == at::kFloat && sig.scalar_type() == at::kFloat && at::isFloatingType(grad.scalar_type());
}

// The fused backward's inputs in the kernels' form, its scratch and its outputs.
struct BwdBuffers {
  at::Tensor g, h, sig;             // grad as float32; h, sig contiguous
  at::Tensor dpre, dw1, db1, dw2;   // db1: (0,) without b1
};

BwdBuffers bwd_buffers(const at::Tensor& grad, const at::Tensor& h, const at::Tensor& sig, bool with_b1,
                       const CpbSizes& s, const at::TensorOptions& f32) {
  BwdBuffers b;
  b.g = grad.scalar_type() == at::kFloat ? grad : grad.to(at::kFloat);
  b.h = h.contiguous();
  b.sig = sig.contiguous();
  b.dpre = at::empty({s.T, s.H}, f32);
  b.dw1 = at::empty({s.hidden, 2}, f32);
  b.db1 = at::empty({with_b1 ? s.hidden : 0}, f32);
  b.dw2 = at::empty({s.H, s.hidden}, f32);
  return b;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_forward(
    const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1, const at::Tensor& w2,
    const at::Tensor& index, const CpbSizes& s) {
  std::vector<at::Tensor> keep;
  const fwa::CpbParams p = params(coords, w1, b1, w2, index, s, keep);
  const auto f32 = w1.options();
  at::Tensor h = at::empty({s.T, s.hidden}, f32);
  at::Tensor sig = at::empty({s.T, s.H}, f32);
  at::Tensor bias = at::empty({s.H, s.N, s.N}, f32);
  check_cuda(fwa::cpb_forward(p, h.data_ptr<float>(), sig.data_ptr<float>(), bias.data_ptr<float>(),
                              at::cuda::getCurrentCUDAStream()),
             "forward kernel launch");
  return {bias, h, sig};
}

// ---- the CSR inverse of index, cached per index tensor ------------------------------------------

using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

// What the backward reads index through: the CSR (order, offsets), or (win_h > 0) the window's formula.
struct IndexPlan {
  at::Tensor order, offsets;   // undefined where win_h > 0
  int win_h = 0, win_w = 0;    // CpbParams::win_h / win_w
};

struct CsrEntry {
  WeakImpl impl;
  uint32_t version;
  int64_t T;
  IndexPlan plan;
};

bool window_dtable_allowed() {
  static const bool v = [] {
    const char* e = std::getenv("FWA_CPB_WINDOW_DTABLE");
    return e == nullptr || std::strcmp(e, "0") != 0;
  }();
  return v;
}

// Swin's relative position index of a wh x ww window: (dy + wh - 1)(2 ww - 1) + (dx + ww - 1).
at::Tensor window_index(int64_t wh, int64_t ww, const at::TensorOptions& opts) {
  const at::Tensor y = at::arange(wh, opts).repeat_interleave(ww), x = at::arange(ww, opts).repeat({wh});
  const at::Tensor dy = y.unsqueeze(1) - y.unsqueeze(0) + (wh - 1), dx = x.unsqueeze(1) - x.unsqueeze(0) + (ww - 1);
  return dy * (2 * ww - 1) + dx;
}

// (wh, ww) where index (N, N) is the relative position index of a wh x ww window with N = wh ww
// and T = (2 wh - 1)(2 ww - 1) table rows, else (0, 0). (wh, ww) and (ww, wh) give the same N and T:
// each candidate is compared. Syncs the device once per candidate.
std::pair<int, int> window_of_index(const at::Tensor& index, int64_t T) {
  if (!window_dtable_allowed()) return {0, 0};
  const int64_t N = index.size(0);
  for (int64_t wh = 1; wh <= N; ++wh) {
    if (N % wh != 0) continue;
    const int64_t ww = N / wh;
    if ((2 * wh - 1) * (2 * ww - 1) != T || !fwa::cpb_window_dtable_fits(static_cast<int>(wh), static_cast<int>(ww)))
      continue;
    if (at::equal(index, window_index(wh, ww, index.options())))
      return {static_cast<int>(wh), static_cast<int>(ww)};
  }
  return {0, 0};
}

constexpr size_t kMaxCsrEntries = 256;   // a model has one index per layer (or per window size)
std::mutex csr_mutex;
std::vector<CsrEntry>& csr_cache() {
  static std::vector<CsrEntry> cache;
  return cache;
}

// The CSR plan of index: its positions sorted by table row (order) and each row's first one (offsets).
IndexPlan compute_csr(const at::Tensor& index, int64_t T) {
  const at::Tensor keys = index.reshape({-1});
  auto [sorted, order] = at::sort(keys, /*stable=*/true, /*dim=*/0, /*descending=*/false);
  at::Tensor offsets = at::empty({T + 1}, index.options());
  check_cuda(fwa::cpb_csr_offsets(sorted.data_ptr<int64_t>(), sorted.numel(), static_cast<int>(T),
                                  offsets.data_ptr<int64_t>(), at::cuda::getCurrentCUDAStream()),
             "CSR offsets kernel launch");
  return {order, offsets};
}

// The cached CSR tensors a captured graph reads: never freed (one pair per entry a capture used).
std::vector<at::Tensor>& graph_retained() {
  static std::vector<at::Tensor> kept;
  return kept;
}

IndexPlan plan_of(const at::Tensor& index, int64_t T) {
  c10::TensorImpl* key = index.unsafeGetTensorImpl();
  if (index.is_inference()) return compute_csr(index, T);
  const bool capturing = c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None;
  const uint32_t version = key->version_counter().current_version();
  {
    std::lock_guard<std::mutex> lock(csr_mutex);
    auto& cache = csr_cache();
    for (auto it = cache.begin(); it != cache.end();) {
      if (it->impl.expired()) {   // the index tensor was freed
        it = cache.erase(it);
        continue;
      }
      if (it->impl.lock().get() == key) {
        if (it->version == version && it->T == T) {
          const IndexPlan& plan = it->plan;
          if (capturing && plan.win_h == 0) {   // the graph reads these at every replay: keep them alive (once)
            auto& kept = graph_retained();
            bool known = false;
            for (const at::Tensor& t : kept) known = known || t.is_same(plan.order);
            if (!known) {
              kept.push_back(plan.order);
              kept.push_back(plan.offsets);
            }
          }
          return plan;
        }
        it = cache.erase(it);   // written in place since (or another T): recompute
        continue;
      }
      ++it;
    }
  }
  if (capturing) return compute_csr(index, T);   // (the graph's pool: not cached; no sync)
  const auto [win_h, win_w] = window_of_index(index, T);
  IndexPlan plan = win_h == 0 ? compute_csr(index, T) : IndexPlan{{}, {}, win_h, win_w};
  std::lock_guard<std::mutex> lock(csr_mutex);
  auto& cache = csr_cache();
  if (cache.size() >= kMaxCsrEntries) cache.erase(cache.begin());
  cache.push_back({WeakImpl(index.getIntrusivePtr()), version, T, plan});
  return plan;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_backward(
    const at::Tensor& grad, const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1,
    const at::Tensor& w2, const at::Tensor& index, const at::Tensor& h, const at::Tensor& sig,
    const CpbSizes& s) {
  std::vector<at::Tensor> keep;
  fwa::CpbParams p = params(coords, w1, b1, w2, index, s, keep);
  const BwdBuffers b = bwd_buffers(grad, h, sig, b1.has_value(), s, w1.options());
  IndexPlan plan;
  if (s.T > 0 && s.H > 0 && s.hidden > 0) plan = plan_of(index, s.T);
  p.win_h = plan.win_h;
  p.win_w = plan.win_w;
  const at::Tensor& order = plan.order;
  const at::Tensor& offsets = plan.offsets;
  check_cuda(fwa::cpb_backward(p, b.g.data_ptr<float>(), b.g.stride(0), b.g.stride(1), b.g.stride(2),
                               order.defined() ? order.data_ptr<int64_t>() : nullptr,
                               offsets.defined() ? offsets.data_ptr<int64_t>() : nullptr, b.h.data_ptr<float>(),
                               b.sig.data_ptr<float>(), b.dpre.data_ptr<float>(), b.dw1.data_ptr<float>(),
                               b1.has_value() ? b.db1.data_ptr<float>() : nullptr, b.dw2.data_ptr<float>(),
                               at::cuda::getCurrentCUDAStream()),
             "backward kernel launch");
  return {b.dw1.view(w1.sizes()), b.db1, b.dw2};
}

// ---- the op implementations ---------------------------------------------------------------------

at::Tensor cpb_bias_cuda(const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1,
                         const at::Tensor& w2, const at::Tensor& index) {
  const CpbSizes s = check_cpb_args(coords, w1, b1, w2, index);
  if (!fused_eligible(coords, w1, b1, w2, s)) return cpb_bias_impl(coords, w1, b1, w2, index);
  const c10::cuda::CUDAGuard guard(w1.device());
  return std::get<0>(fused_forward(coords, w1, b1, w2, index, s));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> cpb_bias_forward_cuda(
    const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1, const at::Tensor& w2,
    const at::Tensor& index) {
  const CpbSizes s = check_cpb_args(coords, w1, b1, w2, index);
  if (!fused_eligible(coords, w1, b1, w2, s)) return cpb_bias_forward_impl(coords, w1, b1, w2, index);
  const c10::cuda::CUDAGuard guard(w1.device());
  return fused_forward(coords, w1, b1, w2, index, s);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> cpb_bias_backward_cuda(
    const at::Tensor& grad, const at::Tensor& coords, const at::Tensor& w1, const std::optional<at::Tensor>& b1,
    const at::Tensor& w2, const at::Tensor& index, const at::Tensor& h, const at::Tensor& sig) {
  const CpbSizes s = check_cpb_args(coords, w1, b1, w2, index);
  check_cpb_saved(grad, h, sig, s);
  check_saved_devices(grad, h, sig, w1);
  if (!saved_eligible(grad, h, sig) || !fused_eligible(coords, w1, b1, w2, s))
    return cpb_bias_backward_impl(grad, coords, w1, b1, w2, index, h, sig);
  const c10::cuda::CUDAGuard guard(w1.device());
  return fused_backward(grad, coords, w1, b1, w2, index, h, sig, s);
}

// ---- several layers at once ------------------------------------------------------------------------
// Where every layer takes the fused kernels (float32, on w1[0]'s device; the backward: Swin window
// indices) all of them run in one launch per kernel, the MLP backward in one per head-count class
// (fwa::cpb_forward_batch / cpb_backward_batch);
// otherwise layer by layer through the one-layer op's implementation. Either way each layer's
// results are the one-layer op's, bitwise.

// Every layer on layer 0's device (each layer's own tensors are checked against its w1).
void check_same_device(at::TensorList w1, size_t i) {
  TORCH_CHECK_VALUE(w1[i].device() == w1[0].device(), kCpbOp, "batch: layer ", i, "'s w1 is on device ",
                    w1[i].device(), " but layer 0's is on device ", w1[0].device());
}

CpbBatchOut cpb_batch_forward_cuda(at::TensorList coords, at::TensorList w1, at::TensorList b1, at::TensorList w2,
                                   at::TensorList index) {
  const size_t n = check_cpb_batch_lists({{coords, "coords"}, {w1, "w1"}, {b1, "b1"}, {w2, "w2"}, {index, "index"}});
  if (n == 0) return {};
  std::vector<CpbSizes> sizes;
  bool fused = true;
  for (size_t i = 0; i < n; ++i) {
    sizes.push_back(check_cpb_args(coords[i], w1[i], b1[i], w2[i], index[i]));
    check_same_device(w1, i);
    fused = fused && fused_eligible(coords[i], w1[i], b1[i], w2[i], sizes[i]);
  }
  const c10::cuda::CUDAGuard guard(w1[0].device());
  std::vector<at::Tensor> keep;
  std::vector<fwa::CpbParams> ps(n);
  std::vector<fwa::CpbLayerIO> io(n);
  for (size_t i = 0; fused && i < n; ++i) {
    ps[i] = params(coords[i], w1[i], b1[i], w2[i], index[i], sizes[i], keep);
    fused = fwa::cpb_batch_forward_takes(ps[i]);
  }
  if (!fused)
    return cpb_per_layer(n, [&](size_t i) { return cpb_bias_forward_cuda(coords[i], w1[i], b1[i], w2[i], index[i]); });
  CpbBatchOut out = cpb_per_layer(n, [&](size_t i) {
    const CpbSizes& s = sizes[i];
    const auto f32 = w1[i].options();
    at::Tensor bias = at::empty({s.H, s.N, s.N}, f32), h = at::empty({s.T, s.hidden}, f32), sig = at::empty({s.T, s.H}, f32);
    io[i].bias = bias.data_ptr<float>();
    io[i].h = h.data_ptr<float>();
    io[i].sig = sig.data_ptr<float>();
    return std::make_tuple(bias, h, sig);
  });
  check_cuda(fwa::cpb_forward_batch(ps.data(), io.data(), static_cast<int>(n), at::cuda::getCurrentCUDAStream()),
             "batched forward kernel launch");
  return out;
}

CpbBatchOut cpb_batch_backward_cuda(at::TensorList grad, at::TensorList coords, at::TensorList w1,
                                    at::TensorList b1, at::TensorList w2, at::TensorList index, at::TensorList h,
                                    at::TensorList sig) {
  const size_t n = check_cpb_batch_lists({{grad, "grad"}, {coords, "coords"}, {w1, "w1"}, {b1, "b1"}, {w2, "w2"},
                                          {index, "index"}, {h, "h"}, {sig, "sig"}});
  if (n == 0) return {};
  std::vector<CpbSizes> sizes;
  bool fused = true;
  for (size_t i = 0; i < n; ++i) {
    sizes.push_back(check_cpb_args(coords[i], w1[i], b1[i], w2[i], index[i]));
    check_cpb_saved(grad[i], h[i], sig[i], sizes[i]);
    check_same_device(w1, i);
    check_saved_devices(grad[i], h[i], sig[i], w1[i]);
    fused = fused && saved_eligible(grad[i], h[i], sig[i]) && fused_eligible(coords[i], w1[i], b1[i], w2[i], sizes[i]);
  }
  const c10::cuda::CUDAGuard guard(w1[0].device());
  std::vector<at::Tensor> keep;
  std::vector<fwa::CpbParams> ps(n);
  std::vector<fwa::CpbLayerIO> io(n);
  for (size_t i = 0; fused && i < n; ++i) {
    ps[i] = params(coords[i], w1[i], b1[i], w2[i], index[i], sizes[i], keep);
    const IndexPlan plan = plan_of(index[i], sizes[i].T);
    ps[i].win_h = plan.win_h;
    ps[i].win_w = plan.win_w;
    fused = fwa::cpb_batch_backward_takes(ps[i]);
  }
  if (!fused) {
    return cpb_per_layer(n, [&](size_t i) {
      return cpb_bias_backward_cuda(grad[i], coords[i], w1[i], b1[i], w2[i], index[i], h[i], sig[i]);
    });
  }
  std::vector<BwdBuffers> bufs;   // (each layer has b1: a Tensor[] entry cannot be None)
  bufs.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const BwdBuffers& b = bufs.emplace_back(bwd_buffers(grad[i], h[i], sig[i], true, sizes[i], w1[i].options()));
    io[i].grad = b.g.data_ptr<float>();
    io[i].gs0 = b.g.stride(0);
    io[i].gs1 = b.g.stride(1);
    io[i].gs2 = b.g.stride(2);
    io[i].h = b.h.data_ptr<float>();
    io[i].sig = b.sig.data_ptr<float>();
    io[i].dpre = b.dpre.data_ptr<float>();
    io[i].dw1 = b.dw1.data_ptr<float>();
    io[i].db1 = b.db1.data_ptr<float>();
    io[i].dw2 = b.dw2.data_ptr<float>();
  }
  check_cuda(fwa::cpb_backward_batch(ps.data(), io.data(), static_cast<int>(n), at::cuda::getCurrentCUDAStream()),
             "batched backward kernel launch");
  return cpb_per_layer(n, [&](size_t i) { return std::make_tuple(bufs[i].dw1.view(w1[i].sizes()), bufs[i].db1, bufs[i].dw2); });
}

}  // namespace

TORCH_LIBRARY_IMPL(flash_window_attn, CUDA, m) {
  m.impl("swin_cpb_bias", &cpb_bias_cuda);
  m.impl("swin_cpb_bias_forward", &cpb_bias_forward_cuda);
  m.impl("swin_cpb_bias_backward", &cpb_bias_backward_cuda);
  m.impl("swin_cpb_bias_batch_forward", &cpb_batch_forward_cuda);
  m.impl("swin_cpb_bias_batch_backward", &cpb_batch_backward_cuda);
}

}  // namespace flash_window_attn
