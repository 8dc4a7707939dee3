// The canonical view of a dot operand (schemas/plan.proto DotSpec): its dims taken in the
// spec's permutation order and read row-major as [batch, rows, columns]. When each of the three
// groups of permuted dims collapses to one stride (its dims nested in row-major order, as a
// reshape of a transpose usually leaves them), a kernel can address the view with three strides
// and no index arithmetic; both backends ask here.
//
// Thread safety: pure function. Determinism: a function of its arguments.
#ifndef DETRAIN_COMPILER_PLAN_DOT_VIEW_H_
#define DETRAIN_COMPILER_PLAN_DOT_VIEW_H_

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace detrain::plan {

// The strides, in elements, of the view's three groups of `sizes` elements each (`perm` a
// permutation of dims' indices); nullopt when a group does not collapse to one stride.
std::optional<std::array<int64_t, 3>> DotGroupStrides(const std::vector<int64_t>& dims,
                                                      const std::vector<int64_t>& perm,
                                                      const std::array<int64_t, 3>& sizes);

}  // namespace detrain::plan

#endif  // DETRAIN_COMPILER_PLAN_DOT_VIEW_H_
