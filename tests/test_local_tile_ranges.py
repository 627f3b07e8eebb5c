"""Host-only check of the tile ranges the local-attention CUDA kernels visit (no GPU needed).

csrc/kernels/local/local_band.h is plain C++ shared by the kernels and the host. This test compiles
a small driver against it with the host C++ compiler and checks, for many (L, left, right, block),
against a brute-force enumeration of allowed (query, key) pairs:
  - forward / query-side backward: query tile m visits exactly the key tiles that hold an allowed
    pair of its rows, and a tile is marked "full" (no per-element mask) iff every pair is allowed;
  - key-side backward: the same with queries and keys swapped;
  - the per-row intervals [key_lo, key_hi] / [query_lo, query_hi] equal the rule element by element;
  - normalize_local_band leaves the allowed set unchanged;
  - the kernels' per-row unsigned range test (RowInterval) and hoisted full-tile test agree with it.
Skipped when no C++ compiler is found.
"""

import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER_DIR = os.path.join(ROOT, "csrc", "kernels", "local")

DRIVER = r"""
#include <cstdio>
#include <vector>
#include "local_band.h"

using fwa::LocalBand;
using fwa::kLocalTile;

static bool raw_allowed(long long L, long long left, long long right, long long block, long long i, long long j) {
    if (i < 0 || j < 0 || i >= L || j >= L) return false;
    const long long bi = i / block, bj = j / block;
    return (left < 0 || bi - bj <= left) && (right < 0 || bj - bi <= right);
}

static int check(long long L, long long left, long long right, long long block) {
    const LocalBand b = fwa::normalize_local_band(L, left, right, block);
    const long long T = b.num_tiles();
    // element level: normalisation keeps the set; intervals reproduce the rule
    for (long long i = 0; i < L; ++i)
        for (long long j = 0; j < L; ++j) {
            const bool a = raw_allowed(L, left, right, block, i, j);
            if (a != b.allowed(i, j)) { std::printf("normalize L=%lld l=%lld r=%lld blk=%lld i=%lld j=%lld\n", L, left, right, block, i, j); return 1; }
            if (a != (b.key_lo(i) <= j && j <= b.key_hi(i))) { std::printf("key interval L=%lld l=%lld r=%lld blk=%lld i=%lld j=%lld\n", L, left, right, block, i, j); return 1; }
            if (a != (b.query_lo(j) <= i && i <= b.query_hi(j))) { std::printf("query interval L=%lld l=%lld r=%lld blk=%lld i=%lld j=%lld\n", L, left, right, block, i, j); return 1; }
        }
    // rows >= L of the last tile (kernels compute them, never store them): intervals stay in range
    for (long long i = L; i < T * kLocalTile; ++i) {
        if (b.key_lo(i) < 0 || b.key_lo(i) > L || b.key_hi(i) < -1 || b.key_hi(i) > L - 1) { std::printf("pad row range\n"); return 1; }
        if (b.query_lo(i) < 0 || b.query_lo(i) > L || b.query_hi(i) < -1 || b.query_hi(i) > L - 1) { std::printf("pad key range\n"); return 1; }
    }
    // the kernels' per-row test (RowInterval) over every row / column index they touch,
    // padded rows (>= L) and padded columns (< L + 64) included
    for (long long i = 0; i < T * kLocalTile; ++i) {
        fwa::RowInterval kr, qr;
        kr.set(b.key_lo(i), b.key_hi(i), (int)L);
        qr.set(b.query_lo(i), b.query_hi(i), (int)L);
        for (long long j = 0; j < T * kLocalTile + 1; ++j) {
            const bool a = raw_allowed(L, left, right, block, i, j);   // symmetric roles below
            const bool aq = raw_allowed(L, left, right, block, j, i);
            if (i < L ? kr.contains((int)j) != a : (kr.contains((int)j) && j >= L)) { std::printf("RowInterval key L=%lld l=%lld r=%lld blk=%lld i=%lld j=%lld\n", L, left, right, block, i, j); return 1; }
            if (i < L ? qr.contains((int)j) != aq : (qr.contains((int)j) && j >= L)) { std::printf("RowInterval query L=%lld l=%lld r=%lld blk=%lld i=%lld j=%lld\n", L, left, right, block, i, j); return 1; }
        }
    }
    for (long long m = 0; m < T; ++m)
        for (long long n = 0; n < T; ++n) {
            // the kernels' hoisted form of key_tile_full / query_tile_full
            {
                const long long c0 = n * kLocalTile;
                const bool kfull = b.key_lo(b.tile_last_row(m)) <= c0 && c0 + kLocalTile - 1 <= b.key_hi(m * kLocalTile);
                const long long r0 = m * kLocalTile;
                const bool qfull = b.query_lo(b.tile_last_row(n)) <= r0 && r0 + kLocalTile - 1 <= b.query_hi(n * kLocalTile);
                if (kfull != b.key_tile_full(m, n) || qfull != b.query_tile_full(n, m)) { std::printf("hoisted full L=%lld\n", L); return 1; }
            }
            bool any = false, all = true;
            for (long long i = m * kLocalTile; i < (m + 1) * kLocalTile; ++i)
                for (long long j = n * kLocalTile; j < (n + 1) * kLocalTile; ++j) {
                    const bool a = raw_allowed(L, left, right, block, i, j);
                    any = any || a;
                    // "full" covers the padded rows / keys too: a full tile has none of them
                    all = all && a;
                }
            const bool fwd_visit = b.key_tile_first(m) <= n && n <= b.key_tile_last(m);
            const bool kv_visit = b.query_tile_first(n) <= m && m <= b.query_tile_last(n);
            if (fwd_visit != any || kv_visit != any) {
                std::printf("visit L=%lld l=%lld r=%lld blk=%lld m=%lld n=%lld any=%d fwd=%d kv=%d\n", L, left, right, block, m, n, any, fwd_visit, kv_visit);
                return 1;
            }
            // full tiles: every pair allowed, and padded rows excluded where the kernel relies on
            // it. Tiles with padded rows (query side) may still be "full" in key_tile_full: its
            // padded query rows are never stored, so only real rows count there.
            bool all_real_rows = true;
            for (long long i = m * kLocalTile; i < (m + 1) * kLocalTile && i < L; ++i)
                for (long long j = n * kLocalTile; j < (n + 1) * kLocalTile; ++j)
                    all_real_rows = all_real_rows && raw_allowed(L, left, right, block, i, j);
            if (b.key_tile_full(m, n) != all_real_rows) {
                std::printf("key_tile_full L=%lld l=%lld r=%lld blk=%lld m=%lld n=%lld\n", L, left, right, block, m, n);
                return 1;
            }
            bool all_real_keys = true;
            for (long long j = n * kLocalTile; j < (n + 1) * kLocalTile && j < L; ++j)
                for (long long i = m * kLocalTile; i < (m + 1) * kLocalTile; ++i)
                    all_real_keys = all_real_keys && raw_allowed(L, left, right, block, i, j);
            if (b.query_tile_full(n, m) != all_real_keys) {
                std::printf("query_tile_full L=%lld l=%lld r=%lld blk=%lld m=%lld n=%lld\n", L, left, right, block, m, n);
                return 1;
            }
            (void)all;
        }
    return 0;
}

int main() {
    const long long Ls[] = {1, 2, 17, 63, 64, 65, 128, 130, 200, 257};
    const long long sides[] = {-1, 0, 1, 2, 3, 5, 64, 100000};
    const long long blocks[] = {1, 3, 7, 16, 63, 64, 65, 100, 300};
    long long n = 0;
    for (long long L : Ls)
        for (long long left : sides)
            for (long long right : sides)
                for (long long block : blocks) {
                    if (check(L, left, right, block)) return 1;
                    ++n;
                }
    // a few large-L cases (tile level only would be cheaper, but these stay small enough)
    const long long bigs[][4] = {{1000, 4, 0, 37}, {1000, -1, 0, 1}, {1000, 255, 255, 1}, {777, 2, 1, 128}};
    for (auto& c : bigs) { if (check(c[0], c[1], c[2], c[3])) return 1; ++n; }
    std::printf("OK %lld\n", n);
    return 0;
}
"""


