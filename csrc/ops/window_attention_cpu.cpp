// CPU implementation of window_attention_fwd / window_attention_bwd (contract: csrc/README.md).
//
// For window b, head h (one "tile"), rows i and keys j in [0, N):
//   V1: S = scale * q k^T                      V2: S = alpha * q^ k^T,  q^ = q / max(|q|, 1e-12),
//                                                  alpha = exp(min(logit_scale[h], float32(ln 100)))
//   S += bias[h] (optional) + mask[b % nW] (optional);  P = softmax_j(S);  out = P v;
//   lse = log sum_j exp(S)  (+inf with out = 0 for a row whose logits are all -inf).
// Backward (P recomputed from S, renormalised with its row max and sum; 0 where lse = +inf):
//   dP = dout v^T, D_i = sum_j P_ij dP_ij, dS = P o (dP - D), dv = P^T dout,
//   V1: dq = scale dS k, dk = scale dS^T q
//   V2: dq^ = alpha dS k^, dk^ = alpha dS^T q^, then F.normalize's gradient
//       dq = (dq^ - q^ <q^, dq^>) / |q| if |q| >= 1e-12 else dq^ / 1e-12 (same for k),
//       dalpha = sum dS o (q^ k^T), dlogit_scale[h] = alpha dalpha if logit_scale[h] <= float32(ln 100) else 0
//   dbias[h] = sum over windows of dS.
//
// Work is split over (window, head) tiles with at::parallel_for; each tile is copied (through the
// input strides, converted to the accumulation type) into thread-local buffers so that every inner
// loop runs over contiguous memory. Accumulation is fp32 for fp16/bf16/fp32 inputs and fp64 for
// fp64 inputs. dbias / dalpha are accumulated per (fixed chunk of windows, head) and the partials
// are added in chunk order, so gradients are bitwise independent of the thread count.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

#include "kernels/dropout.h"
#include "ops/window_attention_common.h"

