// Literal: a concrete value of some Shape — a row-major array of elements, or a tuple of
// literals. Used for `constant` instructions, interpreter values and .npy conversion.
//
// Also home of the canonical spelling of element values in IR text (FormatElement /
// ParseElement): f32 as the shortest decimal that round-trips (std::to_chars), `inf`, `-inf`,
// `nan` for the canonical NaN 0x7fc00000 and `nan(0xXXXXXXXX)` (the full bit pattern) for any
// other NaN; integers in decimal; pred as `true` / `false`. Parsing is std::from_chars:
// correctly rounded and locale-free.
//
// Thread safety: values only.
#ifndef DETRAIN_COMPILER_IR_LITERAL_H_
#define DETRAIN_COMPILER_IR_LITERAL_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "compiler/ir/shape.h"

namespace detrain::ir {

class Literal {
 public:
  Literal() = default;
  explicit Literal(const Shape& shape);  // all elements zero (all bits clear)
  static Literal Tuple(std::vector<Literal> elements);

  template <typename T>
  static Literal FromVector(ElementType type, std::vector<int64_t> dims,
                            const std::vector<T>& values) {
    Literal lit(Shape(type, std::move(dims)));
    for (size_t i = 0; i < values.size() && i < static_cast<size_t>(lit.element_count()); ++i) {
      lit.Set<T>(static_cast<int64_t>(i), values[i]);
    }
    return lit;
  }
  template <typename T>
  static Literal Scalar(ElementType type, T value) {
    return FromVector<T>(type, {}, {value});
  }

  const Shape& shape() const { return shape_; }
  int64_t element_count() const { return shape_.is_tuple() ? 0 : shape_.ElementCount(); }
  const std::vector<Literal>& tuple_elements() const { return tuple_; }
  std::vector<Literal>& mutable_tuple_elements() { return tuple_; }

  // Typed element access; T must be the storage type of shape().type().
  template <typename T>
  T Get(int64_t i) const {
    T v;
    std::memcpy(&v, bytes_.data() + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    return v;
  }
  template <typename T>
  void Set(int64_t i, T v) {
    std::memcpy(bytes_.data() + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
  }

  // Raw little-endian row-major bytes of an array literal.
  const std::string& bytes() const { return bytes_; }
  std::string& mutable_bytes() { return bytes_; }

  // Same shape and the same bits everywhere (NaN payloads included).
  bool BitwiseEqual(const Literal& other) const;

  // "f32[2] {1, 2}" — the shape and the constant text; for messages and tests.
  std::string ToString() const;

 private:
  Shape shape_;
  std::string bytes_;
  std::vector<Literal> tuple_;
};

// Canonical text of element i of `lit` (an array literal).
std::string FormatElement(const Literal& lit, int64_t i);
std::string FormatF32(float value);

// Parses one element value of type `type` and stores it as element i of `lit`. Accepts the
// canonical spellings plus XLA's (`true`/`false` or 0/1 for pred, `-nan`, exponents, a
// leading `+`). Returns an error message (empty on success).
std::string ParseElement(std::string_view text, Literal& lit, int64_t i);

// The nested-brace text of an array literal: `1.5`, `{1, 2}`, `{{1, 2}, {3, 4}}`.
std::string FormatLiteralValues(const Literal& lit);

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_LITERAL_H_
