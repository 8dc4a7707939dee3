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
struct MatrixView {
  const float* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t batch = 0;
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

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_GEMM_H_
