// See parser.h. One function per grammar rule; precedence climbing for binary operators:
//   additive:        '+' '-'            (lowest)
//   multiplicative:  '*' '/' '@'        (as in Python)
//   unary:           '-'
// Depth (parser.h): Enter() bounds the recursion, Nest() the depth of each node built.
#include "frontend/parser.h"

#include <algorithm>

#include "frontend/lexer.h"
#include "frontend/number.h"

namespace detrain::frontend {
namespace {

class Parser {
 public:
  Parser(const SourceFile& source, std::vector<Token> tokens)
      : src_(source), toks_(std::move(tokens)) {}

  Result<Program> Run() {
    Program program;
    while (Peek().kind != TokenKind::kEnd) {
      DETRAIN_RETURN_IF_ERROR(Declaration(program));
    }
    return program;
  }

 private:
  const Token& Peek(size_t ahead = 0) const {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  const Token& Take() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  bool At(TokenKind k) const { return Peek().kind == k; }
  bool AtWord(std::string_view w) const { return At(TokenKind::kIdent) && Peek().text == w; }

  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::kIdent:
        return "'" + Abbreviate(t.text) + "'";
      case TokenKind::kInt:
      case TokenKind::kFloat:
        return "number " + Abbreviate(t.text);
      case TokenKind::kString:
        return "a string";
      default:
        return TokenKindName(t.kind);
    }
  }

  Status Expected(std::string_view what) const {
    return src_.Error(Peek().range,
                      "expected " + std::string(what) + ", found " + Describe(Peek()));
  }

  Result<Token> Expect(TokenKind k, std::string_view what = "") {
    if (!At(k)) return Expected(what.empty() ? TokenKindName(k) : what);
    return Take();
  }

  Status TooDeep(SourceRange at) const {
    return src_.Error(
        at, "expression nests deeper than " + std::to_string(kMaxExpressionDepth) + " levels");
  }

  // Open constructs (operators, calls, lists, parentheses) around the current position, each
  // held by a Level. Entering one more than the limit is refused: each adds a level, so the
  // tree would be too deep anyway, and the parser's recursion stays bounded.
  class Level {
   public:
    explicit Level(int* open) : open_(open) { ++*open_; }
    ~Level() { --*open_; }
    Level(const Level&) = delete;
    Level& operator=(const Level&) = delete;

   private:
    int* open_;
  };
  Status Enter(const Token& at) const {
    if (open_ >= kMaxExpressionDepth) return TooDeep(at.range);
    return Status::Ok();
  }

  // e's depth is one more than its deepest part's, `inner`; an error at `at` beyond the limit.
  Status Nest(Expr& e, int inner, SourceRange at) const {
    e.depth = inner + 1;
    if (e.depth > kMaxExpressionDepth) return TooDeep(at);
    return Status::Ok();
  }

  SourceRange From(SourceRange begin) const {
    return {begin.begin, toks_[pos_ == 0 ? 0 : pos_ - 1].range.end};
  }

