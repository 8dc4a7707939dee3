// The scalar path of the CPU kernels' hot loops (isa_kernels.h): isa_kernels.inc compiled for
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

namespace detrain::runtime::cpu::isa_scalar {
#include "runtime/cpu/isa_kernels.inc"
}  // namespace detrain::runtime::cpu::isa_scalar

#pragma GCC pop_options