namespace flash_window_attn {
namespace {

constexpr double kNormEps = 1e-12;  // F.normalize's default eps
// Upper bound on the dbias partial buffer (elements) and on the number of window chunks; both depend
// on sizes only, never on the thread count, so the reduction order is fixed.
constexpr int64_t kDbiasPartialBudget = int64_t(1) << 24;
constexpr int64_t kMaxWindowChunks = 256;
constexpr int64_t kRowGroup = 4;  // query rows per rank-4 update of dk / dv in the backward

// One (B_, H, N, d) tensor addressed through its strides.
template <typename T>
struct BHND {
  T* ptr;
  int64_t sb, sh, sn, sd;
  explicit BHND(const at::Tensor& t)
      : ptr(static_cast<T*>(t.data_ptr())), sb(t.stride(0)), sh(t.stride(1)), sn(t.stride(2)), sd(t.stride(3)) {}
  T* row(int64_t b, int64_t h, int64_t i) const { return ptr + b * sb + h * sh + i * sn; }
};

// dst[i * d + c] = src row i (unit last stride), converted.
template <typename scalar_t, typename acc_t>
void load_rows(const BHND<const scalar_t>& src, int64_t b, int64_t h, int64_t N, int64_t d, acc_t* dst) {
  for (int64_t i = 0; i < N; ++i) {
    const scalar_t* r = src.row(b, h, i);
    acc_t* o = dst + i * d;
    for (int64_t c = 0; c < d; ++c) o[c] = static_cast<acc_t>(r[c]);
  }
}

// dst[c * N + i] = src row i, converted (the transposed tile, so that row-of-logits loops are axpys).
template <typename scalar_t, typename acc_t>
void load_rows_transposed(const BHND<const scalar_t>& src, int64_t b, int64_t h, int64_t N, int64_t d,
                          acc_t* dst) {
  for (int64_t i = 0; i < N; ++i) {
    const scalar_t* r = src.row(b, h, i);
    for (int64_t c = 0; c < d; ++c) dst[c * N + i] = static_cast<acc_t>(r[c]);
  }
}

template <typename acc_t>
void transpose(const acc_t* src, int64_t N, int64_t d, acc_t* dst) {
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < d; ++c) dst[c * N + i] = src[i * d + c];
}

// In place x <- x / max(|x|, eps) per row (F.normalize); norm[i] = |x_i|. The norm and the division
// are done in double (d values per row, cheap) so x^ is rounded once: with alpha up to 100 the
// logits amplify any error of x^ a hundredfold.
template <typename acc_t>
void normalize_rows(acc_t* x, int64_t N, int64_t d, acc_t* norm) {
  for (int64_t i = 0; i < N; ++i) {
    acc_t* r = x + i * d;
    double ss = 0;
    for (int64_t c = 0; c < d; ++c) ss += double(r[c]) * double(r[c]);
    const double n = std::sqrt(ss);
    norm[i] = static_cast<acc_t>(n);
    const double den = std::max(n, double(static_cast<acc_t>(kNormEps)));  // eps as torch sees it in acc_t
    for (int64_t c = 0; c < d; ++c) r[c] = static_cast<acc_t>(double(r[c]) / den);
  }
}

// s[j] = <xi, y_j> with yt the (d, N) transposed tile. The d products are summed in blocks of 8
// (8 + d/8 rounding steps instead of d: V2 multiplies the logits by up to 100), and the 8 products
// of a block stay in registers, so each pass over s does 8 multiply-adds per load/store of s.
template <typename acc_t>
inline void dots_row(const acc_t* __restrict xi, const acc_t* __restrict yt, int64_t N, int64_t d,
                     acc_t* __restrict s) {
  for (int64_t j = 0; j < N; ++j) s[j] = 0;
  for (int64_t c0 = 0; c0 < d; c0 += 8) {  // d is a multiple of 8
    const acc_t a0 = xi[c0], a1 = xi[c0 + 1], a2 = xi[c0 + 2], a3 = xi[c0 + 3];
    const acc_t a4 = xi[c0 + 4], a5 = xi[c0 + 5], a6 = xi[c0 + 6], a7 = xi[c0 + 7];
    const acc_t* __restrict y0 = yt + c0 * N;
    const acc_t* __restrict y1 = y0 + N;
    const acc_t* __restrict y2 = y1 + N;
    const acc_t* __restrict y3 = y2 + N;
    const acc_t* __restrict y4 = y3 + N;
    const acc_t* __restrict y5 = y4 + N;
    const acc_t* __restrict y6 = y5 + N;
    const acc_t* __restrict y7 = y6 + N;
    for (int64_t j = 0; j < N; ++j) {
      acc_t t = a0 * y0[j];
      t += a1 * y1[j];
      t += a2 * y2[j];
      t += a3 * y3[j];
      t += a4 * y4[j];
      t += a5 * y5[j];
      t += a6 * y6[j];
      t += a7 * y7[j];
      s[j] += t;
    }
  }
}

// s[j] = mult * <qi, k_j> + bias_row[j] + mask_row[j]; kt is the (d, N) transposed key tile.
// If raw is given it receives <qi, k_j> (the backward of V2 needs it for dalpha).
template <typename acc_t>
inline void logits_row(const acc_t* __restrict qi, const acc_t* __restrict kt, int64_t N, int64_t d, acc_t mult,
                       const acc_t* __restrict bias_row, const acc_t* __restrict mask_row, acc_t* __restrict s,
                       acc_t* __restrict raw = nullptr) {
  if (raw != nullptr) {
    dots_row(qi, kt, N, d, raw);
    for (int64_t j = 0; j < N; ++j) s[j] = raw[j] * mult;
  } else {
    dots_row(qi, kt, N, d, s);
    for (int64_t j = 0; j < N; ++j) s[j] *= mult;
  }
  if (bias_row != nullptr)
    for (int64_t j = 0; j < N; ++j) s[j] += bias_row[j];
  if (mask_row != nullptr)
    for (int64_t j = 0; j < N; ++j) s[j] += mask_row[j];
}

template <typename acc_t>
inline void axpy(acc_t* __restrict y, acc_t a, const acc_t* __restrict x, int64_t n) {
  for (int64_t c = 0; c < n; ++c) y[c] += a * x[c];
}

// y[c] += sum_j w[j] X[j * d + c], four rows of X per pass over y.
template <typename acc_t>
inline void add_weighted_rows(acc_t* __restrict y, const acc_t* __restrict w, const acc_t* __restrict X, int64_t n,
                              int64_t d) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const acc_t w0 = w[j], w1 = w[j + 1], w2 = w[j + 2], w3 = w[j + 3];
    const acc_t* __restrict x0 = X + j * d;
    const acc_t* __restrict x1 = x0 + d;
    const acc_t* __restrict x2 = x1 + d;
    const acc_t* __restrict x3 = x2 + d;
    for (int64_t c = 0; c < d; ++c) y[c] += ((w0 * x0[c] + w1 * x1[c]) + w2 * x2[c]) + w3 * x3[c];
  }
  for (; j < n; ++j) axpy(y, w[j], X + j * d, d);
}

