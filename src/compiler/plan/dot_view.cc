// See dot_view.h.
#include "compiler/plan/dot_view.h"

namespace detrain::plan {

std::optional<std::array<int64_t, 3>> DotGroupStrides(const std::vector<int64_t>& dims,
                                                      const std::vector<int64_t>& perm,
                                                      const std::array<int64_t, 3>& sizes) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  std::vector<size_t> order;  // the permuted dims, unit dims dropped (they address nothing)
  for (int64_t p : perm) {
    if (dims[static_cast<size_t>(p)] != 1) order.push_back(static_cast<size_t>(p));
  }
  std::array<int64_t, 3> out{0, 0, 0};
  size_t d = 0;
  for (size_t g = 0; g < 3; ++g) {
    int64_t product = 1;
    for (size_t first = d; product < sizes[g]; ++d) {
      if (d >= order.size()) return std::nullopt;
      if (d > first && strides[order[d - 1]] != strides[order[d]] * dims[order[d]])
        return std::nullopt;
      product *= dims[order[d]];
      out[g] = strides[order[d]];
    }
    if (product != sizes[g]) return std::nullopt;
  }
  if (d != order.size()) return std::nullopt;
  return out;
}

}  // namespace detrain::plan
