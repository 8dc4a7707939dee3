// The blocked GEMM driver (gemm.h). Loop nest of one output block:
//
//   for each k block of kKc:            B's block packed once, in panels of the tile's columns
//     for each kMcTiles tiles of rows:  A's rows packed k-major in groups of the tile's rows (a
//                                       row- or column-major A is read in place by the AVX-512
//                                       tile instead, InPlaceTile: charlm's 1024 x 64 x 256
//                                       products ran 25-30 % faster without the transposes)
//       for each panel:                 (the B panel stays in L1)
//         for each tile of rows:        the register tile continues its chains (load = k > 0)
//
// Output blocks are the unit of threading: every element's chain runs in one block, from k = 0
// to k - 1 with the same k blocks, so neither the split nor the thread count changes a bit.
#include "runtime/cpu/gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "compiler/semantics/orders.h"
#include "compiler/semantics/scalar.h"
#include "runtime/cpu/isa_kernels.h"

namespace detrain::runtime::cpu {
namespace {

constexpr int64_t kKc = 192;  // k block: a packed B panel (kKc x 32 floats = 24 KiB) stays in L1
// Output blocks of at most this many rows read row-major B in place (a value is used by few
// tiles, so packing it would cost more than it saves).
constexpr int64_t kDirectRows = 64;
constexpr int64_t kMcTiles = 8;  // tiles of rows packed at once (A: 96 x 192 floats = 72 KiB, L2)

// Per-thread packing space, grown once and reused (no allocation in the steady state), 64-byte
// aligned so that every packed panel row is one cache line for the tile's vector loads.
struct Scratch {
  std::vector<float> a, b, t;
  static float* Aligned(std::vector<float>& v, size_t n) {
    if (v.size() < n + 16) v.resize(n + 16);
    auto address = reinterpret_cast<uintptr_t>(v.data());
    return v.data() + ((64 - address % 64) % 64) / sizeof(float);
  }
  float* A(size_t n) { return Aligned(a, n); }
  float* B(size_t n) { return Aligned(b, n); }
  float* T(size_t n) { return Aligned(t, n); }
};

int64_t RoundUp(int64_t x, int64_t unit) { return (x + unit - 1) / unit * unit; }

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Packs rows [i0, i0 + rows) x k [p0, p0 + kc) of A into groups of mr rows: out[g][p][r],
// +0 past the last row. Row-major A is transposed in register blocks, column-major A copied by
// rows; other layouts element by element. (Packing moves bits; it computes nothing.)
void PackA(const IsaKernels& kern, const float* a, int64_t rs, int64_t cs, int64_t i0, int64_t rows,
           int64_t p0, int64_t kc, int64_t mr, float* out) {
  for (int64_t g = 0; g < rows; g += mr) {
    float* dst = out + g * kc;
    const int64_t live = std::min(mr, rows - g);
    const float* src = a + (i0 + g) * rs + p0 * cs;
    if (cs == 1) {
      kern.transpose32(reinterpret_cast<const uint32_t*>(src), rs, reinterpret_cast<uint32_t*>(dst),
                       mr, kc, live);
    } else if (rs == 1) {
      for (int64_t p = 0; p < kc; ++p)
        std::memcpy(dst + p * mr, src + p * cs, static_cast<size_t>(live) * 4);
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        for (int64_t r = 0; r < live; ++r) dst[p * mr + r] = src[r * rs + p * cs];
      }
    }
    if (live < mr) {
      for (int64_t p = 0; p < kc; ++p) std::fill(dst + p * mr + live, dst + (p + 1) * mr, 0.0f);
    }
  }
}

// Packs k [p0, p0 + kc) x columns [j0, j0 + cols) of B into panels of nr columns:
// out[panel][p][q], +0 past the last column. Row-major B is copied by rows, column-major B
// transposed in register blocks; other layouts element by element.
void PackB(const IsaKernels& kern, const float* b, int64_t rs, int64_t cs, int64_t p0, int64_t kc,
           int64_t j0, int64_t cols, int64_t nr, float* out) {
  for (int64_t j = 0; j < cols; j += nr) {
    float* dst = out + j * kc;
    const int64_t live = std::min(nr, cols - j);
    const float* src = b + p0 * rs + (j0 + j) * cs;
    if (cs == 1) {
      for (int64_t p = 0; p < kc; ++p)
        std::memcpy(dst + p * nr, src + p * rs, static_cast<size_t>(live) * 4);
    } else if (rs == 1) {
      kern.transpose32(reinterpret_cast<const uint32_t*>(src), cs, reinterpret_cast<uint32_t*>(dst),
                       nr, kc, live);
    } else {
      for (int64_t q = 0; q < live; ++q) {
        for (int64_t p = 0; p < kc; ++p) dst[p * nr + q] = src[p * rs + q * cs];
      }
    }
    if (live < nr) {
      for (int64_t p = 0; p < kc; ++p) std::fill(dst + p * nr + live, dst + (p + 1) * nr, 0.0f);
    }
  }
}

// The tile that reads an A of strides (rs, cs) in place, with the stride it takes, or null (A is
// packed): a row-major A by rows, a column-major one (a weight gradient's x^T) by columns, where
// the path has such a tile and that stride is not a multiple of 4 KiB (the cache lines the tile
// streams through would all meet in one L1 set). Only full groups of rows are read in place.
GemmTileInPlaceFn InPlaceTile(const IsaKernels& kern, const APacker* packer, int64_t rs, int64_t cs,
                              int64_t* stride) {
  if (packer != nullptr) return nullptr;
  if (cs == 1 && (rs * 4) % 4096 != 0) {
    *stride = rs;
    return kern.gemm_tile_rows_in_place;
  }
  if (rs == 1 && (cs * 4) % 4096 != 0) {
    *stride = cs;
    return kern.gemm_tile_columns_in_place;
  }
  return nullptr;
}

// C(i, j) by the chain the contract defines (gemm.h), which fixes the NaN payload: fmaf(A, B, acc)
// over p ascending, or fmaf(B, A, acc) for a swapped product. `arow` is A's row i, `acs` the
// stride between its elements.
float DefinedChainOfRow(const float* arow, int64_t acs, const float* b, int64_t brs, int64_t bcs,
                        int64_t k, int64_t j, bool swapped) {
  return swapped ? semantics::FmaChain(b + j * bcs, brs, arow, acs, k)
                 : semantics::FmaChain(arow, acs, b + j * bcs, brs, k);
}

float DefinedChain(const float* a, int64_t ars, int64_t acs, const float* b, int64_t brs,
                   int64_t bcs, int64_t k, int64_t i, int64_t j, bool swapped) {
  return DefinedChainOfRow(a + i * ars, acs, b, brs, bcs, k, j, swapped);
}

// One output block: rows [i0, i1), columns [j0, j1) of one batch's C (row stride n). B's block
// is packed once per k block and shared by every row block; A's per row block.
// With `packer`, A's blocks come from it (MatrixView::packer; a, ars and acs unused).
void GemmBlock(const IsaKernels& kern, const float* a, int64_t ars, int64_t acs,
               const APacker* packer, const float* b, int64_t brs, int64_t bcs, float* c, int64_t n,
               int64_t k, int64_t i0, int64_t i1, int64_t j0, int64_t j1, bool swapped) {
  const int64_t mr = kern.gemm_mr, nr = kern.gemm_nr;
  const int64_t mc = mr * kMcTiles;
  const int64_t cols = j1 - j0;
  const int64_t panels = (cols + nr - 1) / nr;
  Scratch& scratch = ThreadScratch();
  float* pa = scratch.A(static_cast<size_t>(mc * kKc));
  float* pb = scratch.B(static_cast<size_t>(panels * nr * kKc));
  float edge[16 * 64];  // one partial tile (mr <= 16, nr <= 64)
  int64_t a_stride = 0;
  const GemmTileInPlaceFn a_tile = InPlaceTile(kern, packer, ars, acs, &a_stride);
  const bool a_in_place = a_tile != nullptr;
  for (int64_t p0 = 0; p0 < k; p0 += kKc) {
    const int64_t kc = std::min(kKc, k - p0);
    const bool load = p0 > 0;
    const bool last = p0 + kc == k;
    // Few rows use each B value only a few times: read B's full panels in place then, and pack
    // only a partial last panel.
    const bool direct = bcs == 1 && i1 - i0 <= kDirectRows;
    if (!direct) {
      PackB(kern, b, brs, bcs, p0, kc, j0, cols, nr, pb);
    } else if (cols % nr != 0) {
      PackB(kern, b, brs, bcs, p0, kc, j0 + cols / nr * nr, cols % nr, nr,
            pb + cols / nr * nr * kc);
    }
    for (int64_t ic = i0; ic < i1; ic += mc) {
      const int64_t rows = std::min(mc, i1 - ic);
      const int64_t groups = (rows + mr - 1) / mr;
      if (packer != nullptr) {
        packer->Pack(ic, rows, p0, kc, mr, pa);
      } else if (!a_in_place) {
        PackA(kern, a, ars, acs, ic, rows, p0, kc, mr, pa);
      } else if (rows % mr != 0) {  // only the partial last group, which the tile cannot read
        const int64_t full = rows / mr * mr;
        PackA(kern, a, ars, acs, ic + full, rows - full, p0, kc, mr, pa + full * kc);
      }
      for (int64_t jp = 0; jp < panels; ++jp) {
        const int64_t j = j0 + jp * nr;
        const int64_t live_cols = std::min(nr, j1 - j);
        const bool b_in_place = direct && live_cols == nr;
        const float* panel = b_in_place ? b + p0 * brs + j : pb + jp * nr * kc;
        const int64_t ldb = b_in_place ? brs : nr;
        for (int64_t g = 0; g < groups; ++g) {
          const int64_t i = ic + g * mr;
          const int64_t live = std::min(mr, i1 - i);
          float* tile = c + i * n + j;
          const float* group = pa + g * mr * kc;
          const float* group_in_place = a_in_place && live == mr ? a + i * ars + p0 * acs : nullptr;
          auto run_tile = [&](float* out, int64_t ldc) {
            return group_in_place != nullptr
                       ? a_tile(kc, group_in_place, a_stride, panel, ldb, out, ldc, load)
                       : kern.gemm_tile(kc, group, panel, ldb, out, ldc, load);
          };
          // Whether the tile holds a NaN: the tile says so from its registers; a partial tile's
          // padding may be NaN (0 x inf), so its live part is looked at then.
          bool nan = false;
          if (live == mr && live_cols == nr) {
            nan = run_tile(tile, n);
          } else {
            if (load) {
              for (int64_t r = 0; r < live; ++r)
                std::memcpy(edge + r * nr, tile + r * n, static_cast<size_t>(live_cols) * 4);
            }
            nan = run_tile(edge, nr) && kern.tile_has_nan(edge, nr, live, live_cols);
            for (int64_t r = 0; r < live; ++r)
              std::memcpy(tile + r * n, edge + r * nr, static_cast<size_t>(live_cols) * 4);
          }
          // Canonical NaNs, once a tile's chains are complete: the hardware's payload is not the
          // contract's.
          if (last && nan) {
            std::vector<float> whole;  // with a packer: the tile's group over all of k, once
            for (int64_t r = i; r < i + live; ++r) {
              for (int64_t q = j; q < j + live_cols; ++q) {
                float& v = c[r * n + q];
                if (v == v) continue;
                if (packer == nullptr) {
                  v = DefinedChain(a, ars, acs, b, brs, bcs, k, r, q, swapped);
                  continue;
                }
                if (whole.empty()) {
                  whole.resize(static_cast<size_t>(mr * k));
                  packer->Pack(i, mr, 0, k, mr, whole.data());  // i is the group's first row
                }
                v = DefinedChainOfRow(whole.data() + (r - i), mr, b, brs, bcs, k, q, swapped);
              }
            }
          }
        }
      }
    }
  }
}

// The split into output blocks: batches first, then whichever of rows or columns costs less
// repacking (splitting rows repacks B per block, splitting columns repacks A), about one block
// per thread. The split never changes a bit: each element's whole chain runs in one block, with
// the same k blocks.
struct Split {
  int64_t rb = 1, cb = 1, rstep = 0, cstep = 0;
};

Split SplitOutput(const IsaKernels& kern, const ExecContext& ctx, int64_t batch, int64_t m,
                  int64_t n) {
  const int64_t threads = ctx.pool == nullptr ? 1 : static_cast<int64_t>(ctx.pool->size());
  Split s;
  if (batch < threads) {
    const int64_t want = (threads + batch - 1) / batch;
    const int64_t mr = kern.gemm_mr, nr = kern.gemm_nr;
    if (m < n) {
      s.cb = std::min(want, (n + nr - 1) / nr);
    } else {
      s.rb = std::min(want, (m + mr - 1) / mr);
    }
  }
  s.rstep = RoundUp((m + s.rb - 1) / s.rb, kern.gemm_mr);
  s.cstep = RoundUp((n + s.cb - 1) / s.cb, kern.gemm_nr);
  s.rb = (m + s.rstep - 1) / s.rstep;
  s.cb = (n + s.cstep - 1) / s.cstep;
  return s;
}

// TileStepKind -> the op (isa_kernels.h).
constexpr semantics::BinaryOp kStepOps[] = {
    semantics::BinaryOp::kAdd, semantics::BinaryOp::kSubtract, semantics::BinaryOp::kMultiply,
    semantics::BinaryOp::kDivide};

// Element (i, j) of one leaf's product by its defined chain (gemm.h: NaN payloads).
float LeafChain(const GemmLeaf& leaf, int64_t i, int64_t j) {
  return DefinedChain(leaf.a.data, leaf.a.rows, leaf.a.cols, leaf.b.data, leaf.b.rows, leaf.b.cols,
                      leaf.k, i, j, leaf.swapped);
}

// Canonical NaNs of a GemmTree's rows [i0, i1) x columns [j0, j1): every leaf's chain and every
// sum recomputed by the rule for each NaN element.
void RedoTreeNans(const GemmLeaf* leaves, int64_t count, const TreeStep* steps, int64_t num_steps,
                  int32_t result, float* c, int64_t n, int64_t i0, int64_t i1, int64_t j0,
                  int64_t j1) {
  float values[kMaxGemmTreeLeaves];
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) {
      float& v = c[i * n + j];
      if (v == v) continue;
      for (int64_t s = 0; s < count; ++s) values[s] = LeafChain(leaves[s], i, j);
      for (int64_t st = 0; st < num_steps; ++st) {
        const TreeStep& step = steps[st];
        const float x = values[step.dst];
        const float y = step.src >= 0 ? values[step.src] : step.constant;
        values[step.dst] = semantics::ApplyBinary<float>(
            kStepOps[step.kind], step.constant_first ? y : x, step.constant_first ? x : y);
      }
      v = values[result];
    }
  }
}

