// Types of .dt values during checking: tensors with static or symbolic dimensions, keys, and
// untyped numeric literals (which take the element type of the tensor they combine with).
//
// Thread safety: values.
#ifndef DETRAIN_FRONTEND_TYPES_H_
#define DETRAIN_FRONTEND_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/element_type.h"

namespace detrain::frontend {

// A dimension: a size >= 0, or a symbol such as "B" (size -1).
struct DimValue {
  int64_t size = -1;
  std::string symbol;

  static DimValue Of(int64_t n) { return {n, ""}; }
  static DimValue Sym(std::string s) { return {-1, std::move(s)}; }
  bool is_symbol() const { return size < 0; }
  bool operator==(const DimValue& o) const { return size == o.size && symbol == o.symbol; }
  std::string ToString() const { return is_symbol() ? symbol : std::to_string(size); }
};

enum class ValueKind { kTensor, kKey, kLiteral };

// Element types the language exposes: f32 for values, s32 for integer labels and ids; a subset
// of ir::ElementType, with its names ("f32", "s32", "pred"). The two conversions below are the
// only mapping between them.
enum class DType { kF32, kS32, kPred };

ir::ElementType ToElementType(DType t);
std::optional<DType> DTypeFromElementType(ir::ElementType t);  // nullopt: not in the language

const char* DTypeName(DType t);
bool ParseDType(const std::string& name, DType* out);

struct Type {
  ValueKind kind = ValueKind::kTensor;
  DType dtype = DType::kF32;
  std::vector<DimValue> dims;

  static Type Tensor(DType t, std::vector<DimValue> dims) {
    return {ValueKind::kTensor, t, std::move(dims)};
  }
  static Type Scalar(DType t) { return {ValueKind::kTensor, t, {}}; }
  static Type Key() { return {ValueKind::kKey, DType::kF32, {}}; }
  static Type Literal() { return {ValueKind::kLiteral, DType::kF32, {}}; }

  bool is_tensor() const { return kind == ValueKind::kTensor; }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool operator==(const Type& o) const {
    return kind == o.kind && dtype == o.dtype && dims == o.dims;
  }
  // "f32[B,30]", "s32[]", "key", "number"
  std::string ToString() const;
};

// Numpy broadcasting of two shapes, aligned on the right. On failure returns false and sets
// `why` to "dimensions 64 and 63 cannot be broadcast".
bool BroadcastDims(const std::vector<DimValue>& a, const std::vector<DimValue>& b,
                   std::vector<DimValue>* out, std::string* why);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_TYPES_H_