// Y[j * d + c] += sum_{r < 4} W[r * N + j] x_r[c] for every j < N (a rank-4 update of the (N, d) tile).
template <typename acc_t>
inline void rank4_update(acc_t* __restrict Y, const acc_t* __restrict W, const acc_t* __restrict x0,
                         const acc_t* __restrict x1, const acc_t* __restrict x2, const acc_t* __restrict x3,
                         int64_t N, int64_t d) {
  for (int64_t j = 0; j < N; ++j) {
    const acc_t w0 = W[j], w1 = W[N + j], w2 = W[2 * N + j], w3 = W[3 * N + j];
    acc_t* __restrict y = Y + j * d;
    for (int64_t c = 0; c < d; ++c) y[c] += ((w0 * x0[c] + w1 * x1[c]) + w2 * x2[c]) + w3 * x3[c];
  }
}

template <typename acc_t>
inline acc_t row_max(const acc_t* s, int64_t N) {
  // NaN-propagating (std::max would skip a NaN logit, and an all-NaN row would pass for a fully
  // masked one): NaN inputs give NaN outputs for their window, as in PyTorch.
  acc_t m = -std::numeric_limits<acc_t>::infinity();
  for (int64_t j = 0; j < N; ++j) {
    if (std::isnan(s[j])) return s[j];
    m = std::max(m, s[j]);
  }
  return m;
}

// Gradient of the V2 normalisation for one row: g is d(loss)/d(x^) on entry, d(loss)/dx on exit.
template <typename acc_t>
inline void normalize_backward_row(const acc_t* __restrict xhat, acc_t norm, int64_t d, acc_t* __restrict g) {
  const acc_t eps = static_cast<acc_t>(kNormEps);
  if (norm >= eps) {  // clamp_min(norm, eps) lets the gradient through where norm >= eps
    acc_t proj = 0;
    for (int64_t c = 0; c < d; ++c) proj += xhat[c] * g[c];
    for (int64_t c = 0; c < d; ++c) g[c] = (g[c] - xhat[c] * proj) / norm;
  } else {
    for (int64_t c = 0; c < d; ++c) g[c] = g[c] / eps;
  }
}

template <typename scalar_t, typename acc_t>
inline void store_row(scalar_t* dst, int64_t sd, const acc_t* src, int64_t d) {
  for (int64_t c = 0; c < d; ++c) dst[c * sd] = static_cast<scalar_t>(src[c]);
}

template <typename acc_t>
acc_t clamped_alpha(acc_t ls) {
  return std::exp(std::min(ls, static_cast<acc_t>(kLogitScaleMax)));
}

template <typename T>
const T* data_or_null(const at::Tensor& t) {
  return t.defined() ? t.const_data_ptr<T>() : nullptr;
}

// Attention dropout on the CPU: z_ij = keep(b*H + h, i, j) / (1 - p) or 0 (kernels/dropout.h).
struct CpuDropout {
  bool on = false;
  uint64_t seed = 0, offset = 0;
  uint32_t threshold = 0;
  double scale = 1.0;
};

// z[j] for row i of tile bh.
template <typename acc_t>
void dropout_row(const CpuDropout& dr, int64_t bh, int64_t i, int64_t N, acc_t* z) {
  const acc_t sc = static_cast<acc_t>(dr.scale);
  for (int64_t j = 0; j < N; ++j)
    z[j] = fwa::dropout_keep(dr.seed, dr.offset, bh, static_cast<int>(i), static_cast<int>(j), dr.threshold)
               ? sc : acc_t(0);
}

// ----------------------------------------------------------------------------------------------
// forward

