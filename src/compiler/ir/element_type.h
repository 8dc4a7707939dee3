// Element types of the IR, declared once in DETRAIN_ELEMENT_TYPES (STYLE.md point 1).
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

// X(enum, spelling, C++ storage type, kind) — kind: 'b' boolean, 's' signed, 'u' unsigned, 'f'
// float.
#define DETRAIN_ELEMENT_TYPES(X) \
  X(kPred, "pred", uint8_t, 'b') \
  X(kS32, "s32", int32_t, 's')   \
  X(kU32, "u32", uint32_t, 'u')  \
  X(kS64, "s64", int64_t, 's')   \
  X(kU64, "u64", uint64_t, 'u')  \
  X(kF32, "f32", float, 'f')

enum class ElementType : uint8_t {
#define DETRAIN_X(e, s, t, k) e,
  DETRAIN_ELEMENT_TYPES(DETRAIN_X)
#undef DETRAIN_X
};

std::string_view ElementTypeName(ElementType t);
std::optional<ElementType> ElementTypeFromName(std::string_view name);
int ElementTypeByteSize(ElementType t);
// The kind letter of DETRAIN_ELEMENT_TYPES: 'b', 's', 'u' or 'f' (ops.def's types column).
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
#define DETRAIN_X(e, s, ty, k) \
  case ElementType::e:         \
    return fn(TypeTag<ty>{});
    DETRAIN_ELEMENT_TYPES(DETRAIN_X)
#undef DETRAIN_X
  }
  return fn(TypeTag<uint8_t>{});  // unreachable for valid enum values
}

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_ELEMENT_TYPE_H_
