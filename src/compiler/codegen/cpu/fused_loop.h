// An elementwise kernel's scalar program as C++ for the CPU (docs/fused-loops.md): the loop the
// evaluator (runtime/cpu/isa_kernels.inc) runs op by op over columns of a chunk, written out as
// one loop over the index space, for the system compiler to vectorize.
//
// The function evaluates the program for indices [begin, end) in blocks of kLoopBlock elements.
// A full block runs the plain operations in one loop (values in registers; integer ones exact),
// with a flag for every f32 case where a plain operation and the semantics may differ — a NaN made
// or passed on, the maximum or minimum of two zeros; the transcendental unary ops are crmath's
// array forms called on the block through the environment (the functions the evaluator calls). A
// flagged block, and a partial one, goes to the environment's `rule` — the evaluator, which applies
// the semantics' rules — so every element has the evaluator's bits. Where the output meets an input
// (a parameter updated in place), a full block is computed into a local copy and stored only when
// unflagged, so that the rule reads the inputs unchanged. The source needs no header of
// detrain's: the arithmetic is plain IEEE (the compiler must not contract or reassociate it).
//
// Thread safety: pure functions. Determinism: the text is a function of the spec only (constants
// as their bits in hexadecimal, no addresses, sizes or machine properties).
#ifndef DETRAIN_COMPILER_CODEGEN_CPU_FUSED_LOOP_H_
#define DETRAIN_COMPILER_CODEGEN_CPU_FUSED_LOOP_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/plan/scalar_program.h"

namespace detrain::codegen::cpu {

// Elements per block of a generated loop.
inline constexpr int64_t kLoopBlock = 64;

// One program as one kernel runs it.
struct LoopSpec {
  const plan::DecodedProgram* program = nullptr;
  // Per input of the program: whether it has one element (read at every index).
  std::vector<bool> scalar_input;
  // Whether the output's bytes meet any input's.
  bool output_meets_input = false;
};

// Whether LoopFunction can write `program`: an f32, s32 or u32 result, and ops among inputs and
// constants of those types and pred; f32 add / subtract / multiply / divide / maximum / minimum,
// negate, abs, sqrt and the transcendental ops crmath has array forms for (exp, expm1, log,
// log1p, tanh, logistic, erf, rsqrt); s32 / u32 add / subtract / multiply (wrapping), and / or /
// xor, maximum / minimum; compares and selects of those types; converts to f32 from pred, s32
// and u32; bitcasts among f32, s32 and u32. Integer division, remainder, power and shifts, and
// everything 64-bit, stay with the evaluator.
bool CanGenerate(const plan::DecodedProgram& program);

// The definition of
//   extern "C" void NAME(const uint8_t* const* in, uint8_t* out, int64_t begin, int64_t end,
//                        const DtLoopEnv* env, void* ctx)
// for `spec` (CanGenerate must hold): in[i] is input i's first element, out the output's; ctx is
// passed on to env->rule.
std::string LoopFunction(const LoopSpec& spec, std::string_view name);

// What every generated source starts with: standard includes, the flag helpers and DtLoopEnv:
//   void (*unary)(int op, const float* in, float* out, int64_t n)  crmath's array form of
//       ir::UnaryOp `op`, on the ISA the kernels run;
//   void (*rule)(void* ctx, int64_t begin, int64_t n)  the evaluator over [begin, begin + n).
std::string_view LoopPrelude();

}  // namespace detrain::codegen::cpu

#endif  // DETRAIN_COMPILER_CODEGEN_CPU_FUSED_LOOP_H_
