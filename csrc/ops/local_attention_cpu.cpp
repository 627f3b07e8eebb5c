// CPU implementation of local_attention_fwd / local_attention_bwd (contract:
// csrc/ops/local_attention_common.h, docs/local_attention.md).
//
// For batch b, query head h (kv head hk = h / (H / Hkv)), query row i and the contiguous band of keys
// [lo(i), hi(i)] it may attend (local_key_lo / local_key_hi):
//   s_ij = scale * <q_i, k_j>,  out_i = sum_j softmax_j(s_i) v_j,  lse_i = log sum_j exp(s_ij).
// Backward (FlashAttention-2 formulas, P recomputed):
//   dP_ij = <dout_i, v_j>,  D_i = sum_j P_ij dP_ij,  dS_ij = P_ij (dP_ij - D_i),
//   dq_i = scale sum_j dS_ij k_j,  dk_j = scale sum_{h in group} sum_i dS_ij q_i,  dv_j = sum_{h, i} P_ij dout_i.
//
// Only keys inside the band are visited, so the cost is proportional to L x window, not L^2: work is
// split in chunks of query rows (forward, dq) or of keys (dk, dv); a chunk stages the rows of the
// other operand that its band touches, a tile at a time, converted to the accumulation type
// (fp32 for fp16 / bf16 / fp32 inputs, fp64 for fp64), so that inner loops run on contiguous memory.
// The forward uses an online softmax across tiles.
//
// The backward does not read P back through the stored lse: lse is fp32, and for fp64 inputs its
// rounding would cap the gradients' accuracy at ~1e-7. Instead a first sweep over each query row's
// band recomputes the row max m_i, the row sum l_i and D_i = sum_j P_ij dP_ij in the accumulation
// type (D exactly, not as <dout_i, out_i> with out rounded to the input dtype); both the dq sweep and
// the dk/dv pass then use P_ij = exp(s_ij - m_i) / l_i. dk / dv are owned by (batch, kv head, key
// chunk) tasks that loop over the group's query heads in a fixed order: no atomics, no races, and the
// result is bitwise independent of the thread count.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/local_attention_common.h"

