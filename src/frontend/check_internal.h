// Internal to the checker (check.cc, check_expr.cc, check_bind.cc): the Checker class.
#ifndef DETRAIN_FRONTEND_CHECK_INTERNAL_H_
#define DETRAIN_FRONTEND_CHECK_INTERNAL_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "frontend/check.h"

namespace detrain::frontend {

class Checker {
 public:
  Checker(const SourceFile& source, const Program& program) : src_(source), prog_(program) {
    out_.source = &source;
    out_.program = &program;
  }

  Result<CheckedProgram> Run();

  // check_expr.cc
  Result<Type> TypeOf(const Expr& e);

  // check_bind.cc: binds a call's arguments to a builtin's parameters and applies its rule.
  Result<Type> CheckBuiltinCall(const Expr& call, const BuiltinDef& def,
                                std::vector<ArgValue>* args);
  // A builtin call in a configuration position (initializer, optimizer, schedule, data, train).
  Result<std::vector<ArgValue>> BindConfig(const Expr& call, BuiltinCategory category,
                                           const BuiltinDef** def);
  // The JSON value of a bound configuration call: {"name": ..., <param>: <value>, ...}.
  nlohmann::json ConfigJson(const BuiltinDef& def, const std::vector<ArgValue>& args);

  const SourceFile& src_;
  const Program& prog_;
  CheckedProgram out_;
  // The configuration as the built-in table describes it; parsed into out_.config at the end.
  nlohmann::json config_;
  std::vector<std::string> metrics_;     // metric names, in the order given
  std::map<std::string, Type> globals_;  // parameters
  std::map<std::string, Type> locals_;   // arguments and assignments of the function being checked
  std::map<std::string, const FuncDecl*> funcs_;  // functions defined so far
  std::map<const FuncDecl*, int> inlined_depth_;
  int64_t param_bytes_ = 0;  // the parameters' bytes so far, against the memory budget  //
                             // InlinedDepth of each body's deepest statement

 private:
  Status CheckParams();
  Status CheckFunction(const FuncDecl& f);
  Status CheckData();
  Status CheckSettings();
  Status CheckLossAndMetrics();
  Status CheckBatchInput(const FuncArg& a);
  Result<Type> ResolveType(const TypeExpr& t, bool allow_symbols);
  Result<Type> CheckUserCall(const Expr& call, const FuncDecl& f);
  Result<Type> CheckBinary(const Expr& e);
  // A constant meeting a tensor of type `other` takes its element type; it must fit there.
  Status CheckConstantFits(const Expr& constant, const Type& other);
  // The depth of e with the bodies of the user functions it calls in place of the calls
  // (lowering inlines them, recursing that deep); an error beyond kMaxExpressionDepth.
  Result<int> InlinedDepth(const Expr& e);
  std::string Suggest(const std::string& name) const;
};

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_CHECK_INTERNAL_H_
