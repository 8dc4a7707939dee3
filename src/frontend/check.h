// Semantic checking of a parsed .dt program: names, types and shapes, built-in arguments, and
// the training configuration. The result records the type of every expression and the bound
// arguments of every call, which lowering consumes, and the typed run configuration
// (run_config.h), whose canonical JSON is hashed (everything that affects a result is in it).
//
// Errors are reported at the first problem, as "file:line:col: error: ..." with the source line.
// Thread safety: pure function of its inputs; the CheckedProgram points into the Program.
#ifndef DETRAIN_FRONTEND_CHECK_H_
#define DETRAIN_FRONTEND_CHECK_H_

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "frontend/ast.h"
#include "frontend/builtins.h"
#include "frontend/run_config.h"
#include "frontend/types.h"

namespace detrain::frontend {

struct CheckedCall {
  const BuiltinDef* builtin = nullptr;       // a layer, or
  const FuncDecl* func = nullptr;            // a user function
  std::vector<ArgValue> args;                // builtin: in ParamSpec order; func: in argument order
  std::map<std::string, DimValue> bindings;  // func: its dimension names -> the caller's dims
};

struct CheckedProgram {
  const SourceFile* source = nullptr;
  const Program* program = nullptr;
  std::vector<std::pair<std::string, Type>> params;  // declaration order
  const DataDecl* data = nullptr;
  const FuncDecl* loss = nullptr;
  const FuncDecl* predict = nullptr;  // required by the accuracy metric
  std::unordered_map<const Expr*, Type> types;
  std::unordered_map<const Expr*, CheckedCall> calls;
  // Resolved settings with defaults filled in; `resolved` and steps-from-epochs are filled in by
  // the compile driver once it has read the data.
  RunConfig config;
};

Result<CheckedProgram> Check(const SourceFile& source, const Program& program);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_CHECK_H_