namespace flash_window_attn {
namespace {

constexpr int64_t kQueryChunk = 64;  // query rows per forward / dq task
constexpr int64_t kKeyTile = 128;    // keys staged at a time by a query chunk
constexpr int64_t kKeyChunk = 64;    // keys per dk / dv task
constexpr int64_t kQueryTile = 128;  // query rows staged at a time by a key chunk

// The band of the mask. Query i sees keys [key_lo(i), key_hi(i)]; by the symmetry of the mask
// (bi - bj <= left and bj - bi <= right), key j is seen by queries [query_lo(j), query_hi(j)], the
// same interval with left and right swapped. All four are non-decreasing in their argument.
struct Band {
  int64_t left, right, block, L;
  int64_t key_lo(int64_t i) const { return local_key_lo(i, left, block); }
  int64_t key_hi(int64_t i) const { return local_key_hi(i, right, block, L); }
  int64_t query_lo(int64_t j) const { return local_key_lo(j, right, block); }
  int64_t query_hi(int64_t j) const { return local_key_hi(j, left, block, L); }
};

// One (B, heads, L, d) tensor with unit last stride, addressed through its strides.
template <typename T>
struct Rows {
  T* ptr;
  int64_t sb, sh, sl;
  explicit Rows(const at::Tensor& t)
      : ptr(static_cast<T*>(t.data_ptr())), sb(t.stride(0)), sh(t.stride(1)), sl(t.stride(2)) {}
  T* row(int64_t b, int64_t h, int64_t i) const { return ptr + b * sb + h * sh + i * sl; }
};

// Rows [r0, r0 + n) of slice (b, h), converted: row-major into `rows` (n x d) and/or transposed into
// `cols` (d x n, leading dimension n). Either destination may be null.
template <typename scalar_t, typename acc_t>
void stage(const Rows<const scalar_t>& src, int64_t b, int64_t h, int64_t r0, int64_t n, int64_t d, acc_t* rows,
           acc_t* cols) {
  for (int64_t r = 0; r < n; ++r) {
    const scalar_t* x = src.row(b, h, r0 + r);
    if (rows != nullptr) {
      acc_t* y = rows + r * d;
      for (int64_t c = 0; c < d; ++c) y[c] = static_cast<acc_t>(x[c]);
    }
    if (cols != nullptr) {
      for (int64_t c = 0; c < d; ++c) cols[c * n + r] = static_cast<acc_t>(x[c]);
    }
  }
}

// s[j] = <x, column j of Yt> for j in [a, e); Yt is (d x ld). Eight components of the dot product
// per pass over s (d is a multiple of 8), added as a balanced tree: the loop vectorises over j and
// each s[j] takes d/8 + 3 rounding steps in depth rather than d.
template <typename acc_t>
inline void dot_columns(const acc_t* __restrict x, const acc_t* __restrict Yt, int64_t ld, int64_t a, int64_t e,
                        int64_t d, acc_t* __restrict s) {
  for (int64_t j = a; j < e; ++j) s[j] = acc_t(0);
  for (int64_t c = 0; c < d; c += 8) {
    const acc_t x0 = x[c], x1 = x[c + 1], x2 = x[c + 2], x3 = x[c + 3];
    const acc_t x4 = x[c + 4], x5 = x[c + 5], x6 = x[c + 6], x7 = x[c + 7];
    const acc_t* __restrict y0 = Yt + c * ld;
    const acc_t* __restrict y1 = y0 + ld;
    const acc_t* __restrict y2 = y1 + ld;
    const acc_t* __restrict y3 = y2 + ld;
    const acc_t* __restrict y4 = y3 + ld;
    const acc_t* __restrict y5 = y4 + ld;
    const acc_t* __restrict y6 = y5 + ld;
    const acc_t* __restrict y7 = y6 + ld;
    for (int64_t j = a; j < e; ++j) {
      s[j] += ((x0 * y0[j] + x1 * y1[j]) + (x2 * y2[j] + x3 * y3[j])) +
              ((x4 * y4[j] + x5 * y5[j]) + (x6 * y6[j] + x7 * y7[j]));
    }
  }
}

// y[c] += sum_{j in [a, e)} w[j] * Y[j * d + c]: four rows of Y per pass over y.
template <typename acc_t>
inline void add_weighted_rows(acc_t* __restrict y, const acc_t* __restrict w, const acc_t* __restrict Y, int64_t a,
                              int64_t e, int64_t d) {
  int64_t j = a;
  for (; j + 4 <= e; j += 4) {
    const acc_t w0 = w[j], w1 = w[j + 1], w2 = w[j + 2], w3 = w[j + 3];
    const acc_t* __restrict y0 = Y + j * d;
    const acc_t* __restrict y1 = y0 + d;
    const acc_t* __restrict y2 = y1 + d;
    const acc_t* __restrict y3 = y2 + d;
    for (int64_t c = 0; c < d; ++c) y[c] += (w0 * y0[c] + w1 * y1[c]) + (w2 * y2[c] + w3 * y3[c]);
  }
  for (; j < e; ++j) {
    const acc_t wj = w[j];
    const acc_t* __restrict yj = Y + j * d;
    for (int64_t c = 0; c < d; ++c) y[c] += wj * yj[c];
  }
}

// max(m, s[a..e)), NaN-propagating: a NaN input gives NaN outputs for its rows (as in PyTorch)
// instead of being skipped by std::max.
template <typename acc_t>
inline acc_t running_max(acc_t m, const acc_t* s, int64_t a, int64_t e) {
  if (std::isnan(m)) return m;
  for (int64_t j = a; j < e; ++j) {
    if (std::isnan(s[j])) return s[j];
    m = std::max(m, s[j]);
  }
  return m;
}

// exp(m_old - m_new): the factor that rescales sums taken relative to m_old; 1 when the max did not
// move (this also covers m_old = m_new = -inf, where the difference would be NaN).
template <typename acc_t>
inline acc_t rescale_factor(acc_t m_old, acc_t m_new) {
  return m_old == m_new ? acc_t(1) : std::exp(m_old - m_new);
}

// Elements of the (rows x keys) band that chunks of `size` rows visit through their staged union
// ranges, for rows side `lo`/`hi` (a cost estimate: the union covers each row's range).
template <typename Lo, typename Hi>
double band_cells(int64_t L, int64_t size, Lo lo, Hi hi) {
  double cells = 0;
  for (int64_t i0 = 0; i0 < L; i0 += size) {
    const int64_t i1 = std::min(L, i0 + size);
    cells += double(i1 - i0) * double(hi(i1 - 1) - lo(i0) + 1);
  }
  return cells;
}

// at::parallel_for grain for n_tasks tasks costing `work` multiply-adds in all: each thread gets at
// least ~2^18 of them (about 0.1 ms), so small problems run inline instead of paying for a parallel
// region (which costs far more than they do when the cores are busy).
int64_t grain_for(int64_t n_tasks, double work) {
  constexpr double kMinWorkPerThread = double(1 << 18);
  if (n_tasks <= 0 || work <= 0) return 1;
  const double per_task = work / double(n_tasks);
  return std::max<int64_t>(1, static_cast<int64_t>(std::min(double(n_tasks), std::ceil(kMinWorkPerThread / per_task))));
}

// The row range [first, last) of chunk `c` of `size` rows out of L.
inline void chunk_rows(int64_t c, int64_t size, int64_t L, int64_t& first, int64_t& last) {
  first = c * size;
  last = std::min(L, first + size);
}

// ----------------------------------------------------------------------------------------------
// forward

template <typename scalar_t>
void local_fwd_kernel(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const Band& band,
                      double scale, const LocalAttnSizes& s, at::Tensor& out, at::Tensor& lse) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t H = s.H, L = s.L, d = s.d, group = s.H / s.Hkv;
  const Rows<const scalar_t> qr(q), kr(k), vr(v);
  const Rows<scalar_t> outr(out);
  float* lse_p = lse.data_ptr<float>();
  const acc_t sc = static_cast<acc_t>(scale);
  const int64_t n_chunks = (L + kQueryChunk - 1) / kQueryChunk;
  const double cells = band_cells(L, kQueryChunk, [&](int64_t i) { return band.key_lo(i); },
                                  [&](int64_t i) { return band.key_hi(i); });
  const int64_t grain = grain_for(s.B * H * n_chunks, double(s.B * H) * cells * double(2 * d));

