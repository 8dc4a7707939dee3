// See builtins.h.
#include "frontend/builtins.h"

namespace detrain::frontend {

Status CallContext::Error(std::string_view message) const {
  return source->Error(call->range, std::string(callee) + ": " + std::string(message));
}

Status CallContext::ErrorAt(size_t i, std::string_view message) const {
  return source->Error(args[i].range, std::string(callee) + ": " + std::string(message));
}

const std::vector<BuiltinDef>& Builtins() {
  static const std::vector<BuiltinDef> table = [] {
    std::vector<BuiltinDef> t;
    AppendLayerBuiltins(&t);
    AppendConfigBuiltins(&t);
    return t;
  }();
  return table;
}

const BuiltinDef* FindBuiltin(std::string_view name, BuiltinCategory category) {
  for (const auto& b : Builtins()) {
    if (b.name == name && b.category == category) return &b;
  }
  return nullptr;
}

std::string BuiltinNames(BuiltinCategory category) {
  std::string s;
  for (const auto& b : Builtins()) {
    if (b.category != category) continue;
    if (!s.empty()) s += ", ";
    s += b.name;
  }
  return s;
}

}  // namespace detrain::frontend
