// The exact f32 GEMM behind every dot and convolution of the CPU backend.
//
// C(i, j) = fmaf chain over p ascending from +0 of A(i, p) * B(p, j): the kFmaChain order of
// compiler/semantics/orders.h, so every element has the interpreter's bits. The speed comes from
// the usual structure (Goto and van de Geijn, "Anatomy of high-performance matrix
// multiplication", 2008) with one rule added: blocking over k never starts a new sum. A k block
// after the first loads the tile's running values from C and continues the same chains (load,
// fma on, store), which rounds exactly as one register chain would. Threads split output blocks,
// never k. An element that comes out NaN is recomputed with semantics::FmaChain, whose NaN
// payload is canonical (the vector units and libm pick different ones).
//
// Operands are strided views, so transposed and permuted dot operands are read in place while
// they are packed; nothing is copied beforehand.
//
// Thread safety: Gemm may run concurrently on different outputs; it uses per-thread scratch.
#ifndef DETRAIN_RUNTIME_CPU_GEMM_H_
#define DETRAIN_RUNTIME_CPU_GEMM_H_

#include <cstdint>

#include "runtime/cpu/kernels.h"

namespace detrain::runtime::cpu {

// Element (i, p) of a matrix is data[i * rows + p * cols] (strides in elements, any sign-free
// layout: row-major, column-major or a permuted view), and batch b starts at data + b * batch.
//
// `packer` (BatchedGemm's A only): A is not in memory; the GEMM asks for each block of it,
// already packed, just before its tiles read it (a convolution's im2col, produced block by block
// in L2 instead of written whole and read back). data, rows, cols and batch are unused.
class APacker;
struct MatrixView {
  const float* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t batch = 0;
  const APacker* packer = nullptr;
};

// A producer of A's blocks for the GEMM (MatrixView::packer). Pack writes rows [i0, i0 + rows)
// x columns [p0, p0 + kc) of A in groups of mr rows, k-major within a group — element (i, p) at
// out[((i - i0) / mr * kc + (p - p0)) * mr + (i - i0) % mr] — with +0 in the rows of the last
// group past A's last row (mr is the ISA's tile height, at most 16). It is called concurrently,
// on different blocks, from the GEMM's threads. Packing moves values; it computes nothing, so A's
// values are whatever Pack writes.
class APacker {
 public:
  virtual ~APacker() = default;
  virtual void Pack(int64_t i0, int64_t rows, int64_t p0, int64_t kc, int64_t mr,
                    float* out) const = 0;
};

// C[b] = A[b] B[b] for b < batch: A is m x k, B is k x n, C is m x n row-major and dense (batch
// stride m * n). C must not overlap A or B.
//
// `swapped`: the product is the transpose of the dot being computed (C = (B^T A^T)^T computed as
// A B with A = the dot's rhs^T, B = its lhs^T), so C(i, j)'s defined chain is
// fmaf(B(p, j), A(i, p), acc). Every non-NaN result is the same either way (a product is
// commutative and fmaf rounds once); an element that comes out NaN is recomputed in the
// defined operand order, which picks the payload.
void BatchedGemm(const MatrixView& a, const MatrixView& b, float* c, int64_t batch, int64_t m,
                 int64_t n, int64_t k, const ExecContext& ctx, bool swapped = false);

// One leaf of a GEMM tree: the m x n product of `a` (m x k) and `b` (k x n), with `swapped` as
// in BatchedGemm (batch strides unused).
struct GemmLeaf {
  MatrixView a, b;
  int64_t k = 0;
  bool swapped = false;
};

// One step of a tree over values 0..leaves-1, each value consumed once: value[dst] =
// value[dst] OP y, or y OP value[dst] when `constant_first`, where y is value[src] (src >= 0) or
// `constant` (src < 0) and OP the kind's f32 operation with the contract's NaN rule
// (semantics::ApplyBinary). An add of two values is the shard tree's step; a constant operand is
// e.g. the division of the sum by the shard count.
struct TreeStep {
  int kind = 0;  // isa_kernels.h TileStepKind
  bool constant_first = false;
  int32_t dst = 0;
  int32_t src = -1;
  float constant = 0.0f;
};

// C (m x n, row-major, dense) = value[result] after `steps` run over the leaves' products: a sum
// of per-shard products (the shard tree of weight gradients) computed per output tile while it
// is in L1, never as full matrices in memory. Every leaf element is its own fma chain (as
// BatchedGemm) and every sum the same IEEE addition, so C has the bits of the leaves computed
// apart and added by the tree. A NaN result is recomputed element by element in the defined
// orders. At most kMaxGemmTreeLeaves leaves; C must not overlap any operand.
inline constexpr int64_t kMaxGemmTreeLeaves = 64;
void GemmTree(const GemmLeaf* leaves, int64_t count, const TreeStep* steps, int64_t num_steps,
              int32_t result, float* c, int64_t m, int64_t n, const ExecContext& ctx);

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_GEMM_H_