  at::parallel_for(0, s.B * H * n_chunks, grain, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> qbuf(kQueryChunk * d), kt(d * kKeyTile), vbuf(kKeyTile * d), acc(kQueryChunk * d),
        srow(kKeyTile), m(kQueryChunk);
    std::vector<double> l(kQueryChunk);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t chunk = t % n_chunks, bh = t / n_chunks, b = bh / H, h = bh % H, hk = h / group;
      int64_t i0, i1;
      chunk_rows(chunk, kQueryChunk, L, i0, i1);
      const int64_t nr = i1 - i0;
      stage(qr, b, h, i0, nr, d, qbuf.data(), static_cast<acc_t*>(nullptr));
      std::fill(acc.begin(), acc.begin() + nr * d, acc_t(0));
      std::fill(m.begin(), m.end(), -std::numeric_limits<acc_t>::infinity());
      std::fill(l.begin(), l.end(), 0.0);

      const int64_t k_first = band.key_lo(i0), k_end = band.key_hi(i1 - 1) + 1;
      for (int64_t j0 = k_first; j0 < k_end; j0 += kKeyTile) {
        const int64_t j1 = std::min(k_end, j0 + kKeyTile), nk = j1 - j0;
        stage(kr, b, hk, j0, nk, d, static_cast<acc_t*>(nullptr), kt.data());
        stage(vr, b, hk, j0, nk, d, vbuf.data(), static_cast<acc_t*>(nullptr));
        for (int64_t r = 0; r < nr; ++r) {
          const int64_t i = i0 + r;
          const int64_t a = std::max(band.key_lo(i), j0) - j0, e = std::min(band.key_hi(i) + 1, j1) - j0;
          if (a >= e) continue;
          acc_t* sr = srow.data();
          dot_columns(qbuf.data() + r * d, kt.data(), nk, a, e, d, sr);
          for (int64_t j = a; j < e; ++j) sr[j] *= sc;
          const acc_t m_new = running_max(m[r], sr, a, e);
          const acc_t corr = rescale_factor(m[r], m_new);
          acc_t* ar = acc.data() + r * d;
          if (corr != acc_t(1)) {
            for (int64_t c = 0; c < d; ++c) ar[c] *= corr;
          }
          double tile_sum = 0;
          for (int64_t j = a; j < e; ++j) {
            sr[j] = std::exp(sr[j] - m_new);
            tile_sum += sr[j];
          }
          l[r] = l[r] * double(corr) + tile_sum;
          m[r] = m_new;
          add_weighted_rows(ar, sr, vbuf.data(), a, e, d);
        }
      }

      float* lse_row = lse_p + (b * H + h) * L;
      for (int64_t r = 0; r < nr; ++r) {
        // every row has at least its own key (j = i is always allowed), so l > 0 for finite inputs
        const acc_t inv = static_cast<acc_t>(1.0 / l[r]);
        const acc_t* ar = acc.data() + r * d;
        scalar_t* o = outr.row(b, h, i0 + r);
        for (int64_t c = 0; c < d; ++c) o[c] = static_cast<scalar_t>(ar[c] * inv);
        lse_row[i0 + r] = static_cast<float>(double(m[r]) + std::log(l[r]));
      }
    }
  });
}

