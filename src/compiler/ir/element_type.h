// Element types of the IR, declared once in element_types.def (STYLE.md point 1).
//
// Every consumer (parser keywords, printer, literal storage, .npy conversion, interpreter type
// dispatch) is generated from the list, so adding bf16/f16 is one line here plus the cases the
// compiler then reports as missing. Storage is little-endian, row-major, `pred` as one byte 0/1.
//
// Thread safety: constants and pure functions only.
#ifndef DETRAIN_COMPILER_IR_ELEMENT_TYPE_H_
#define DETRAIN_COMPILER_IR_ELEMENT_TYPE_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace detrain::ir {

enum class ElementType : uint8_t {
#define TYPE(e, s, t, k, st) e,
#include "compiler/ir/element_types.def"
#undef TYPE
};

std::string_view ElementTypeName(ElementType t);
std::optional<ElementType> ElementTypeFromName(std::string_view name);
int ElementTypeByteSize(ElementType t);
// The safetensors dtype ("F32", "I32", ...) of a type, and back (nullopt: no IR type).
std::string_view SafetensorsDType(ElementType t);
std::optional<ElementType> ElementTypeFromSafetensors(std::string_view dtype);
// The kind letter of element_types.def: 'b', 's', 'u' or 'f' (ops.def's types column).
char ElementTypeKind(ElementType t);
bool IsFloat(ElementType t);
bool IsSignedInt(ElementType t);
bool IsUnsignedInt(ElementType t);
inline bool IsInteger(ElementType t) { return IsSignedInt(t) || IsUnsignedInt(t); }
inline bool IsPred(ElementType t) { return t == ElementType::kPred; }

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) with T the storage type of `t`; returns what fn returns.
template <typename Fn>
decltype(auto) DispatchElementType(ElementType t, Fn&& fn) {
  switch (t) {
#define TYPE(e, s, ty, k, st) \
  case ElementType::e:        \
    return fn(TypeTag<ty>{});
#include "compiler/ir/element_types.def"
#undef TYPE
  }
  return fn(TypeTag<uint8_t>{});  // unreachable for valid enum values
}

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_ELEMENT_TYPE_H_