def _compiler():
    for cxx in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if cxx and shutil.which(cxx):
            return shutil.which(cxx)
    return None


def test_local_tile_ranges_match_brute_force(tmp_path):
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no host C++ compiler found")
    src = tmp_path / "band_check.cpp"
    exe = tmp_path / "band_check"
    src.write_text(DRIVER)
    subprocess.run([cxx, "-std=c++17", "-O2", "-I", HEADER_DIR, str(src), "-o", str(exe)], check=True)
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and res.stdout.startswith("OK"), res.stdout + res.stderr


# The warp-specialised query-side kernels' work items (local_ws_items / local_ws_item_steps /
# local_ws_item_shift in local_band.h): item m holds the 64-query tiles m cons - shift ..
# m cons - shift + cons - 1 within [0, tiles) and walks the union of their key tiles kT at a time.
SHIFT_DRIVER = r"""
#include <cstdio>
#include "local_band.h"
int main() {
    long long L, left, right, block;
    int cons, kT;
    while (std::scanf("%lld %lld %lld %lld %d %d", &L, &left, &right, &block, &cons, &kT) == 6) {
        const fwa::LocalBand b = fwa::normalize_local_band(L, left, right, block);
        std::printf("%d", fwa::local_ws_item_shift(b, cons, kT));
        for (int s = 0; s < cons; ++s)
            std::printf(" %lld %lld", (long long)fwa::local_ws_items(b.num_tiles(), cons, s),
                        (long long)fwa::local_ws_item_steps(b, cons, kT, s));
        std::printf("\n");
    }
    return 0;
}
"""


