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
template <>
struct ElementTraits<int32_t> {
  static constexpr ElementKind kKind = ElementKind::kSigned;
  using Unsigned = uint32_t;
  using Signed = int32_t;
  static constexpr int32_t kMin = -2147483647 - 1;
  static constexpr int32_t kMax = 2147483647;
};
template <>
struct ElementTraits<uint32_t> {
  static constexpr ElementKind kKind = ElementKind::kUnsigned;
  using Unsigned = uint32_t;
  using Signed = int32_t;
  static constexpr uint32_t kMin = 0;
  static constexpr uint32_t kMax = 0xffffffffu;
};
template <>
struct ElementTraits<int64_t> {
  static constexpr ElementKind kKind = ElementKind::kSigned;
  using Unsigned = uint64_t;
  using Signed = int64_t;
  static constexpr int64_t kMin = -9223372036854775807 - 1;
  static constexpr int64_t kMax = 9223372036854775807;
};
template <>
struct ElementTraits<uint64_t> {
  static constexpr ElementKind kKind = ElementKind::kUnsigned;
  using Unsigned = uint64_t;
  using Signed = int64_t;
  static constexpr uint64_t kMin = 0;
  static constexpr uint64_t kMax = 0xffffffffffffffffu;
};
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
