// The avx2 path of the CPU kernels' hot loops (isa_kernels.h): isa_kernels.inc compiled for
// this target. Only the target differs between the three files; the source is one.
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

#include "base/math/crmath.h"
#include "compiler/ir/element_type.h"
#include "compiler/semantics/semantics.h"
#include "runtime/cpu/isa_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")

// g++ does not define the target's macros (__AVX512F__, ...) under the pragma, so the file
// names its vector unit; clang ignores the pragma and gets the portable loops.
#if !defined(__clang__)
#define DETRAIN_ISA_AVX2 1
#endif

namespace detrain::runtime::cpu::isa_avx2 {
#include "runtime/cpu/isa_kernels.inc"
}  // namespace detrain::runtime::cpu::isa_avx2

#undef DETRAIN_ISA_AVX2

#pragma GCC pop_options
