// See element_type.h.
#include "compiler/ir/element_type.h"

namespace detrain::ir {
namespace {

struct TypeInfo {
  ElementType type;
  std::string_view name;
  int size;
  char kind;
};

constexpr TypeInfo kTypes[] = {
#define DETRAIN_X(e, s, t, k) {ElementType::e, s, static_cast<int>(sizeof(t)), k},
    DETRAIN_ELEMENT_TYPES(DETRAIN_X)
#undef DETRAIN_X
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
char ElementTypeKind(ElementType t) { return Info(t).kind; }
bool IsFloat(ElementType t) { return Info(t).kind == 'f'; }
bool IsSignedInt(ElementType t) { return Info(t).kind == 's'; }
bool IsUnsignedInt(ElementType t) { return Info(t).kind == 'u'; }

}  // namespace detrain::ir