// One output block of GemmTree: rows [i0, i1), columns [j0, j1). Every leaf's B is packed once
// for the block (panels of nr columns, all of its k); A in groups of kMcTiles tiles of rows.
// Per tile, each leaf's product goes to its own slot of nr x mr values (L1), the tree adds the
// slots in place, and the result slot is stored once.
void TreeBlock(const IsaKernels& kern, const GemmLeaf* leaves, int64_t count, const TreeStep* steps,
               int64_t num_steps, int32_t result, float* c, int64_t n, int64_t i0, int64_t i1,
               int64_t j0, int64_t j1) {
  const int64_t mr = kern.gemm_mr, nr = kern.gemm_nr;
  const int64_t mc = mr * kMcTiles;
  const int64_t cols = j1 - j0;
  const int64_t panels = (cols + nr - 1) / nr;
  int64_t koff[kMaxGemmTreeLeaves + 1] = {0};
  for (int64_t s = 0; s < count; ++s) koff[s + 1] = koff[s] + leaves[s].k;
  const int64_t total_k = koff[count];
  GemmTileInPlaceFn leaf_tile[kMaxGemmTreeLeaves];  // per leaf: A read in place, or null
  int64_t leaf_stride[kMaxGemmTreeLeaves] = {0};
  for (int64_t s = 0; s < count; ++s)
    leaf_tile[s] = InPlaceTile(kern, nullptr, leaves[s].a.rows, leaves[s].a.cols, &leaf_stride[s]);
  Scratch& scratch = ThreadScratch();
  float* pa = scratch.A(static_cast<size_t>(mc * total_k));
  float* pb = scratch.B(static_cast<size_t>(panels * nr * total_k));
  const int64_t slot = mr * nr;
  float* tiles = scratch.T(static_cast<size_t>(count * slot));
  for (int64_t s = 0; s < count; ++s) {
    const GemmLeaf& leaf = leaves[s];
    PackB(kern, leaf.b.data, leaf.b.rows, leaf.b.cols, 0, leaf.k, j0, cols, nr,
          pb + panels * nr * koff[s]);
  }
  for (int64_t ic = i0; ic < i1; ic += mc) {
    const int64_t rows = std::min(mc, i1 - ic);
    const int64_t groups = (rows + mr - 1) / mr;
    for (int64_t s = 0; s < count; ++s) {
      const GemmLeaf& leaf = leaves[s];
      float* out = pa + mc * koff[s];
      if (leaf_tile[s] == nullptr) {
        PackA(kern, leaf.a.data, leaf.a.rows, leaf.a.cols, ic, rows, 0, leaf.k, mr, out);
      } else if (rows % mr != 0) {  // the partial last group only
        const int64_t full = rows / mr * mr;
        PackA(kern, leaf.a.data, leaf.a.rows, leaf.a.cols, ic + full, rows - full, 0, leaf.k, mr,
              out + full * leaf.k);
      }
    }
    for (int64_t jp = 0; jp < panels; ++jp) {
      const int64_t j = j0 + jp * nr;
      const int64_t live_cols = std::min(nr, j1 - j);
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t i = ic + g * mr;
        const int64_t live = std::min(mr, i1 - i);
        for (int64_t s = 0; s < count; ++s) {
          const GemmLeaf& leaf = leaves[s];
          const int64_t k = leaf.k;
          const float* panel = pb + panels * nr * koff[s] + jp * nr * k;
          if (leaf_tile[s] != nullptr && live == mr) {
            leaf_tile[s](k, leaf.a.data + i * leaf.a.rows, leaf_stride[s], panel, nr,
                         tiles + s * slot, nr, false);
          } else {
            kern.gemm_tile(k, pa + mc * koff[s] + g * mr * k, panel, nr, tiles + s * slot, nr,
                           false);
          }
        }
        for (int64_t st = 0; st < num_steps; ++st) {
          const TreeStep& step = steps[st];
          kern.tile_step(step.kind, step.constant_first, tiles + step.dst * slot,
                         step.src >= 0 ? tiles + step.src * slot : nullptr, step.constant, slot);
        }
        const float* sum = tiles + result * slot;
        for (int64_t r = 0; r < live; ++r)
          std::memcpy(c + (i + r) * n + j, sum + r * nr, static_cast<size_t>(live_cols) * 4);
        if (kern.tile_has_nan(sum, nr, live, live_cols))
          RedoTreeNans(leaves, count, steps, num_steps, result, c, n, i, i + live, j,
                       j + live_cols);
      }
    }
  }
}

