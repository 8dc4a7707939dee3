// Compile-time facts about the storage types of ir::ElementType (pred = uint8_t, s32, u32, s64,
// u64, f32) that the scalar rules need: kind, width, range, and the same-width unsigned and
// signed types. Written without <type_traits>/<limits> so that it compiles under NVRTC.
//
// Thread safety and determinism: types and constants only.
#ifndef DETRAIN_COMPILER_SEMANTICS_ELEMENT_TRAITS_H_
#define DETRAIN_COMPILER_SEMANTICS_ELEMENT_TRAITS_H_

#include "base/host_device.h"

namespace detrain::semantics {

enum class ElementKind : uint8_t { kPred, kSigned, kUnsigned, kFloat };

template <typename T>
struct ElementTraits;  // defined for the six storage types only

template <>
struct ElementTraits<uint8_t> {
  static constexpr ElementKind kKind = ElementKind::kPred;
  using Unsigned = uint8_t;
  using Signed = int8_t;
};
// The integer types: U and S are the same-width unsigned and signed types.
template <typename T, typename U, typename S>
struct IntegerTraits {
  static constexpr bool kSignedType = T(-1) < T(0);
  static constexpr ElementKind kKind = kSignedType ? ElementKind::kSigned : ElementKind::kUnsigned;
  using Unsigned = U;
  using Signed = S;
  static constexpr T kMax = kSignedType ? T(U(~U(0)) >> 1) : T(~U(0));
  static constexpr T kMin = kSignedType ? T(-kMax - 1) : T(0);
};
template <>
struct ElementTraits<int32_t> : IntegerTraits<int32_t, uint32_t, int32_t> {};
template <>
struct ElementTraits<uint32_t> : IntegerTraits<uint32_t, uint32_t, int32_t> {};
template <>
struct ElementTraits<int64_t> : IntegerTraits<int64_t, uint64_t, int64_t> {};
template <>
struct ElementTraits<uint64_t> : IntegerTraits<uint64_t, uint64_t, int64_t> {};
template <>
struct ElementTraits<float> {
  static constexpr ElementKind kKind = ElementKind::kFloat;
  using Unsigned = uint32_t;  // the bit pattern
  using Signed = int32_t;
};

template <typename T>
inline constexpr bool kIsFloat = ElementTraits<T>::kKind == ElementKind::kFloat;
template <typename T>
inline constexpr bool kIsPred = ElementTraits<T>::kKind == ElementKind::kPred;
template <typename T>
inline constexpr bool kIsSigned = ElementTraits<T>::kKind == ElementKind::kSigned;
template <typename T>
inline constexpr bool kIsInteger = ElementTraits<T>::kKind == ElementKind::kSigned ||
                                   ElementTraits<T>::kKind == ElementKind::kUnsigned;

template <typename A, typename B>
inline constexpr bool kSameType = false;
template <typename A>
inline constexpr bool kSameType<A, A> = true;

}  // namespace detrain::semantics

#endif  // DETRAIN_COMPILER_SEMANTICS_ELEMENT_TRAITS_H_
