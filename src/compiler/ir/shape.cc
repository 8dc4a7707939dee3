// See shape.h.
#include "compiler/ir/shape.h"

#include "base/checked.h"

namespace detrain::ir {

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape s;
  s.is_tuple_ = true;
  s.tuple_ = std::move(elements);
  return s;
}

int64_t Shape::ElementCount() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

Result<int64_t> Shape::CheckedElementCount() const {
  if (is_tuple_) return InvalidArgument("a tuple shape has no element count");
  if (rank() > kMaxRank) {
    return InvalidArgument("shape has rank " + std::to_string(rank()) + "; at most " +
                           std::to_string(kMaxRank) + " dimensions are supported");
  }
  return detrain::CheckedElementCount(dims_, ToString());
}

std::string Shape::ToString() const {
  if (is_tuple_) {
    std::string s = "(";
    for (size_t i = 0; i < tuple_.size(); ++i) {
      if (i) s += ", ";
      s += tuple_[i].ToString();
    }
    return s + ")";
  }
  std::string s(ElementTypeName(type_));
  s += '[';
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(dims_[i]);
  }
  return s + ']';
}

bool IsPermutation(const std::vector<int64_t>& perm, size_t rank) {
  if (perm.size() != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) return false;
    seen[static_cast<size_t>(p)] = true;
  }
  return true;
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

std::string IntListToString(const std::vector<int64_t>& values) {
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(values[i]);
  }
  return s + "}";
}

}  // namespace detrain::ir
