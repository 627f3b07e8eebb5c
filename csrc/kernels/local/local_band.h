// The allowed band of local (sliding-window / block-sliding-window) attention, and the 64 x 64
// tile ranges the kernels visit. Plain C++ (host and device), no CUDA or torch types, so that
// tests/test_local_tile_ranges.py can compile it with the host compiler alone and compare every
// range below against a brute-force enumeration of allowed pairs.
//
// Rule (csrc/README.md of the local ops): with bi = i / block, bj = j / block, query i may see
// key j iff (left < 0 || bi - bj <= left) && (right < 0 || bj - bi <= right), 0 <= i, j < L.
//
// Because the rule only compares block indices, the allowed keys of one query form a contiguous
// interval, and so do the allowed queries of one key:
//   keys of query i:   [key_lo(i), key_hi(i)],   key_lo = (bi - left) * block,  key_hi = (bi + right + 1) * block - 1
//   queries of key j:  [query_lo(j), query_hi(j)], query_lo = (bj - right) * block, query_hi = (bj + left + 1) * block - 1
// each clamped to [0, L - 1] (an unbounded side is 0 or L - 1). All four are non-decreasing in
// their argument, and consecutive rows' intervals overlap or touch (left + right >= 0, the
// diagonal is always allowed), so for a block of consecutive rows r0..r1:
//   - the union of their allowed keys is exactly [key_lo(r0), key_hi(r1)] (contiguous, no holes):
//     every key tile in that range holds at least one allowed pair, and no other tile does;
//   - a key tile [c0, c0 + 63] is allowed for every pair iff c0 + 63 < L, key_lo(r1) <= c0 and
//     key_hi(r0) >= c0 + 63 (the "full" tiles, which need no per-element mask).
// The same holds with queries and keys swapped for the key-side backward kernel.
//
// Normalisation (normalize_local_band, done once on the host): block is capped at L (a block
// >= L puts every token in block 0), and a side of at least the number of blocks minus one is
// unbounded (-1). That keeps every product below (bi + right + 1) * block under about 2 L, and
// leaves the set of allowed pairs unchanged.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define FWA_BAND_HD __host__ __device__ __forceinline__
#else
#define FWA_BAND_HD inline
#endif

namespace fwa {

constexpr int kLocalTile = 64;   // rows of a query tile and keys of a key tile

struct LocalBand {
    int64_t L = 0;
    int64_t left = -1, right = -1;   // -1: unbounded
    int64_t block = 1;

    FWA_BAND_HD static int64_t clamp(int64_t x, int64_t lo, int64_t hi) {
        return x < lo ? lo : (x > hi ? hi : x);
    }
    // Allowed keys of query i (for i >= L the interval is still well defined and within
    // [0, L] x [-1, L - 1]; those rows are never stored).
    FWA_BAND_HD int64_t key_lo(int64_t i) const {
        return left < 0 ? 0 : clamp((i / block - left) * block, 0, L);
    }
    FWA_BAND_HD int64_t key_hi(int64_t i) const {
        return right < 0 ? L - 1 : clamp((i / block + right + 1) * block - 1, -1, L - 1);
    }
    // Allowed queries of key j.
    FWA_BAND_HD int64_t query_lo(int64_t j) const {
        return right < 0 ? 0 : clamp((j / block - right) * block, 0, L);
    }
    FWA_BAND_HD int64_t query_hi(int64_t j) const {
        return left < 0 ? L - 1 : clamp((j / block + left + 1) * block - 1, -1, L - 1);
    }
    FWA_BAND_HD bool allowed(int64_t i, int64_t j) const {
        const int64_t bi = i / block, bj = j / block;
        return i >= 0 && j >= 0 && i < L && j < L && (left < 0 || bi - bj <= left) &&
               (right < 0 || bj - bi <= right);
    }

    FWA_BAND_HD int64_t num_tiles() const { return (L + kLocalTile - 1) / kLocalTile; }
    FWA_BAND_HD int64_t tile_last_row(int64_t t) const {
        const int64_t r = t * kLocalTile + kLocalTile - 1;
        return r < L - 1 ? r : L - 1;
    }

    // Forward and query-side backward: key tiles [first, last] seen by query tile m.
    FWA_BAND_HD int64_t key_tile_first(int64_t m) const { return key_lo(m * kLocalTile) / kLocalTile; }
    FWA_BAND_HD int64_t key_tile_last(int64_t m) const { return key_hi(tile_last_row(m)) / kLocalTile; }
    // Key tile n is entirely allowed for query tile m: no per-element mask needed.
    FWA_BAND_HD bool key_tile_full(int64_t m, int64_t n) const {
        const int64_t c0 = n * kLocalTile, c1 = c0 + kLocalTile - 1;
        return c1 <= L - 1 && key_lo(tile_last_row(m)) <= c0 && key_hi(m * kLocalTile) >= c1;
    }

