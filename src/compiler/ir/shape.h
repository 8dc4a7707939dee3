// Shapes: an element type with static dimensions (row-major, no layouts), or a tuple of shapes.
//
// Printed as in HLO text without layouts: `f32[5,3]`, `s32[]`, `(f32[2], u32[2])`.
//
// Thread safety: values only.
#ifndef DETRAIN_COMPILER_IR_SHAPE_H_
#define DETRAIN_COMPILER_IR_SHAPE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ir/element_type.h"

namespace detrain::ir {

// The most dimensions an array shape may have (docs/ir.md §3): bounds every per-dimension loop,
// and the nesting of a constant's braces, which follows the rank.
inline constexpr int kMaxRank = 64;

class Shape {
 public:
  Shape() = default;
  Shape(ElementType type, std::vector<int64_t> dims) : type_(type), dims_(std::move(dims)) {}
  static Shape Scalar(ElementType type) { return Shape(type, {}); }
  static Shape Tuple(std::vector<Shape> elements);

  bool is_tuple() const { return is_tuple_; }
  ElementType type() const { return type_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t dim(int i) const { return dims_[static_cast<size_t>(i)]; }
  int rank() const { return static_cast<int>(dims_.size()); }
  const std::vector<Shape>& tuple_elements() const { return tuple_; }

  // 1 for a scalar; undefined for tuples. Unchecked: for verified shapes (see Check()).
  int64_t ElementCount() const;
  // The element count of an array shape, checked (base/checked.h CheckedElementCount): an error
  // naming the shape when a dimension is negative, the rank exceeds kMaxRank or the count
  // exceeds 2^62. The one place a shape's size is checked; the parser and verifier call it.
  Result<int64_t> CheckedElementCount() const;
  std::string ToString() const;

  friend bool operator==(const Shape& a, const Shape& b) = default;

 private:
  bool is_tuple_ = false;
  ElementType type_ = ElementType::kF32;
  std::vector<int64_t> dims_;
  std::vector<Shape> tuple_;
};

// Row-major strides (in elements) of `dims`.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims);

// Whether `perm` is a permutation of [0, rank).
bool IsPermutation(const std::vector<int64_t>& perm, size_t rank);

// "{1,2,3}" as printed in attributes.
std::string IntListToString(const std::vector<int64_t>& values);

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_SHAPE_H_
