// The table of built-in functions of the .dt language: layers (relu, softmax, conv2d, ...),
// initializers, optimizers, schedules, data sources and the train settings. Each entry gives
// the parameter list (name, kind, default) and a rule that checks the bound arguments and
// returns the result type. Binding positional and keyword arguments, unknown options, missing
// and mistyped arguments are handled once, in BindCall, for every entry alike.
//
// Lowering to IR uses the same names (frontend/lower_*.cc) so the table stays the single list
// of what the language offers. Thread safety: the table is immutable.
#ifndef DETRAIN_FRONTEND_BUILTINS_H_
#define DETRAIN_FRONTEND_BUILTINS_H_

#include <string>
#include <string_view>
#include <vector>

#include "frontend/ast.h"
#include "frontend/run_config.h"
#include "frontend/types.h"

namespace detrain::frontend {

enum class ArgKind {
  kTensor,    // any tensor expression
  kKey,       // a key
  kInt,       // an integer literal (may be negative)
  kFloat,     // a numeric literal
  kBool,      // true or false
  kString,    // a string literal
  kDims,      // a list of integers and dimension names: [B, -1, 64]
  kAxes,      // an integer or a list of integers (axes; negative counts from the end)
  kSchedule,  // a number, or a schedule call such as cosine_decay(...)
  kColumn,    // a CSV column: an integer index or a string name
  kColumns,   // a list of CSV columns: [0, 3] or ["age", "weight"]
};

struct ParamSpec {
  const char* name;
  ArgKind kind;
  const char* default_value;  // nullptr: required; "none": optional without a value
};

enum class BuiltinCategory { kLayer, kInitializer, kOptimizer, kSchedule, kData, kTrain };

// A bound argument. Literal kinds are decoded; tensor/key kinds carry the operand's type.
struct ArgValue {
  bool present = false;  // given, or defaulted to a value
  SourceRange range;     // the argument expression (or the call, when defaulted)
  const Expr* expr = nullptr;
  Type type;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<DimValue> dims;      // kDims
  std::vector<int64_t> axes;       // kAxes
  std::vector<ColumnRef> columns;  // kColumn (one), kColumns
};

struct CallContext {
  const SourceFile* source;
  const Expr* call;
  std::string_view callee;
  std::vector<ArgValue> args;  // in ParamSpec order

  const ArgValue& arg(size_t i) const { return args[i]; }
  Status Error(std::string_view message) const;                // at the call
  Status ErrorAt(size_t arg, std::string_view message) const;  // at one argument
};

using TypeRule = Result<Type> (*)(const CallContext&);

struct BuiltinDef {
  const char* name;
  BuiltinCategory category;
  std::vector<ParamSpec> params;
  TypeRule rule;
  const char* summary;  // one line, for docs and "did you mean" lists
};

const std::vector<BuiltinDef>& Builtins();
const BuiltinDef* FindBuiltin(std::string_view name, BuiltinCategory category);
// Names of one category, comma-separated, for error messages.
std::string BuiltinNames(BuiltinCategory category);

// Per-category tables, defined in builtins_layers.cc and builtins_config.cc.
void AppendLayerBuiltins(std::vector<BuiltinDef>* out);
void AppendConfigBuiltins(std::vector<BuiltinDef>* out);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_BUILTINS_H_