    // Key-side backward: query tiles [first, last] that see key tile n.
    FWA_BAND_HD int64_t query_tile_first(int64_t n) const { return query_lo(n * kLocalTile) / kLocalTile; }
    FWA_BAND_HD int64_t query_tile_last(int64_t n) const { return query_hi(tile_last_row(n)) / kLocalTile; }
    // Query tile m is entirely allowed for key tile n.
    FWA_BAND_HD bool query_tile_full(int64_t n, int64_t m) const {
        const int64_t r0 = m * kLocalTile, r1 = r0 + kLocalTile - 1;
        return r1 <= L - 1 && query_lo(tile_last_row(n)) <= r0 && query_hi(n * kLocalTile) >= r1;
    }
};

// The allowed partners [lo, hi] of one row as a single unsigned range test: x is allowed iff
// unsigned(x - lo) <= span. An empty interval (only rows >= L can have one) gets lo = L + 128,
// which no index the kernels test (all < L + 64) can reach.
struct RowInterval {
    int lo;
    unsigned span;
    FWA_BAND_HD void set(int64_t lo64, int64_t hi64, int L) {
        if (hi64 < lo64) {
            lo = L + 2 * kLocalTile;
            span = 0;
        } else {
            lo = static_cast<int>(lo64);
            span = static_cast<unsigned>(hi64 - lo64);
        }
    }
    FWA_BAND_HD bool contains(int x) const { return static_cast<unsigned>(x - lo) <= span; }
};

// Work items of the warp-specialised query-side kernels (the forward and the backward's query
// side): `cons` consecutive 64-query tiles of one slice, item m holding tiles m cons - shift to
// m cons - shift + cons - 1 (those in [0, tiles); 0 <= shift < cons), each walking the union of its
// tiles' key ranges (contiguous, see above) kT key tiles per step. The consumers of an item share
// its steps, so a step outside a consumer's own range leaves that consumer idle: the shift that
// puts the item boundaries where the ranges change saves those steps. block256x16 (blocks of 4
// tiles, L = 4096, 64 tiles): items 0-2, 3-5, ... straddle the blocks (788 steps per slice at
// kT = 1), while shift 2 (tile 0 alone, then 1-3, 4-6, ...) needs 748; causal L = 2048 (32 tiles):
// the partial item at the light end, 197 -> 187. Bands whose ranges move by one tile per tile (plain
// sliding windows) cost the same at every shift up to the ends.
FWA_BAND_HD int64_t local_ws_items(int64_t tiles, int cons, int shift) { return (tiles + shift + cons - 1) / cons; }

// The steps of one slice's items at `shift` (host: local_ws_item_shift; tests).
inline int64_t local_ws_item_steps(const LocalBand& b, int cons, int kT, int shift) {
    const int64_t tiles = b.num_tiles(), items = local_ws_items(tiles, cons, shift);
    int64_t steps = 0;
    for (int64_t m = 0; m < items; ++m) {
        const int64_t t0 = m * cons - shift, t1 = t0 + cons - 1;
        const int64_t first = b.key_tile_first(t0 < 0 ? 0 : t0), last = b.key_tile_last(t1 < tiles ? t1 : tiles - 1);
        steps += (last - first + kT) / kT;
    }
    return steps;
}

// The shift in [0, cons) with the fewest steps (the smallest on ties), where it saves at least 3 %
// of shift 0's; else 0, the items of every band before session 55. (H200, session 55 run A, GPU
// time with shift 0 / the fewest steps: block256x16, 5 % fewer, forward 68.3-68.5 -> 64.8-65.8 us,
// fwd+bwd 269.3-270.3 -> 262.8-268.4; causal L2048, 5 % fewer, forward 182.9-186.3 -> 179.9-184.2.
// win(1024,0), 0.6 % fewer, ran no faster. The floor keeps the items of such bands, where the few
// steps saved sit at the sequence's ends, and so also the d = 64 forward's 128-key steps and their
// rounding, as they were: win(512,0) L4096 saves 1.3 % at the query side, 2.4 % in the forward.)
inline int local_ws_item_shift(const LocalBand& b, int cons, int kT) {
    int best = 0;
    const int64_t steps0 = local_ws_item_steps(b, cons, kT, 0);
    int64_t best_steps = steps0;
    for (int s = 1; s < cons; ++s) {
        const int64_t steps = local_ws_item_steps(b, cons, kT, s);
        if (steps < best_steps) {
            best = s;
            best_steps = steps;
        }
    }
    return 100 * best_steps <= 97 * steps0 ? best : 0;
}

// Host-side normalisation of the op's arguments (L >= 1, block >= 1; any negative side is
// unbounded). Keeps the allowed set identical; see the header comment.
inline LocalBand normalize_local_band(int64_t L, int64_t left, int64_t right, int64_t block) {
    LocalBand b;
    b.L = L;
    b.block = block < 1 ? 1 : (block > L ? L : block);
    const int64_t nblocks = (L + b.block - 1) / b.block;
    b.left = (left < 0 || left >= nblocks - 1) ? -1 : left;
    b.right = (right < 0 || right >= nblocks - 1) ? -1 : right;
    return b;
}

}  // namespace fwa
