// The syntax tree of a .dt program (docs/language.md). Produced by the parser, checked by the
// type checker, lowered to IR. Every node keeps its source range for diagnostics.
//
// Thread safety: plain data.
#ifndef DETRAIN_FRONTEND_AST_H_
#define DETRAIN_FRONTEND_AST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frontend/source.h"

namespace detrain::frontend {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// One call argument: positional when `keyword` is empty.
struct Arg {
  std::string keyword;
  SourceRange keyword_range;
  ExprPtr value;
};

enum class ExprKind {
  kInt,     // text: decimal digits
  kFloat,   // text: as written
  kString,  // text: decoded value
  kBool,    // text: "true" or "false"
  kName,    // text: the name
  kCall,    // text: callee name; args
  kBinary,  // op: one of + - * / @; operands[0], operands[1]
  kNegate,  // operands[0]
  kList,    // operands
};

struct Expr {
  ExprKind kind;
  SourceRange range;
  int depth = 1;  // levels of nesting, this node included (parser.h: kMaxExpressionDepth)
  std::string text;
  char op = 0;
  SourceRange callee_range;  // kCall: the callee name alone
  std::vector<ExprPtr> operands;
  std::vector<Arg> args;
};

// A dimension: a size, or a symbol such as B (the batch size, bound at lowering).
struct Dim {
  int64_t size = -1;  // -1 when symbolic
  std::string symbol;
  SourceRange range;
};

// `key`, or DTYPE[d0, d1, ...] (a scalar is DTYPE[]).
struct TypeExpr {
  bool is_key = false;
  std::string dtype;
  std::vector<Dim> dims;
  SourceRange range;
};

struct DataDecl {
  std::string name;
  SourceRange name_range;
  ExprPtr source;  // a call: csv(...) or npy(...)
};

struct ParamDecl {
  std::string name;
  SourceRange name_range;
  TypeExpr type;
  ExprPtr init;  // an initializer name or call
};

struct FuncArg {
  std::string name;
  SourceRange range;
  TypeExpr type;
};

struct Stmt {
  bool is_return = false;
  std::string target;  // assignment target
  SourceRange target_range;
  ExprPtr value;
};

struct FuncDecl {
  std::string name;
  SourceRange name_range;
  std::vector<FuncArg> args;
  TypeExpr result;
  std::vector<Stmt> body;
  SourceRange range;
};

// `optimizer = CALL`, `train(...)`, `metrics = [..]`: settings, each at most once.
struct Setting {
  std::string keyword;
  SourceRange keyword_range;
  ExprPtr value;
};

struct Program {
  std::vector<DataDecl> data;
  std::vector<ParamDecl> params;  // in declaration order (the canonical parameter order)
  std::vector<FuncDecl> funcs;
  std::vector<Setting> settings;
};

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_AST_H_