// ----------------------------------------------------------------------------------------------
// backward

template <typename scalar_t>
void local_bwd_kernel(const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                      const Band& band, double scale, const LocalAttnSizes& s, at::Tensor& dq, at::Tensor& dk,
                      at::Tensor& dv) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t B = s.B, H = s.H, Hkv = s.Hkv, L = s.L, d = s.d, group = s.H / s.Hkv;
  const Rows<const scalar_t> qr(q), kr(k), vr(v), dor(dout);
  const Rows<scalar_t> dqr(dq), dkr(dk), dvr(dv);
  const acc_t sc = static_cast<acc_t>(scale);

  // Per query row (b, h, i): the row max, 1 / row sum and D_i, written by pass 1, read by pass 2.
  std::vector<acc_t> row_max(B * H * L), row_inv_sum(B * H * L), row_D(B * H * L);

  // Pass 1: per (b, h, chunk of query rows): row statistics, then dq.
  const int64_t n_qchunks = (L + kQueryChunk - 1) / kQueryChunk;
  const double q_cells = band_cells(L, kQueryChunk, [&](int64_t i) { return band.key_lo(i); },
                                    [&](int64_t i) { return band.key_hi(i); });
  const int64_t q_grain = grain_for(B * H * n_qchunks, double(B * H) * q_cells * double(5 * d));
  at::parallel_for(0, B * H * n_qchunks, q_grain, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> qbuf(kQueryChunk * d), dobuf(kQueryChunk * d), dqacc(kQueryChunk * d), kt(d * kKeyTile),
        vt(d * kKeyTile), kbuf(kKeyTile * d), srow(kKeyTile), dprow(kKeyTile), m(kQueryChunk);
    std::vector<double> l(kQueryChunk), Dsum(kQueryChunk);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t chunk = t % n_qchunks, bh = t / n_qchunks, b = bh / H, h = bh % H, hk = h / group;
      int64_t i0, i1;
      chunk_rows(chunk, kQueryChunk, L, i0, i1);
      const int64_t nr = i1 - i0;
      stage(qr, b, h, i0, nr, d, qbuf.data(), static_cast<acc_t*>(nullptr));
      stage(dor, b, h, i0, nr, d, dobuf.data(), static_cast<acc_t*>(nullptr));
      std::fill(m.begin(), m.end(), -std::numeric_limits<acc_t>::infinity());
      std::fill(l.begin(), l.end(), 0.0);
      std::fill(Dsum.begin(), Dsum.end(), 0.0);
      std::fill(dqacc.begin(), dqacc.begin() + nr * d, acc_t(0));

      const int64_t k_first = band.key_lo(i0), k_end = band.key_hi(i1 - 1) + 1;
      int64_t staged = -1;  // first key of the tile in kt / vt / kbuf (a one-tile band is staged once)
      const auto stage_keys = [&](int64_t j0, int64_t nk) {
        if (staged == j0) return;
        stage(kr, b, hk, j0, nk, d, kbuf.data(), kt.data());
        stage(vr, b, hk, j0, nk, d, static_cast<acc_t*>(nullptr), vt.data());
        staged = j0;
      };

      // Both sweeps: per key tile of the band (staged), per row r of the block with keys in it, the
      // tile's columns [a, e) of that row, with s = q k^T (unscaled) in srow and dP = dout v^T in
      // dprow over them, handed to visit(r, a, e, s, dP).
      const auto sweep = [&](auto&& visit) {
        for (int64_t j0 = k_first; j0 < k_end; j0 += kKeyTile) {
          const int64_t j1 = std::min(k_end, j0 + kKeyTile), nk = j1 - j0;
          stage_keys(j0, nk);
          for (int64_t r = 0; r < nr; ++r) {
            const int64_t i = i0 + r;
            const int64_t a = std::max(band.key_lo(i), j0) - j0, e = std::min(band.key_hi(i) + 1, j1) - j0;
            if (a >= e) continue;
            acc_t* sr = srow.data();
            acc_t* dp = dprow.data();
            dot_columns(qbuf.data() + r * d, kt.data(), nk, a, e, d, sr);
            dot_columns(dobuf.data() + r * d, vt.data(), nk, a, e, d, dp);
            visit(r, a, e, sr, dp);
          }
        }
      };

      // Sweep A: m_i, l_i and sum_j exp(s_ij - m_i) dP_ij, online across tiles.
      sweep([&](int64_t r, int64_t a, int64_t e, acc_t* sr, acc_t* dp) {
        for (int64_t j = a; j < e; ++j) sr[j] *= sc;
        const acc_t m_new = running_max(m[r], sr, a, e);
        const double corr = double(rescale_factor(m[r], m_new));
        double tile_l = 0, tile_D = 0;
        for (int64_t j = a; j < e; ++j) {
          const acc_t p = std::exp(sr[j] - m_new);
          tile_l += p;
          tile_D += double(p * dp[j]);
        }
        l[r] = l[r] * corr + tile_l;
        Dsum[r] = Dsum[r] * corr + tile_D;
        m[r] = m_new;
      });
      const int64_t stat0 = (b * H + h) * L + i0;
      for (int64_t r = 0; r < nr; ++r) {
        row_max[stat0 + r] = m[r];
        row_inv_sum[stat0 + r] = static_cast<acc_t>(1.0 / l[r]);
        row_D[stat0 + r] = static_cast<acc_t>(Dsum[r] / l[r]);
      }

      // Sweep B: dS and dq_i = scale * sum_j dS_ij k_j.
      sweep([&](int64_t r, int64_t a, int64_t e, acc_t* sr, acc_t* dp) {
        const acc_t mi = row_max[stat0 + r], inv = row_inv_sum[stat0 + r], Di = row_D[stat0 + r];
        for (int64_t j = a; j < e; ++j) {
          const acc_t p = std::exp(sr[j] * sc - mi) * inv;
          dp[j] = p * (dp[j] - Di);  // dS
        }
        add_weighted_rows(dqacc.data() + r * d, dp, kbuf.data(), a, e, d);
      });
      for (int64_t r = 0; r < nr; ++r) {
        const acc_t* g = dqacc.data() + r * d;
        scalar_t* o = dqr.row(b, h, i0 + r);
        for (int64_t c = 0; c < d; ++c) o[c] = static_cast<scalar_t>(g[c] * sc);
      }
    }
  });

  // Pass 2: per (b, kv head, chunk of keys): dk and dv, summed over the group's query heads in head
  // order, then over query tiles in row order.
  const int64_t n_kchunks = (L + kKeyChunk - 1) / kKeyChunk;
  const double k_cells = band_cells(L, kKeyChunk, [&](int64_t j) { return band.query_lo(j); },
                                    [&](int64_t j) { return band.query_hi(j); });
  // at least one unit of work per task even when H = 0 (the task then only writes zeros)
  const int64_t k_grain = grain_for(B * Hkv * n_kchunks, double(B * std::max<int64_t>(H, 1)) * k_cells * double(4 * d));
  at::parallel_for(0, B * Hkv * n_kchunks, k_grain, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> kbuf(kKeyChunk * d), vbuf(kKeyChunk * d), dkacc(kKeyChunk * d), dvacc(kKeyChunk * d),
        qbuf(kQueryTile * d), qt(d * kQueryTile), dobuf(kQueryTile * d), dot(d * kQueryTile), srow(kQueryTile),
        dprow(kQueryTile);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t chunk = t % n_kchunks, bhk = t / n_kchunks, b = bhk / Hkv, hk = bhk % Hkv;
      int64_t j0, j1;
      chunk_rows(chunk, kKeyChunk, L, j0, j1);
      const int64_t nk = j1 - j0;
      stage(kr, b, hk, j0, nk, d, kbuf.data(), static_cast<acc_t*>(nullptr));
      stage(vr, b, hk, j0, nk, d, vbuf.data(), static_cast<acc_t*>(nullptr));
      std::fill(dkacc.begin(), dkacc.begin() + nk * d, acc_t(0));
      std::fill(dvacc.begin(), dvacc.begin() + nk * d, acc_t(0));

      const int64_t q_first = band.query_lo(j0), q_end = band.query_hi(j1 - 1) + 1;
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        const int64_t stat_row = (b * H + h) * L;
        for (int64_t i0 = q_first; i0 < q_end; i0 += kQueryTile) {
          const int64_t i1 = std::min(q_end, i0 + kQueryTile), nq = i1 - i0;
          stage(qr, b, h, i0, nq, d, qbuf.data(), qt.data());
          stage(dor, b, h, i0, nq, d, dobuf.data(), dot.data());
          const acc_t* mi = row_max.data() + stat_row + i0;
          const acc_t* inv = row_inv_sum.data() + stat_row + i0;
          const acc_t* Di = row_D.data() + stat_row + i0;
          for (int64_t c = 0; c < nk; ++c) {
            const int64_t j = j0 + c;
            const int64_t a = std::max(band.query_lo(j), i0) - i0, e = std::min(band.query_hi(j) + 1, i1) - i0;
            if (a >= e) continue;
            acc_t* sr = srow.data();
            acc_t* dp = dprow.data();
            dot_columns(kbuf.data() + c * d, qt.data(), nq, a, e, d, sr);
            dot_columns(vbuf.data() + c * d, dot.data(), nq, a, e, d, dp);
            for (int64_t r = a; r < e; ++r) {
              const acc_t p = std::exp(sr[r] * sc - mi[r]) * inv[r];
              sr[r] = p;
              dp[r] = p * (dp[r] - Di[r]);  // dS
            }
            add_weighted_rows(dvacc.data() + c * d, sr, dobuf.data(), a, e, d);
            add_weighted_rows(dkacc.data() + c * d, dp, qbuf.data(), a, e, d);
          }
        }
      }
      for (int64_t c = 0; c < nk; ++c) {
        scalar_t* gk = dkr.row(b, hk, j0 + c);
        scalar_t* gv = dvr.row(b, hk, j0 + c);
        const acc_t* ak = dkacc.data() + c * d;
        const acc_t* av = dvacc.data() + c * d;
        for (int64_t x = 0; x < d; ++x) {
          gk[x] = static_cast<scalar_t>(ak[x] * sc);
          gv[x] = static_cast<scalar_t>(av[x]);
        }
      }
    }
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> local_attention_fwd_cpu(const at::Tensor& q, const at::Tensor& k,
                                                           const at::Tensor& v, int64_t left, int64_t right,
                                                           int64_t block, double scale) {
  const LocalAttnSizes s = check_local_fwd_args(q, k, v, left, right, block, scale);
  at::Tensor out = make_local_out(q);
  at::Tensor lse = make_local_lse(q);
  if (out.numel() == 0) return {out, lse};
  const Band band{left, right, block, s.L};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, q.scalar_type(), "local_attention_fwd_cpu", [&] {
    local_fwd_kernel<scalar_t>(q, k, v, band, scale, s, out, lse);
  });
  return {out, lse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> local_attention_bwd_cpu(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& out,
    const at::Tensor& lse, int64_t left, int64_t right, int64_t block, double scale,
    const std::optional<at::Tensor>& out_lo) {
  const LocalAttnSizes s = check_local_bwd_args(dout, q, k, v, out, lse, left, right, block, scale);
  check_local_out_lo(out_lo, q);   // checked, not needed: the CPU backward computes D exactly
  at::Tensor dq = at::empty(q.sizes(), q.options());
  at::Tensor dk = at::empty(k.sizes(), k.options());
  at::Tensor dv = at::empty(v.sizes(), v.options());
  if (dk.numel() == 0 && dq.numel() == 0) return {dq, dk, dv};
  const Band band{left, right, block, s.L};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, q.scalar_type(), "local_attention_bwd_cpu", [&] {
    local_bwd_kernel<scalar_t>(dout, q, k, v, band, scale, s, dq, dk, dv);
  });
  return {dq, dk, dv};
}

}  // namespace flash_window_attn
