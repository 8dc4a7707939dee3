// See import.h.
#include "compiler/xla_import/import.h"

#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/xla_import/hooks.h"

namespace detrain::xla_import {

Result<std::unique_ptr<ir::Module>> ParseHloText(std::string_view text) {
  XlaHooks hooks;
  return ir::ParseModule(text, &hooks);
}

Result<std::unique_ptr<ir::Module>> ParseAndVerifyHloText(std::string_view text) {
  DETRAIN_ASSIGN_OR_RETURN(auto module, ParseHloText(text));
  DETRAIN_RETURN_IF_ERROR(ir::VerifyModule(*module));
  return module;
}

}  // namespace detrain::xla_import