template <typename scalar_t>
void fwd_kernel(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias_acc,
                const at::Tensor& mask_acc, const at::Tensor& ls_acc, double scale, const WindowAttnSizes& s,
                const CpuDropout& drop, at::Tensor& out, at::Tensor& lse) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t B = s.B, H = s.H, N = s.N, d = s.d, nW = s.nW;
  const BHND<const scalar_t> qa(q), ka(k), va(v);
  const BHND<scalar_t> oa(out);
  float* lse_p = lse.data_ptr<float>();
  const acc_t* bias_p = data_or_null<acc_t>(bias_acc);
  const acc_t* mask_p = data_or_null<acc_t>(mask_acc);
  const acc_t* ls_p = data_or_null<acc_t>(ls_acc);
  const bool cosine = s.cosine;
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / (N * N * d));

  at::parallel_for(0, B * H, grain, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> qbuf(N * d), kbuf(cosine ? N * d : 0), kt(d * N), vbuf(N * d), srow(N), orow(d), qn(N),
        kn(N), zrow(drop.on ? N : 0);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b = t / H, h = t % H;
      load_rows(qa, b, h, N, d, qbuf.data());
      load_rows(va, b, h, N, d, vbuf.data());
      acc_t mult = static_cast<acc_t>(scale);
      if (cosine) {
        load_rows(ka, b, h, N, d, kbuf.data());
        normalize_rows(qbuf.data(), N, d, qn.data());
        normalize_rows(kbuf.data(), N, d, kn.data());
        transpose(kbuf.data(), N, d, kt.data());
        mult = clamped_alpha(ls_p[h]);
      } else {
        load_rows_transposed(ka, b, h, N, d, kt.data());
      }
      const acc_t* bias_h = bias_p ? bias_p + h * N * N : nullptr;
      const acc_t* mask_w = mask_p ? mask_p + (b % nW) * N * N : nullptr;
      float* lse_row = lse_p + (b * H + h) * N;
      for (int64_t i = 0; i < N; ++i) {
        acc_t* sr = srow.data();
        logits_row(qbuf.data() + i * d, kt.data(), N, d, mult, bias_h ? bias_h + i * N : nullptr,
                   mask_w ? mask_w + i * N : nullptr, sr);
        scalar_t* orow_dst = oa.row(b, h, i);
        const acc_t m = row_max(sr, N);
        if (m == -std::numeric_limits<acc_t>::infinity()) {
          for (int64_t c = 0; c < d; ++c) orow_dst[c * oa.sd] = static_cast<scalar_t>(0);
          lse_row[i] = std::numeric_limits<float>::infinity();
          continue;
        }
        double l = 0;  // row sums (l, D, dalpha) are accumulated in double: cheap, not vectorised anyway
        for (int64_t j = 0; j < N; ++j) {
          sr[j] = std::exp(sr[j] - m);
          l += sr[j];
        }
        if (drop.on) {  // the row sum l above is of the undropped probabilities
          dropout_row(drop, t, i, N, zrow.data());
          for (int64_t j = 0; j < N; ++j) sr[j] *= zrow[j];
        }
        std::fill(orow.begin(), orow.end(), acc_t(0));
        add_weighted_rows(orow.data(), sr, vbuf.data(), N, d);
        const acc_t lsum = static_cast<acc_t>(l);
        for (int64_t c = 0; c < d; ++c) orow[c] /= lsum;
        store_row(orow_dst, oa.sd, orow.data(), d);
        lse_row[i] = static_cast<float>(double(m) + std::log(l));
      }
    }
  });
}

// ----------------------------------------------------------------------------------------------
// backward