// The loops for a product of n columns: the ISA's narrow tile when n fits it.
const IsaKernels& TileFor(Isa isa, int64_t n) {
  const IsaKernels& kern = KernelsFor(isa);
  return kern.narrow != nullptr && n <= kern.narrow->gemm_nr ? *kern.narrow : kern;
}

}  // namespace

void BatchedGemm(const MatrixView& a, const MatrixView& b, float* c, int64_t batch, int64_t m,
                 int64_t n, int64_t k, const ExecContext& ctx, bool swapped) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  const IsaKernels& kern = TileFor(ctx.isa, n);
  if (k == 0) {
    std::fill(c, c + batch * m * n, 0.0f);
    return;
  }
  const Split split = SplitOutput(kern, ctx, batch, m, n);
  const int64_t per_batch = split.rb * split.cb;
  ForBlocks(ctx, batch * per_batch, [&](int64_t blk) {
    const int64_t bi = blk / per_batch, rest = blk % per_batch;
    const int64_t i0 = (rest / split.cb) * split.rstep, j0 = (rest % split.cb) * split.cstep;
    GemmBlock(kern, a.data + bi * a.batch, a.rows, a.cols, a.packer, b.data + bi * b.batch, b.rows,
              b.cols, c + bi * m * n, n, k, i0, std::min(m, i0 + split.rstep), j0,
              std::min(n, j0 + split.cstep), swapped);
  });
}

void GemmTree(const GemmLeaf* leaves, int64_t count, const TreeStep* steps, int64_t num_steps,
              int32_t result, float* c, int64_t m, int64_t n, const ExecContext& ctx) {
  if (m <= 0 || n <= 0 || count <= 0 || count > kMaxGemmTreeLeaves) return;
  const IsaKernels& kern = TileFor(ctx.isa, n);
  const Split split = SplitOutput(kern, ctx, 1, m, n);
  ForBlocks(ctx, split.rb * split.cb, [&](int64_t blk) {
    const int64_t i0 = (blk / split.cb) * split.rstep, j0 = (blk % split.cb) * split.cstep;
    TreeBlock(kern, leaves, count, steps, num_steps, result, c, n, i0,
              std::min(m, i0 + split.rstep), j0, std::min(n, j0 + split.cstep));
  });
}

}  // namespace detrain::runtime::cpu