def _brute_item_steps(L, left, right, block, cons, kT, shift):
    """(items, steps) from the allowed pairs themselves: per item, the key tiles that hold an
    allowed pair of one of its rows (contiguous), walked kT at a time."""
    tiles = -(-L // 64)
    items = -(-(tiles + shift) // cons)

    def allowed(i, j):
        bi, bj = i // block, j // block
        return (left < 0 or bi - bj <= left) and (right < 0 or bj - bi <= right)

    steps = 0
    for m in range(items):
        t0, t1 = max(m * cons - shift, 0), min(m * cons - shift + cons - 1, tiles - 1)
        ktiles = {j // 64 for i in range(t0 * 64, min((t1 + 1) * 64, L)) for j in range(L) if allowed(i, j)}
        first, last = min(ktiles), max(ktiles)
        assert ktiles == set(range(first, last + 1))
        steps += (last - first + kT) // kT
    return items, steps


def test_local_ws_item_shift(tmp_path):
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no host C++ compiler found")
    src, exe = tmp_path / "shift.cpp", tmp_path / "shift"
    src.write_text(SHIFT_DRIVER)
    subprocess.run([cxx, "-std=c++17", "-O2", "-I", HEADER_DIR, str(src), "-o", str(exe)], check=True)
    small = [(L, left, right, block, cons, kT)
             for L in (1, 63, 64, 65, 200, 320)
             for (left, right) in ((-1, 0), (0, 0), (2, 0), (1, 1), (-1, -1), (3, 70), (100, 0))
             for block in (1, 16, 64, 100, 256)
             for (cons, kT) in ((3, 1), (3, 2), (2, 1))]
    # bands the benchmark runs (block256x16 B1 H12 L4096 d64, causal B8 H16 L2048 d64, win(1024,0)
    # L16384) and tools/local_bitwise.py's win(512,0) L4096 d64, whose step counts per slice at
    # kT = 1 / 2 are known (checked against an independent script too)
    known = {(4096, 15, 0, 256, 3, 1): (2, [788, 768, 748]), (4096, 15, 0, 256, 3, 2): (2, [394, 384, 374]),
             (2048, -1, 0, 1, 3, 1): (1, [197, 187, 208]), (2048, -1, 0, 1, 3, 2): (1, [101, 96, 107]),
             # win(1024,0) L16384: shift 2 saves 0.6 %, under the 3 % floor; win(512,0) L4096 2.4 %
             (16384, 1024, 0, 1, 3, 1): (0, [1581, 1576, 1571]), (4096, 512, 0, 1, 3, 2): (0, [123, 121, 120])}
    cases = small + list(known)
    res = subprocess.run([str(exe)], input="\n".join(" ".join(map(str, c)) for c in cases) + "\n",
                         capture_output=True, text=True, timeout=120, check=True)
    lines = res.stdout.split("\n")
    assert len([ln for ln in lines if ln]) == len(cases)
    for case, line in zip(cases, lines):
        vals = list(map(int, line.split()))
        shift, pairs = vals[0], [(vals[1 + 2 * s], vals[2 + 2 * s]) for s in range(case[4])]
        steps = [st for _, st in pairs]
        if case in known:
            assert (shift, steps) == known[case], (case, shift, steps)
        else:
            assert pairs == [_brute_item_steps(*case, s) for s in range(case[4])], case
        # the shift with the fewest steps (the first of equals) where it saves at least 3 %, else 0
        best = steps.index(min(steps))
        assert shift == (best if 100 * steps[best] <= 97 * steps[0] else 0), (case, line)
