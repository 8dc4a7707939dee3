// The CPU instruction-set paths that detrain's kernels, the correctly rounded array math and the
// threefry array forms are built for, and the one dispatcher that picks among them.
//
// Every path computes the same bits (DESIGN.md §2): the choice is a speed decision, never a
// semantic one, so it is recorded in a bundle's environment but never hashed. Tests force each
// path with an override to prove it.
//
// Thread safety: pure functions; BestIsa caches its answer in a function-local static.
#ifndef DETRAIN_BASE_ISA_H_
#define DETRAIN_BASE_ISA_H_

#include <optional>
#include <string_view>

namespace detrain {

enum class Isa { kScalar, kAvx2, kAvx512 };

inline constexpr Isa kAllIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512};

// "scalar", "avx2", "avx512".
std::string_view IsaName(Isa isa);
std::optional<Isa> IsaFromName(std::string_view name);

// Whether this CPU and build can run `isa` (kScalar always can).
bool IsaSupported(Isa isa);

// The fastest supported path.
Isa BestIsa();

// `requested` if supported here, otherwise the fastest supported path below it.
Isa ClampIsa(Isa requested);

}  // namespace detrain

#endif  // DETRAIN_BASE_ISA_H_