template <typename scalar_t>
void bwd_kernel(const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                const at::Tensor& bias_acc, const at::Tensor& mask_acc,
                const at::Tensor& ls_acc, double scale, const WindowAttnSizes& s, const CpuDropout& drop,
                at::Tensor& dq, at::Tensor& dk, at::Tensor& dv, at::Tensor& dbias_acc, at::Tensor& dalpha_acc) {
  using acc_t = at::opmath_type<scalar_t>;
  // P is renormalised from S's row max and sum in the accumulation precision instead of being read as
  // exp(S - lse): the stored lse is fp32, and its rounding (|lse| * 2^-24, ~1e-5 for the |S| ~ 100
  // logits of V2 with logit_scale at its clamp) would scale every P of the row. Same number of exps.
  // `lse` is still checked and a row is fully masked exactly when its lse is +inf.
  const int64_t B = s.B, H = s.H, N = s.N, d = s.d, nW = s.nW;
  const BHND<const scalar_t> qa(q), ka(k), va(v), doa(dout);
  const BHND<scalar_t> dqa(dq), dka(dk), dva(dv);
  const acc_t* bias_p = data_or_null<acc_t>(bias_acc);
  const acc_t* mask_p = data_or_null<acc_t>(mask_acc);
  const acc_t* ls_p = data_or_null<acc_t>(ls_acc);
  const bool cosine = s.cosine;
  const bool want_dbias = s.has_bias;

  // Windows are grouped in fixed chunks; task (chunk, h) owns the dbias / dalpha partial of that chunk.
  int64_t n_chunks = B;
  if (want_dbias) {
    const int64_t per_chunk = std::max<int64_t>(1, H * N * N);
    n_chunks = std::min<int64_t>(B, std::clamp<int64_t>(kDbiasPartialBudget / per_chunk, 1, kMaxWindowChunks));
  }
  n_chunks = std::max<int64_t>(n_chunks, 1);
  const int64_t wpc = (B + n_chunks - 1) / n_chunks;  // windows per chunk
  n_chunks = std::max<int64_t>(1, (B + wpc - 1) / std::max<int64_t>(wpc, 1));

  at::Tensor part_bias;
  acc_t* part_bias_p = nullptr;
  if (want_dbias) {
    part_bias = at::zeros({n_chunks, H, N, N}, q.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
    part_bias_p = part_bias.data_ptr<acc_t>();
  }
  std::vector<double> part_alpha(n_chunks * H, 0.0);

  at::parallel_for(0, n_chunks * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> qbuf(N * d), kbuf(N * d), kt(d * N), vt(d * N), dobuf(N * d), dkbuf(N * d), dvbuf(N * d),
        pgrp(kRowGroup * N), dsgrp(kRowGroup * N), xrow(cosine ? N : 0), dqrow(d), zeros(d, acc_t(0)), qn(N),
        kn(N), zrow(drop.on ? N : 0);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t chunk = t / H, h = t % H;
      acc_t* pb = part_bias_p ? part_bias_p + (chunk * H + h) * N * N : nullptr;
      const acc_t* bias_h = bias_p ? bias_p + h * N * N : nullptr;
      const acc_t alpha = cosine ? clamped_alpha(ls_p[h]) : acc_t(0);
      const acc_t mult = cosine ? alpha : static_cast<acc_t>(scale);
      double dalpha = 0;  // a sum of B_ N^2 terms that cancel (rows of dS sum to 0): kept in double
      const int64_t b_end = std::min(B, (chunk + 1) * wpc);
      for (int64_t b = chunk * wpc; b < b_end; ++b) {
        load_rows(qa, b, h, N, d, qbuf.data());
        load_rows(ka, b, h, N, d, kbuf.data());
        load_rows_transposed(va, b, h, N, d, vt.data());
        load_rows(doa, b, h, N, d, dobuf.data());
        if (cosine) {
          normalize_rows(qbuf.data(), N, d, qn.data());  // qbuf, kbuf now hold q^, k^
          normalize_rows(kbuf.data(), N, d, kn.data());
        }
        transpose(kbuf.data(), N, d, kt.data());
        std::fill(dkbuf.begin(), dkbuf.end(), acc_t(0));
        std::fill(dvbuf.begin(), dvbuf.end(), acc_t(0));
        const acc_t* mask_w = mask_p ? mask_p + (b % nW) * N * N : nullptr;

        // Rows in groups of kRowGroup: each row gets its P, dS and dq; then one rank-4 pass per
        // group adds the group's P^T dout and dS^T q to dv and dk (a quarter of the dv/dk traffic).
        for (int64_t i0 = 0; i0 < N; i0 += kRowGroup) {
          const int64_t nr = std::min<int64_t>(kRowGroup, N - i0);
          const acc_t* qr[kRowGroup];
          const acc_t* dor[kRowGroup];
          for (int64_t r = 0; r < kRowGroup; ++r) {
            acc_t* p = pgrp.data() + r * N;
            acc_t* ds = dsgrp.data() + r * N;
            const int64_t i = i0 + r;
            qr[r] = r < nr ? qbuf.data() + i * d : zeros.data();
            dor[r] = r < nr ? dobuf.data() + i * d : zeros.data();
            if (r >= nr) {  // padding row of the last group
              std::fill(p, p + N, acc_t(0));
              std::fill(ds, ds + N, acc_t(0));
              continue;
            }
            const acc_t* qi = qr[r];
            scalar_t* dq_dst = dqa.row(b, h, i);
            logits_row(qi, kt.data(), N, d, mult, bias_h ? bias_h + i * N : nullptr,
                       mask_w ? mask_w + i * N : nullptr, p, cosine ? xrow.data() : nullptr);
            const acc_t m = row_max(p, N);
            if (m == -std::numeric_limits<acc_t>::infinity()) {  // fully masked row (lse = +inf): P = 0
              std::fill(p, p + N, acc_t(0));
              std::fill(ds, ds + N, acc_t(0));
              for (int64_t c = 0; c < d; ++c) dq_dst[c * dqa.sd] = static_cast<scalar_t>(0);
              continue;
            }
            double l = 0;
            for (int64_t j = 0; j < N; ++j) {
              p[j] = std::exp(p[j] - m);
              l += p[j];
            }
            const acc_t lsum = static_cast<acc_t>(l);
            for (int64_t j = 0; j < N; ++j) p[j] /= lsum;
            dots_row(dor[r], vt.data(), N, d, ds);  // dP
            if (drop.on) {
              // out = (P o Z) v: the gradient reaching P is dP o Z, and dv takes (P o Z)^T dout.
              // D = sum_j P (dP o Z) = dout . out, as without dropout.
              dropout_row(drop, b * H + h, i, N, zrow.data());
              for (int64_t j = 0; j < N; ++j) ds[j] *= zrow[j];
            }
            double Dd = 0;
            for (int64_t j = 0; j < N; ++j) Dd += double(p[j] * ds[j]);
            const acc_t D = static_cast<acc_t>(Dd);
            for (int64_t j = 0; j < N; ++j) ds[j] = p[j] * (ds[j] - D);  // dS
            if (drop.on)
              for (int64_t j = 0; j < N; ++j) p[j] *= zrow[j];  // P o Z for dv

            std::fill(dqrow.begin(), dqrow.end(), acc_t(0));
            add_weighted_rows(dqrow.data(), ds, kbuf.data(), N, d);  // dS k (k^ for V2)
            if (pb != nullptr) {
              acc_t* pbr = pb + i * N;
              for (int64_t j = 0; j < N; ++j) pbr[j] += ds[j];
            }
            if (cosine) {
              // dalpha += sum_j dS_ij <q^_i, k^_j>, from the same <q^, k^> that entered S (summing
              // <q^_i, (dS k^)_i> instead would add the cancellation error of dS k^).
              for (int64_t j = 0; j < N; ++j) dalpha += double(ds[j] * xrow[j]);
              for (int64_t c = 0; c < d; ++c) dqrow[c] *= alpha;
              normalize_backward_row(qi, qn[i], d, dqrow.data());
            } else {
              for (int64_t c = 0; c < d; ++c) dqrow[c] *= mult;
            }
            store_row(dq_dst, dqa.sd, dqrow.data(), d);
          }
          rank4_update(dvbuf.data(), pgrp.data(), dor[0], dor[1], dor[2], dor[3], N, d);
          rank4_update(dkbuf.data(), dsgrp.data(), qr[0], qr[1], qr[2], qr[3], N, d);
        }

        for (int64_t j = 0; j < N; ++j) {
          acc_t* g = dkbuf.data() + j * d;
          for (int64_t c = 0; c < d; ++c) g[c] *= mult;
          if (cosine) normalize_backward_row(kbuf.data() + j * d, kn[j], d, g);
          store_row(dka.row(b, h, j), dka.sd, g, d);
          store_row(dva.row(b, h, j), dva.sd, dvbuf.data() + j * d, d);
        }
      }
      part_alpha[chunk * H + h] = dalpha;
    }
  });

  // Fixed-order reductions of the per-chunk partials.
  if (want_dbias) {
    acc_t* out_p = dbias_acc.data_ptr<acc_t>();
    const int64_t per_chunk = H * N * N;
    at::parallel_for(0, per_chunk, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) {
        acc_t sum = 0;
        for (int64_t c = 0; c < n_chunks; ++c) sum += part_bias_p[c * per_chunk + e];
        out_p[e] = sum;
      }
    });
  }
  if (cosine) {
    acc_t* out_p = dalpha_acc.data_ptr<acc_t>();
    for (int64_t h = 0; h < H; ++h) {
      double sum = 0;
      for (int64_t c = 0; c < n_chunks; ++c) sum += part_alpha[c * H + h];
      // clamp(max=ln 100) backward: the gradient flows where logit_scale <= the bound.
      out_p[h] = ls_p[h] <= static_cast<acc_t>(kLogitScaleMax)
                     ? static_cast<acc_t>(sum * double(clamped_alpha(ls_p[h])))
                     : acc_t(0);
    }
  }
}

