// See isa.h.
#include "base/isa.h"

namespace detrain {

std::string_view IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

std::optional<Isa> IsaFromName(std::string_view name) {
  for (Isa isa : kAllIsas) {
    if (IsaName(isa) == name) return isa;
  }
  return std::nullopt;
}

bool IsaSupported(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return true;
#if defined(__x86_64__)
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    case Isa::kAvx2:
    case Isa::kAvx512:
      return false;
#endif
  }
  return false;
}

Isa BestIsa() {
  static const Isa best = IsaSupported(Isa::kAvx512) ? Isa::kAvx512
                          : IsaSupported(Isa::kAvx2) ? Isa::kAvx2
                                                     : Isa::kScalar;
  return best;
}

Isa ClampIsa(Isa requested) {
  if (requested == Isa::kAvx512 && !IsaSupported(Isa::kAvx512)) requested = Isa::kAvx2;
  if (requested == Isa::kAvx2 && !IsaSupported(Isa::kAvx2)) requested = Isa::kScalar;
  return requested;
}

}  // namespace detrain
