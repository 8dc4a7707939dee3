// See element_type.h.
#include "compiler/ir/element_type.h"

namespace detrain::ir {
namespace {

struct TypeInfo {
  ElementType type;
  std::string_view name;
  int size;
  char kind;
  std::string_view safetensors;
};

constexpr TypeInfo kTypes[] = {
#define TYPE(e, s, t, k, st) {ElementType::e, s, static_cast<int>(sizeof(t)), k, st},
#include "compiler/ir/element_types.def"
#undef TYPE
};

const TypeInfo& Info(ElementType t) { return kTypes[static_cast<int>(t)]; }

}  // namespace

std::string_view ElementTypeName(ElementType t) { return Info(t).name; }

std::optional<ElementType> ElementTypeFromName(std::string_view name) {
  for (const TypeInfo& info : kTypes) {
    if (info.name == name) return info.type;
  }
  return std::nullopt;
}

int ElementTypeByteSize(ElementType t) { return Info(t).size; }
std::string_view SafetensorsDType(ElementType t) { return Info(t).safetensors; }

std::optional<ElementType> ElementTypeFromSafetensors(std::string_view dtype) {
  for (const TypeInfo& info : kTypes) {
    if (info.safetensors == dtype) return info.type;
  }
  return std::nullopt;
}
char ElementTypeKind(ElementType t) { return Info(t).kind; }
bool IsFloat(ElementType t) { return Info(t).kind == 'f'; }
bool IsSignedInt(ElementType t) { return Info(t).kind == 's'; }
bool IsUnsignedInt(ElementType t) { return Info(t).kind == 'u'; }

}  // namespace detrain::ir