at::ScalarType acc_dtype(const at::Tensor& q) {
  return q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

// bias / mask / logit_scale converted once to the accumulation dtype, contiguous; undefined if absent.
struct AuxInputs {
  at::Tensor bias, mask, ls;
};

AuxInputs convert_aux(const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
                      const std::optional<at::Tensor>& logit_scale, const WindowAttnSizes& s, at::ScalarType acc) {
  AuxInputs a;
  if (bias.has_value()) a.bias = bias_as_hnn(*bias, s.H, s.N).to(acc).contiguous();
  if (mask.has_value()) a.mask = mask->to(acc).contiguous();
  if (logit_scale.has_value()) a.ls = logit_scale_as_h(*logit_scale, s.H).to(acc).contiguous();
  return a;
}


CpuDropout cpu_dropout(double dropout_p, const at::Tensor& rng_state) {
  CpuDropout d;
  if (dropout_p <= 0.0) return d;
  d.on = true;
  const int64_t* st = rng_state.const_data_ptr<int64_t>();
  d.seed = static_cast<uint64_t>(st[0]);
  d.offset = static_cast<uint64_t>(st[1]);
  d.threshold = fwa::dropout_threshold(static_cast<float>(dropout_p));
  d.scale = dropout_p < 1.0 ? 1.0 / (1.0 - dropout_p) : 0.0;
  return d;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fwd_cpu_impl(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                const std::optional<at::Tensor>& bias,
                                                const std::optional<at::Tensor>& mask,
                                                const std::optional<at::Tensor>& logit_scale, double scale,
                                                const WindowAttnSizes& s, const CpuDropout& drop) {
  at::Tensor out = make_out(q);
  at::Tensor lse = make_lse(q);
  if (s.B == 0 || s.H == 0) return {out, lse, make_qk_inv_norm(q, s)};
  const AuxInputs aux = convert_aux(bias, mask, logit_scale, s, acc_dtype(q));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, q.scalar_type(), "window_attention_fwd_cpu", [&] {
    fwd_kernel<scalar_t>(q, k, v, aux.bias, aux.mask, aux.ls, scale, s, drop, out, lse);
  });
  // (the CPU backward recomputes the norms in its own precision: qk_inv_norm is for the callers)
  return {out, lse, qk_inv_norm_aten(q, k, s)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> bwd_cpu_impl(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
    const std::optional<at::Tensor>& logit_scale, double scale, const WindowAttnSizes& s, const CpuDropout& drop,
    const QkvGrads& grads) {
  const at::ScalarType acc = acc_dtype(q);
  at::Tensor dq = grads.dq, dk = grads.dk, dv = grads.dv;
  at::Tensor dbias_acc = at::zeros({s.has_bias ? s.H : 0, s.N, s.N}, q.options().dtype(acc));
  at::Tensor dalpha_acc = at::zeros({s.cosine ? s.H : 0}, q.options().dtype(acc));
  if (s.B > 0 && s.H > 0) {
    const AuxInputs aux = convert_aux(bias, mask, logit_scale, s, acc);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, q.scalar_type(), "window_attention_bwd_cpu", [&] {
      bwd_kernel<scalar_t>(dout, q, k, v, aux.bias, aux.mask, aux.ls, scale, s, drop, dq, dk, dv, dbias_acc,
                           dalpha_acc);
    });
  }
  return {dq, dk, dv, finish_dbias(dbias_acc, bias, q), finish_dlogit(dalpha_acc, logit_scale, q)};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> window_attention_fwd_cpu(const at::Tensor& q, const at::Tensor& k,
                                                            const at::Tensor& v, const std::optional<at::Tensor>& bias,
                                                            const std::optional<at::Tensor>& mask,
                                                            const std::optional<at::Tensor>& logit_scale,
                                                            double scale, bool return_inv_norms) {
  const WindowAttnSizes s = check_fwd_args(q, k, v, bias, mask, logit_scale, scale, return_inv_norms);
  return fwd_cpu_impl(q, k, v, bias, mask, logit_scale, scale, s, CpuDropout{});
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_bwd_cpu(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& out,
    const at::Tensor& lse, const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
    const std::optional<at::Tensor>& logit_scale, double scale, const std::optional<at::Tensor>& qk_inv_norm) {
  // (qk_inv_norm validated; the CPU recomputes the norms)
  const WindowAttnSizes s = check_bwd_args(dout, q, k, v, out, lse, bias, mask, logit_scale, scale, qk_inv_norm);
  return bwd_cpu_impl(dout, q, k, v, bias, mask, logit_scale, scale, s, CpuDropout{}, fresh_qkv_grads(q, k, v));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_dropout_fwd_cpu(
    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& logit_scale, double scale,
    double dropout_p, bool return_inv_norms) {
  const WindowAttnSizes s = check_fwd_args(q, k, v, bias, mask, logit_scale, scale, return_inv_norms);
  check_dropout_p(dropout_p);
  at::Tensor rng_state = at::empty({dropout_p > 0.0 ? 2 : 0}, q.options().dtype(at::kLong));
  if (dropout_p > 0.0) {
    // One 64-bit seed from torch's CPU generator per call (torch.manual_seed reproduces it).
    auto gen = at::get_generator_or_default<at::CPUGeneratorImpl>(std::nullopt, at::detail::getDefaultCPUGenerator());
    uint64_t seed;
    {
      std::lock_guard<std::mutex> lock(gen->mutex_);
      seed = gen->random64();
    }
    rng_state[0] = static_cast<int64_t>(seed);
    rng_state[1] = 0;
  }
  auto [out, lse, qk_inv_norm] = fwd_cpu_impl(q, k, v, bias, mask, logit_scale, scale, s, cpu_dropout(dropout_p, rng_state));
  return {out, lse, rng_state, qk_inv_norm};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_dropout_bwd_cpu(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& out,
    const at::Tensor& lse, const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
    const std::optional<at::Tensor>& logit_scale, double scale, double dropout_p, const at::Tensor& rng_state,
    const std::optional<at::Tensor>& qk_inv_norm) {
  const WindowAttnSizes s = check_bwd_args(dout, q, k, v, out, lse, bias, mask, logit_scale, scale, qk_inv_norm);
  check_dropout_p(dropout_p);
  check_rng_state(rng_state, dropout_p, q);
  return bwd_cpu_impl(dout, q, k, v, bias, mask, logit_scale, scale, s,
                      cpu_dropout(dropout_p, rng_state.cpu()), fresh_qkv_grads(q, k, v));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> window_attention_dropout_bwd_cpu_into(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& out,
    const at::Tensor& lse, const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& mask,
    const std::optional<at::Tensor>& logit_scale, double scale, double dropout_p, const at::Tensor& rng_state,
    const std::optional<at::Tensor>& qk_inv_norm, const QkvGrads& grads) {
  const WindowAttnSizes s = check_bwd_args(dout, q, k, v, out, lse, bias, mask, logit_scale, scale, qk_inv_norm);
  check_dropout_p(dropout_p);
  check_rng_state(rng_state, dropout_p, q);
  return bwd_cpu_impl(dout, q, k, v, bias, mask, logit_scale, scale, s,
                      cpu_dropout(dropout_p, rng_state.cpu()), grads);
}

at::Tensor dropout_keep_mask_cpu(const at::Tensor& rng_state, int64_t B, int64_t H, int64_t N, double dropout_p) {
  check_dropout_p(dropout_p);
  TORCH_CHECK_VALUE(B >= 0 && H >= 0 && N >= 0 && N <= kMaxN, "dropout_keep_mask: need B, H >= 0 and 0 <= N <= ",
                    kMaxN, ", got B=", B, ", H=", H, ", N=", N);
  at::Tensor keep = at::ones({B, H, N, N}, rng_state.options().dtype(at::kBool));
  if (dropout_p <= 0.0 || keep.numel() == 0) return keep;
  TORCH_CHECK_VALUE(rng_state.dim() == 1 && rng_state.size(0) == 2 && rng_state.scalar_type() == at::kLong,
                    "dropout_keep_mask: rng_state must be the int64 tensor of 2 elements returned by "
                    "window_attention_dropout_fwd, but has shape ", rng_state.sizes(), " and dtype ",
                    rng_state.scalar_type());
  const CpuDropout dr = cpu_dropout(dropout_p, rng_state.contiguous());
  bool* kp = keep.data_ptr<bool>();
  at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh)
      for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < N; ++j)
          kp[(bh * N + i) * N + j] =
              fwa::dropout_keep(dr.seed, dr.offset, bh, static_cast<int>(i), static_cast<int>(j), dr.threshold);
  });
  return keep;
}

}  // namespace flash_window_attn
