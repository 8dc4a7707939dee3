// Internal to lowering (lower_expr.cc, lower_layers.cc).
#ifndef DETRAIN_FRONTEND_LOWER_INTERNAL_H_
#define DETRAIN_FRONTEND_LOWER_INTERNAL_H_

#include <map>
#include <string>

#include "frontend/emit.h"
#include "frontend/lower.h"

namespace detrain::frontend {

class LowerCtx {
 public:
  LowerCtx(const CheckedProgram& program, const LowerOptions& options, Emitter* emit)
      : prog_(program), opts_(options), e_(emit) {}

  Emitter& e() { return *e_; }
  ir::Builder& b() { return e_->b(); }
  const CheckedProgram& program() const { return prog_; }
  const LowerOptions& options() const { return opts_; }

  // Lowers a function body with `args` bound to its arguments; `dims` binds its dimension names.
  Result<ir::Instruction*> LowerBody(const FuncDecl& f, const std::vector<ir::Instruction*>& args,
                                     const std::map<std::string, int64_t>& dims);
  Result<ir::Instruction*> Lower(const Expr& e);
  Result<ir::Shape> ShapeOf(const Expr& e);

  std::map<std::string, ir::Instruction*> params;  // program parameters

 private:
  Result<ir::Instruction*> LowerBinary(const Expr& e);
  Result<ir::Instruction*> LowerCall(const Expr& e);

  const CheckedProgram& prog_;
  const LowerOptions& opts_;
  Emitter* e_;
  std::map<std::string, ir::Instruction*> locals_;
  std::map<std::string, int64_t> dims_;
};

// lower_layers.cc: expands one layer call; `args` are the lowered tensor/key arguments in
// ParamSpec order (nullptr for literal kinds, whose values are in `call.args`).
Result<ir::Instruction*> LowerLayer(LowerCtx& ctx, const Expr& e, const CheckedCall& call,
                                    const std::vector<ir::Instruction*>& args,
                                    const ir::Shape& result);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_LOWER_INTERNAL_H_