  Status Declaration(Program& p) {
    if (AtWord("data")) return DataDeclaration(p);
    if (AtWord("param")) return ParamDeclaration(p);
    if (AtWord("def")) return FuncDeclaration(p);
    if (AtWord("optimizer") || AtWord("metrics")) {
      Token kw = Take();
      DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kAssign, "'=' after '" + kw.text + "'").status());
      DETRAIN_ASSIGN_OR_RETURN(ExprPtr value, Expression());
      p.settings.push_back({kw.text, kw.range, std::move(value)});
      return Status::Ok();
    }
    if (AtWord("train")) {
      Token kw = Peek();
      DETRAIN_ASSIGN_OR_RETURN(ExprPtr call, Primary());
      if (call->kind != ExprKind::kCall) return src_.Error(call->range, "expected 'train(...)'");
      p.settings.push_back({kw.text, kw.range, std::move(call)});
      return Status::Ok();
    }
    return Expected("a declaration (data, param, def, optimizer, metrics or train)");
  }

  Status DataDeclaration(Program& p) {
    Take();
    DETRAIN_ASSIGN_OR_RETURN(Token name, Expect(TokenKind::kIdent, "a data set name"));
    DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kAssign).status());
    DETRAIN_ASSIGN_OR_RETURN(ExprPtr source, Expression());
    p.data.push_back({name.text, name.range, std::move(source)});
    return Status::Ok();
  }

  Status ParamDeclaration(Program& p) {
    Take();
    DETRAIN_ASSIGN_OR_RETURN(Token name, Expect(TokenKind::kIdent, "a parameter name"));
    DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kColon, "':' and the parameter's type").status());
    DETRAIN_ASSIGN_OR_RETURN(TypeExpr type, Type());
    DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kAssign, "'=' and an initializer").status());
    DETRAIN_ASSIGN_OR_RETURN(ExprPtr init, Expression());
    p.params.push_back({name.text, name.range, std::move(type), std::move(init)});
    return Status::Ok();
  }

  Result<TypeExpr> Type() {
    TypeExpr t;
    DETRAIN_ASSIGN_OR_RETURN(Token head,
                             Expect(TokenKind::kIdent, "a type such as f32[B, 30] or key"));
    t.range = head.range;
    if (head.text == "key") {
      t.is_key = true;
      return t;
    }
    t.dtype = head.text;
    DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kLBracket, "'[' and the dimensions").status());
    while (!At(TokenKind::kRBracket)) {
      Dim d;
      d.range = Peek().range;
      if (At(TokenKind::kInt)) {
        if (ParseI64(Peek().text, &d.size) != NumberStatus::kOk) {
          return src_.Error(d.range, "dimension " + I64RangeMessage(Peek().text));
        }
        Take();
      } else if (At(TokenKind::kIdent)) {
        d.symbol = Take().text;
      } else {
        return Expected("a dimension (an integer or a name such as B)");
      }
      t.dims.push_back(std::move(d));
      if (!At(TokenKind::kRBracket)) {
        DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kComma, "',' or ']'").status());
      }
    }
    Take();
    t.range = From(t.range);
    return t;
  }

  Status FuncDeclaration(Program& p) {
    Token def = Take();
    FuncDecl f;
    DETRAIN_ASSIGN_OR_RETURN(Token name, Expect(TokenKind::kIdent, "a function name"));
    f.name = name.text;
    f.name_range = name.range;
    DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kLParen).status());
    while (!At(TokenKind::kRParen)) {
      DETRAIN_ASSIGN_OR_RETURN(Token arg, Expect(TokenKind::kIdent, "an argument name"));
      FuncArg a{arg.text, arg.range, {}};
      if (arg.text == "key" && !At(TokenKind::kColon)) {
        a.type.is_key = true;  // `key` alone is shorthand for `key: key`
        a.type.range = arg.range;
      } else {
        DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kColon, "':' and the argument's type").status());
        DETRAIN_ASSIGN_OR_RETURN(a.type, Type());
      }
      f.args.push_back(std::move(a));
      if (!At(TokenKind::kRParen)) {
        DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kComma, "',' or ')'").status());
      }
    }
    Take();
    DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "'->' and the result type").status());
    DETRAIN_ASSIGN_OR_RETURN(f.result, Type());
    DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "'{'").status());
    while (!At(TokenKind::kRBrace)) {
      DETRAIN_ASSIGN_OR_RETURN(Stmt s, Statement());
      f.body.push_back(std::move(s));
    }
    Take();
    f.range = From(def.range);
    p.funcs.push_back(std::move(f));
    return Status::Ok();
  }

  Result<Stmt> Statement() {
    Stmt s;
    if (AtWord("return")) {
      Take();
      s.is_return = true;
    } else {
      DETRAIN_ASSIGN_OR_RETURN(Token target,
                               Expect(TokenKind::kIdent, "a statement (NAME = ... or return ...)"));
      s.target = target.text;
      s.target_range = target.range;
      DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kAssign, "'='").status());
    }
    DETRAIN_ASSIGN_OR_RETURN(s.value, Expression());
    return s;
  }

  static int Precedence(TokenKind k) {
    switch (k) {
      case TokenKind::kPlus:
      case TokenKind::kMinus:
        return 1;
      case TokenKind::kStar:
      case TokenKind::kSlash:
      case TokenKind::kAt:
        return 2;
      default:
        return 0;
    }
  }

  Result<ExprPtr> Expression(int min_prec = 1) {
    DETRAIN_ASSIGN_OR_RETURN(ExprPtr lhs, Unary());
    while (Precedence(Peek().kind) >= min_prec) {
      DETRAIN_RETURN_IF_ERROR(Enter(Peek()));
      Level level(&open_);
      Token op = Take();
      DETRAIN_ASSIGN_OR_RETURN(ExprPtr rhs, Expression(Precedence(op.kind) + 1));
      auto e = std::make_unique<Expr>();
      e->kind = ExprKind::kBinary;
      e->op = op.text[0];
      e->range = {lhs->range.begin, rhs->range.end};
      DETRAIN_RETURN_IF_ERROR(Nest(*e, std::max(lhs->depth, rhs->depth), op.range));
      e->operands.push_back(std::move(lhs));
      e->operands.push_back(std::move(rhs));
      lhs = std::move(e);
    }
    return lhs;
  }

  Result<ExprPtr> Unary() {
    if (At(TokenKind::kMinus)) {
      DETRAIN_RETURN_IF_ERROR(Enter(Peek()));
      Level level(&open_);
      Token minus = Take();
      DETRAIN_ASSIGN_OR_RETURN(ExprPtr operand, Unary());
      auto e = std::make_unique<Expr>();
      e->kind = ExprKind::kNegate;
      e->range = {minus.range.begin, operand->range.end};
      DETRAIN_RETURN_IF_ERROR(Nest(*e, operand->depth, minus.range));
      e->operands.push_back(std::move(operand));
      return e;
    }
    return Primary();
  }

  Result<ExprPtr> Primary() {
    auto e = std::make_unique<Expr>();
    const Token& t = Peek();
    e->range = t.range;
    switch (t.kind) {
      case TokenKind::kInt:
        e->kind = ExprKind::kInt;
        e->text = Take().text;
        return e;
      case TokenKind::kFloat:
        e->kind = ExprKind::kFloat;
        e->text = Take().text;
        return e;
      case TokenKind::kString:
        e->kind = ExprKind::kString;
        e->text = Take().text;
        return e;
      case TokenKind::kLParen: {
        DETRAIN_RETURN_IF_ERROR(Enter(t));
        Level level(&open_);
        Token open = Take();
        DETRAIN_ASSIGN_OR_RETURN(ExprPtr inner, Expression());
        DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "')'").status());
        DETRAIN_RETURN_IF_ERROR(Nest(*inner, inner->depth, open.range));
        return inner;
      }
      case TokenKind::kLBracket:
        return List();
      case TokenKind::kIdent:
        break;
      default:
        return Expected("an expression");
    }
    Token name = Take();
    e->text = name.text;
    if (name.text == "true" || name.text == "false") {
      e->kind = ExprKind::kBool;
      return e;
    }
    if (!At(TokenKind::kLParen)) {
      e->kind = ExprKind::kName;
      return e;
    }
    e->kind = ExprKind::kCall;
    e->callee_range = name.range;
    DETRAIN_RETURN_IF_ERROR(Enter(name));
    Level level(&open_);
    Take();
    int inner = 0;
    while (!At(TokenKind::kRParen)) {
      Arg a;
      if (At(TokenKind::kIdent) && Peek(1).kind == TokenKind::kAssign) {
        Token kw = Take();
        a.keyword = kw.text;
        a.keyword_range = kw.range;
        Take();
      } else if (!e->args.empty() && !e->args.back().keyword.empty()) {
        return src_.Error(Peek().range, "positional argument after keyword argument '" +
                                            e->args.back().keyword + "'");
      }
      DETRAIN_ASSIGN_OR_RETURN(a.value, Expression());
      inner = std::max(inner, a.value->depth);
      e->args.push_back(std::move(a));
      if (!At(TokenKind::kRParen)) {
        DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kComma, "',' or ')'").status());
      }
    }
    Take();
    e->range = From(name.range);
    DETRAIN_RETURN_IF_ERROR(Nest(*e, inner, name.range));
    return e;
  }

  Result<ExprPtr> List() {
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::kList;
    DETRAIN_RETURN_IF_ERROR(Enter(Peek()));
    Level level(&open_);
    Token open = Take();
    int inner = 0;
    while (!At(TokenKind::kRBracket)) {
      DETRAIN_ASSIGN_OR_RETURN(ExprPtr item, Expression());
      inner = std::max(inner, item->depth);
      e->operands.push_back(std::move(item));
      if (!At(TokenKind::kRBracket)) {
        DETRAIN_RETURN_IF_ERROR(Expect(TokenKind::kComma, "',' or ']'").status());
      }
    }
    Take();
    e->range = From(open.range);
    DETRAIN_RETURN_IF_ERROR(Nest(*e, inner, open.range));
    return e;
  }

  const SourceFile& src_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int open_ = 0;  // constructs open around the current position (Level)
};

}  // namespace

Result<Program> Parse(const SourceFile& source) {
  if (source.text().size() > kMaxSourceBytes) {
    auto at = static_cast<uint32_t>(kMaxSourceBytes);
    return source.Error({at, at + 1}, "the program is larger than " +
                                          std::to_string(kMaxSourceBytes >> 20) +
                                          " MiB (a .dt file is a program, not data)");
  }
  // A NUL byte is never text (a binary file, or a truncated copy): refused anywhere, comments
  // included, at its position.
  if (size_t nul = source.text().find('\0'); nul != std::string_view::npos) {
    auto at = static_cast<uint32_t>(nul);
    return source.Error({at, at + 1}, "NUL byte (0x00) in the program: a .dt file is text");
  }
  DETRAIN_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(source));
  return Parser(source, std::move(tokens)).Run();
}

}  // namespace detrain::frontend
