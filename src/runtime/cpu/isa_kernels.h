// The hot loops of the CPU kernels, compiled once per ISA path (isa_scalar.cc, isa_avx2.cc,
// isa_avx512.cc include isa_kernels.inc with a different target) and chosen at run time.
// Every path performs the same IEEE operations on the same values in the same order per output
// element, so all paths give the same bits (tests/runtime/conformance_test.cc checks it).
//
// Thread safety: pure functions of their arguments.
#ifndef DETRAIN_RUNTIME_CPU_ISA_KERNELS_H_
#define DETRAIN_RUNTIME_CPU_ISA_KERNELS_H_

#include <cstdint>

#include "base/isa.h"
#include "compiler/ir/op_enums.h"
#include "runtime/cpu/program.h"

namespace detrain::runtime::cpu {

// Elements per chunk of an elementwise program: the unit of work and of scratch space.
inline constexpr int64_t kChunk = 512;

// Bytes of scratch EvalChunk needs for `program`.
inline int64_t ChunkScratchBytes(const DecodedProgram& program) {
  return static_cast<int64_t>(program.ops.size()) * (kChunk * 8 + 8) + 64;
}

// Where a program's inputs live. inputs[i] is input i's buffer, with input_elements[i]
// elements: either the index space's size or 1 (a scalar, read at every index). `reduced` is the
// fused reduction's result (output space), or null. `fixed`, when not null, holds per op either
// null (evaluate the op) or kChunk elements of the op's value, the same at every index (an op of
// scalars only: see UniformOps in program.h), which the chunk reads instead of evaluating it.
struct ChunkIo {
  const uint8_t* const* inputs = nullptr;
  const int64_t* input_elements = nullptr;
  const uint8_t* reduced = nullptr;
  const uint8_t* const* fixed = nullptr;
};

// Evaluates `program` at indices [start, start + n), n <= kChunk, writing the result elements to
// out + start * size. `scratch`: ChunkScratchBytes(program) bytes, 64-byte aligned.
using EvalChunkFn = void (*)(const DecodedProgram& program, const ChunkIo& io, int64_t start,
                             int64_t n, uint8_t* out, uint8_t* scratch, Isa isa);

// One register tile of the GEMM (gemm.h): the gemm_mr x gemm_nr values c[r * ldc + q] start
// from c itself when `load` (continuing their chains), else from +0, and then for p ascending in
// [0, kc): c[r][q] = fmaf(a[p * gemm_mr + r], b[p * ldb + q], c[r][q]). `a` is packed (k-major
// groups of gemm_mr values); `b` is a panel of gemm_nr columns with row stride ldb. Returns
// whether any value it stored is a NaN (decided in registers: the caller's canonical-NaN pass
// need not read the tile back).
using GemmTileFn = bool (*)(int64_t kc, const float* a, const float* b, int64_t ldb, float* c,
                            int64_t ldc, bool load);

// GemmTileFn with A read in place: a[r * lda + p] (rows in place: a row-major A) or
// a[p * lda + r] (columns in place: a column-major A) for the tile's gemm_mr rows, all of them
// readable (the same chains as the packed tile computes).
using GemmTileInPlaceFn = bool (*)(int64_t kc, const float* a, int64_t lda, const float* b,
                                   int64_t ldb, float* c, int64_t ldc, bool load);

// dst[i * dst_stride + j] = src[j * src_stride + i] for i < ni, j < nj (4-byte elements, bits).
using Transpose32Fn = void (*)(const uint32_t* src, int64_t src_stride, uint32_t* dst,
                               int64_t dst_stride, int64_t ni, int64_t nj);

// For i < n: dst[i] = dst[i] OP y, or y OP dst[i] when `constant_first`, with y = src[i], or the
// constant c where src is null; OP is the kind's IEEE operation (NaN payloads are the caller's to
// fix).
enum TileStepKind : int { kTileAdd = 0, kTileSubtract = 1, kTileMultiply = 2, kTileDivide = 3 };
using TileStepFn = void (*)(int kind, bool constant_first, float* dst, const float* src, float c,
                            int64_t n);

// Whether any of rows x cols floats at t[r * ld + q] is a NaN (a GEMM tile just computed, still in
// L1: the GEMM recomputes its NaN elements by the contract's chain).
using TileHasNanFn = bool (*)(const float* t, int64_t ld, int64_t rows, int64_t cols);

// Up to 16 lanes of a reduce (reduce_core.cc): for w < lanes, acc[w] = init, then for i in
// [begin, end) acc[w] = op(acc[w], in[bases[w] + (offsets ? offsets[i] : i)]) with op one of
// kReduceAdd / kReduceMax / kReduceMin, as the scalar combiner computes it. Returns the lanes
// (bit w) that met a NaN, whose values the caller must recompute by the scalar rule; or
// kReduceLanesUnhandled when this path has no vector form for the call (nothing written).
enum ReduceLanesOp : int { kReduceAdd = 0, kReduceMax = 1, kReduceMin = 2 };
inline constexpr uint32_t kReduceLanesUnhandled = 0xffffffffu;
using ReduceLanesFn = uint32_t (*)(int op, const float* in, const int64_t* bases, int64_t lanes,
                                   const int64_t* offsets, int64_t begin, int64_t end, float init,
                                   float* acc);

struct IsaKernels {
  EvalChunkFn eval_chunk;
  GemmTileFn gemm_tile;
  int64_t gemm_mr;
  int64_t gemm_nr;
  Transpose32Fn transpose32;
  TileStepFn tile_step;
  ReduceLanesFn reduce_lanes;
  TileHasNanFn tile_has_nan;
  // The same loops with a narrower register tile, which the GEMM uses for products of at most
  // its gemm_nr columns (fewer columns computed in vain); null where the path has none. Which
  // tile computes an element never changes its chain (each element one fmaf chain over k).
  const IsaKernels* narrow = nullptr;
  // The tile reading a row-major / column-major A in place, or null (the GEMM packs A).
  GemmTileInPlaceFn gemm_tile_rows_in_place = nullptr;
  GemmTileInPlaceFn gemm_tile_columns_in_place = nullptr;
};

// The loops for `isa`, which must be supported here (see base/isa.h ClampIsa).
const IsaKernels& KernelsFor(Isa isa);

// out[i] = op(in[i]) for i < n by crmath's array form on `isa` (the same bits as the scalar
// functions), for the transcendental f32 ops that have one (exp, expm1, log, log1p, tanh,
// logistic, erf, rsqrt); false, with nothing written, for any other op. The evaluator's and
// the generated loops' (fused_loops.h) one way to them.
bool ArrayUnaryOn(Isa isa, ir::UnaryOp op, const float* in, float* out, int64_t n);

namespace isa_scalar {
extern const IsaKernels kKernels;
}
namespace isa_avx2 {
extern const IsaKernels kKernels;
}
namespace isa_avx512 {
extern const IsaKernels kKernels;
}

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_ISA_KERNELS_H_
