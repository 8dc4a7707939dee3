// The blocked GEMM driver (gemm.h). Loop nest of one output block (kMc rows x kNc columns):
//
//   for each k block of kKc:            A's block packed k-major in groups of the tile's rows
//     for each panel of tile columns:   B's panel read in place (row-major B) or packed
//       for each tile of rows:          the register tile continues its chains (load = k > 0)
//
// Output blocks are the unit of threading, in a fixed split: every element's chain runs in one
// thread from k = 0 to k - 1, so the thread count cannot change a bit.
#include "runtime/cpu/gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "compiler/semantics/orders.h"
#include "runtime/cpu/isa_kernels.h"

namespace detrain::runtime::cpu {
namespace {

constexpr int64_t kKc = 192;     // k block: one B panel (kKc x 32 floats = 24 KiB) stays in L1
constexpr int64_t kNc = 256;     // columns per output block
constexpr int64_t kMcTiles = 8;  // tiles of rows per output block

// Per-thread packing space, grown once and reused: no allocation in the steady state.
struct Scratch {
  std::vector<float> a, b;
  float* A(size_t n) {
    if (a.size() < n) a.resize(n);
    return a.data();
  }
  float* B(size_t n) {
    if (b.size() < n) b.resize(n);
    return b.data();
  }
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Packs rows [i0, i0 + rows) x k [p0, p0 + kc) of A into groups of mr rows: out[g][p][r],
// +0 past the last row.
void PackA(const float* a, int64_t rs, int64_t cs, int64_t i0, int64_t rows, int64_t p0, int64_t kc,
           int64_t mr, float* out) {
  for (int64_t g = 0; g < rows; g += mr) {
    float* dst = out + g * kc;
    const int64_t live = std::min(mr, rows - g);
    if (cs == 1) {
      for (int64_t r = 0; r < live; ++r) {
        const float* src = a + (i0 + g + r) * rs + p0;
        for (int64_t p = 0; p < kc; ++p) dst[p * mr + r] = src[p];
      }
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = a + (p0 + p) * cs + (i0 + g) * rs;
        for (int64_t r = 0; r < live; ++r) dst[p * mr + r] = src[r * rs];
      }
    }
    for (int64_t r = live; r < mr; ++r) {
      for (int64_t p = 0; p < kc; ++p) dst[p * mr + r] = 0.0f;
    }
  }
}

// Packs k [p0, p0 + kc) x columns [j0, j0 + cols) of B into out[p][q] (q < nr), +0 past the
// last column.
void PackB(const float* b, int64_t rs, int64_t cs, int64_t p0, int64_t kc, int64_t j0, int64_t cols,
           int64_t nr, float* out) {
  if (cols < nr) std::fill(out, out + kc * nr, 0.0f);
  if (cs == 1) {
    for (int64_t p = 0; p < kc; ++p) std::memcpy(out + p * nr, b + (p0 + p) * rs + j0, cols * 4);
  } else {
    for (int64_t q = 0; q < cols; ++q) {
      const float* src = b + (j0 + q) * cs + p0 * rs;
      for (int64_t p = 0; p < kc; ++p) out[p * nr + q] = src[p * rs];
    }
  }
}

// One output block: rows [i0, i1), columns [j0, j1) of one batch's C.
void GemmBlock(const IsaKernels& kern, const float* a, int64_t ars, int64_t acs, const float* b,
               int64_t brs, int64_t bcs, float* c, int64_t n, int64_t k, int64_t i0, int64_t i1,
               int64_t j0, int64_t j1) {
  const int64_t mr = kern.gemm_mr, nr = kern.gemm_nr;
  const int64_t rows = i1 - i0;
  const int64_t groups = (rows + mr - 1) / mr;
  Scratch& scratch = ThreadScratch();
  float* pa = scratch.A(static_cast<size_t>(groups * mr * kKc));
  float* pb = scratch.B(static_cast<size_t>(kKc * nr));
  float edge[16 * 64];  // one partial tile (mr <= 16, nr <= 64)
  for (int64_t p0 = 0; p0 < k; p0 += kKc) {
    const int64_t kc = std::min(kKc, k - p0);
    const bool load = p0 > 0;
    PackA(a, ars, acs, i0, rows, p0, kc, mr, pa);
    for (int64_t j = j0; j < j1; j += nr) {
      const int64_t cols = std::min(nr, j1 - j);
      const float* panel;
      int64_t ldb;
      if (bcs == 1 && cols == nr) {
        panel = b + p0 * brs + j;
        ldb = brs;
      } else {
        PackB(b, brs, bcs, p0, kc, j, cols, nr, pb);
        panel = pb;
        ldb = nr;
      }
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t i = i0 + g * mr;
        const int64_t live = std::min(mr, i1 - i);
        float* tile = c + i * n + j;
        if (live == mr && cols == nr) {
          kern.gemm_tile(kc, pa + g * mr * kc, panel, ldb, tile, n, load);
          continue;
        }
        if (load) {
          for (int64_t r = 0; r < live; ++r) std::memcpy(edge + r * nr, tile + r * n, cols * 4);
        }
        kern.gemm_tile(kc, pa + g * mr * kc, panel, ldb, edge, nr, load);
        for (int64_t r = 0; r < live; ++r) std::memcpy(tile + r * n, edge + r * nr, cols * 4);
      }
    }
  }
  // Canonical NaNs: the hardware's payload is not the contract's.
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) {
      float& v = c[i * n + j];
      if (v != v) v = semantics::FmaChain(a + i * ars, acs, b + j * bcs, brs, k);
    }
  }
}

}  // namespace

void BatchedGemm(const MatrixView& a, const MatrixView& b, float* c, int64_t batch, int64_t m,
                 int64_t n, int64_t k, const ExecContext& ctx) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  const IsaKernels& kern = KernelsFor(ctx.isa);
  if (k == 0) {
    std::fill(c, c + batch * m * n, 0.0f);
    return;
  }
  const int64_t mc = kern.gemm_mr * kMcTiles;
  const int64_t mblocks = (m + mc - 1) / mc, nblocks = (n + kNc - 1) / kNc;
  const int64_t per_batch = mblocks * nblocks;
  ForBlocks(ctx, batch * per_batch, [&](int64_t blk) {
    const int64_t bi = blk / per_batch, rest = blk % per_batch;
    const int64_t i0 = (rest / nblocks) * mc, j0 = (rest % nblocks) * kNc;
    GemmBlock(kern, a.data + bi * a.batch, a.rows, a.cols, b.data + bi * b.batch, b.rows, b.cols,
              c + bi * m * n, n, k, i0, std::min(m, i0 + mc), j0, std::min(n, j0 + kNc));
  });
}

}  // namespace detrain::runtime::cpu
