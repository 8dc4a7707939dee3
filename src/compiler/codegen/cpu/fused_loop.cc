// See fused_loop.h.
#include "compiler/codegen/cpu/fused_loop.h"

#include <cstdio>
#include <set>

#include "compiler/ir/op_enums.h"

namespace detrain::codegen::cpu {
namespace {

namespace pb = plan::v2;
using ir::BinaryOp;
using ir::ElementType;
using ir::UnaryOp;

const char* CompareOperator(ir::Direction d) {
  switch (d) {
    case ir::Direction::kEq:
      return "==";
    case ir::Direction::kNe:
      return "!=";
    case ir::Direction::kLt:
      return "<";
    case ir::Direction::kLe:
      return "<=";
    case ir::Direction::kGt:
      return ">";
    case ir::Direction::kGe:
      return ">=";
  }
  return "==";
}

// The unary ops a block hands to crmath's array forms (the evaluator's ArrayUnary set).
bool IsArrayUnary(UnaryOp op) {
  switch (op) {
    case UnaryOp::kExp:
    case UnaryOp::kExpm1:
    case UnaryOp::kLog:
    case UnaryOp::kLog1p:
    case UnaryOp::kTanh:
    case UnaryOp::kLogistic:
    case UnaryOp::kErf:
    case UnaryOp::kRsqrt:
      return true;
    default:
      return false;
  }
}

bool IsArrayOp(const plan::DecodedOp& d) {
  return d.kind == pb::ScalarOp::UNARY && IsArrayUnary(d.unary);
}

std::string Hex32(uint64_t bits) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08xu", static_cast<unsigned>(bits & 0xffffffffu));
  return b;
}

const char* CType(ElementType t) {
  switch (t) {
    case ElementType::kF32:
      return "float";
    case ElementType::kS32:
      return "int32_t";
    case ElementType::kU32:
      return "uint32_t";
    default:
      return "uint8_t";  // pred
  }
}

bool Is32(ElementType t) {
  return t == ElementType::kF32 || t == ElementType::kS32 || t == ElementType::kU32;
}
bool IsInt32(ElementType t) { return t == ElementType::kS32 || t == ElementType::kU32; }

// The generator of one function (LoopFunction).
class Writer {
 public:
  explicit Writer(const LoopSpec& spec) : spec_(spec), p_(*spec.program), n_(p_.ops.size()) {
    std::vector<int64_t> elements(static_cast<size_t>(p_.num_inputs), 2);
    for (size_t i = 0; i < spec.scalar_input.size() && i < elements.size(); ++i)
      elements[i] = spec.scalar_input[i] ? 1 : 2;
    uniform_ = plan::UniformOps(p_, elements);
    // Segments: each array op that is evaluated per element starts one; a value read in a later
    // segment than its own, and every array op's argument and result, live in block arrays.
    seg_.assign(n_, 0);
    int s = 0;
    for (size_t i = 0; i < n_; ++i) {
      if (IsArrayOp(p_.ops[i]) && !uniform_[i]) ++s;
      seg_[i] = s;
    }
    segments_ = s + 1;
    array_.assign(n_, 0);
    for (size_t i = 0; i < n_; ++i) {
      const plan::DecodedOp& d = p_.ops[i];
      if (uniform_[i]) continue;
      if (IsArrayOp(d)) array_[i] = array_[Arg(i, 0)] = 1;
      for (int a = 0; a < plan::OpArity(d.kind); ++a) {
        const size_t src = Arg(i, a);
        if (!uniform_[src] && seg_[src] != seg_[i]) array_[src] = 1;
      }
    }
  }

  std::string Function(std::string_view name) {
    const bool aliased = spec_.output_meets_input;
    // __restrict where the output meets no input: the loops then vectorize without alias checks.
    const std::string restrict = aliased ? "" : "__restrict ";
    Line("extern \"C\" void " + std::string(name) +
         "(const uint8_t* const* in, uint8_t* out_bytes, int64_t begin, int64_t end, "
         "const DtLoopEnv* env, void* ctx) {");
    for (size_t j = 0; j < InputTypes().size(); ++j) {
      const char* t = CType(InputTypes()[j]);
      Line(std::string("  const ") + t + "* " + restrict + "in" + std::to_string(j) +
           " = reinterpret_cast<const " + t + "*>(in[" + std::to_string(j) + "]);");
    }
    const char* out_type = CType(p_.ops[static_cast<size_t>(p_.result)].type);
    Line(std::string("  ") + out_type + "* " + restrict + "out = reinterpret_cast<" + out_type +
         "*>(out_bytes);");
    // The values the same at every index, once; should one need the rule, so does every block.
    Line("  int uniform_flag = 0;");
    for (size_t i = 0; i < n_; ++i) {
      if (!uniform_[i]) continue;
      if (IsArrayOp(p_.ops[i])) {
        Line("  " + Decl(i) + ";");
        Line("  env->unary(" + std::to_string(static_cast<int>(p_.ops[i].unary)) + ", &v" +
             std::to_string(Arg(i, 0)) + ", &v" + std::to_string(i) + ", 1);");
      } else {
        Line("  " + Decl(i) + " = " + Expr(i, "uniform_flag") + ";");
      }
    }
    Line("  if (uniform_flag) {");
    Line("    env->rule(ctx, begin, end - begin);");
    Line("    return;");
    Line("  }");
    const std::string block = std::to_string(kLoopBlock);
    Line("  for (int64_t b0 = begin; b0 < end; b0 += " + block + ") {");
    Line("    const int64_t n = end - b0 < " + block + " ? end - b0 : " + block + ";");
    Line("    if (n == " + block + ") {");
    Line("      int flag = 0;");
    for (size_t i = 0; i < n_; ++i) {
      if (array_[i])
        Line("      alignas(64) " + ValueType(i) + " a" + std::to_string(i) + "[" + block + "];");
    }
    if (aliased) Line(std::string("      alignas(64) ") + out_type + " res[" + block + "];");
    const std::string dst = aliased ? "res[i]" : "out[b0 + i]";
    const size_t result = static_cast<size_t>(p_.result);
    for (int sg = 0; sg < segments_; ++sg) {
      for (size_t i = 0; i < n_; ++i) {  // the segment's array op, on its argument's block
        if (seg_[i] == sg && !uniform_[i] && IsArrayOp(p_.ops[i]))
          Line("      env->unary(" + std::to_string(static_cast<int>(p_.ops[i].unary)) + ", a" +
               std::to_string(Arg(i, 0)) + ", a" + std::to_string(i) + ", " + block + ");");
      }
      Line("      for (int64_t i = 0; i < " + block + "; ++i) {");
      std::set<size_t> loaded;
      for (size_t i = 0; i < n_; ++i) {
        if (seg_[i] != sg || uniform_[i]) continue;
        const plan::DecodedOp& d = p_.ops[i];
        for (int a = 0; a < plan::OpArity(d.kind); ++a) {
          const size_t src = Arg(i, a);
          if (!uniform_[src] && seg_[src] != sg && loaded.insert(src).second)
            Line("        const " + Decl(src) + " = a" + std::to_string(src) + "[i];");
        }
        if (IsArrayOp(d)) {
          Line("        const " + Decl(i) + " = a" + std::to_string(i) + "[i];");
        } else {
          Line("        const " + Decl(i) + " = " + Expr(i, "flag") + ";");
          if (array_[i])
            Line("        a" + std::to_string(i) + "[i] = v" + std::to_string(i) + ";");
        }
        if (i == result) Line("        " + dst + " = v" + std::to_string(i) + ";");
      }
      if (sg == segments_ - 1 && uniform_[result])
        Line("        " + dst + " = v" + std::to_string(result) + ";");
      Line("      }");
    }
    if (aliased) {
      Line("      if (!flag) {");
      Line("        std::memcpy(out + b0, res, sizeof res);");
      Line("        continue;");
      Line("      }");
    } else {
      Line("      if (!flag) continue;");
    }
    Line("    }");
    // A flagged or partial block: the rule (the evaluator), which reads the inputs unchanged.
    Line("    env->rule(ctx, b0, n);");
    Line("  }");
    Line("}");
    return std::move(text_);
  }

 private:
  size_t Arg(size_t i, int a) const { return static_cast<size_t>(p_.ops[i].args[a]); }

  // Each input's element type, from the ops that read it (pred where none does).
  const std::vector<ElementType>& InputTypes() {
    if (input_types_.empty()) {
      input_types_.assign(static_cast<size_t>(p_.num_inputs), ElementType::kPred);
      for (const plan::DecodedOp& d : p_.ops) {
        if (d.kind == pb::ScalarOp::INPUT) input_types_[static_cast<size_t>(d.input)] = d.type;
      }
    }
    return input_types_;
  }

  // Every pred value is a bool (which keeps the loops' masks in vector registers): a compare's,
  // a constant's (0 or 1: CanGenerate), an input's byte as `!= 0` — all a select reads of it
  // (CanGenerate leaves a convert of a pred input, whose byte 2 would be 2.0f, to the evaluator).
  std::string ValueType(size_t i) const {
    return p_.ops[i].type == ElementType::kPred ? "bool" : CType(p_.ops[i].type);
  }
  std::string Decl(size_t i) const { return ValueType(i) + " v" + std::to_string(i); }

  bool ScalarInput(int32_t input) const {
    const size_t j = static_cast<size_t>(input);
    return j < spec_.scalar_input.size() && spec_.scalar_input[j];
  }

  // Op i's value from the values before it, as the plain operation (inside a full block's loop
  // when op i is not uniform), flagging every f32 result the rule might give other bits for.
  std::string Expr(size_t i, const std::string& flag_name) const {
    const plan::DecodedOp& d = p_.ops[i];
    const std::string flag = ", " + flag_name + ")";
    auto v = [&](int a) { return "v" + std::to_string(Arg(i, a)); };
    switch (d.kind) {
      case pb::ScalarOp::INPUT: {
        const std::string at = ScalarInput(d.input) ? "[0]" : "[b0 + i]";
        const std::string x = "in" + std::to_string(d.input) + at;
        return d.type == ElementType::kPred ? "(" + x + " != 0)" : x;
      }
      case pb::ScalarOp::CONSTANT:
        if (d.type == ElementType::kPred) return (d.constant & 0xff) != 0 ? "true" : "false";
        return std::string("std::bit_cast<") + CType(d.type) + ">(" + Hex32(d.constant) + ")";
      case pb::ScalarOp::UNARY:
        switch (d.unary) {
          case UnaryOp::kNegate:
            return "DtFlag(-" + v(0) + flag;
          case UnaryOp::kAbs:
            return "DtFlag(__builtin_fabsf(" + v(0) + ")" + flag;
          default:  // sqrt: IEEE (a NaN is flagged: its payload is the rule's)
            return "DtFlag(__builtin_sqrtf(" + v(0) + ")" + flag;
        }
      case pb::ScalarOp::BINARY:
        if (IsInt32(d.type)) {  // exact: wrapping arithmetic (in uint32_t), bits, comparisons
          const std::string t = CType(d.type);
          auto wrap = [&](const char* op) {
            return "static_cast<" + t + ">(static_cast<uint32_t>(" + v(0) + ") " + op +
                   " static_cast<uint32_t>(" + v(1) + "))";
          };
          switch (d.binary) {
            case BinaryOp::kAdd:
              return wrap("+");
            case BinaryOp::kSubtract:
              return wrap("-");
            case BinaryOp::kMultiply:
              return wrap("*");
            case BinaryOp::kAnd:
              return wrap("&");
            case BinaryOp::kOr:
              return wrap("|");
            case BinaryOp::kXor:
              return wrap("^");
            case BinaryOp::kMaximum:
              return "DtSelect(" + v(0) + " > " + v(1) + ", " + v(0) + ", " + v(1) + ")";
            default:
              return "DtSelect(" + v(0) + " < " + v(1) + ", " + v(0) + ", " + v(1) + ")";
          }
        }
        switch (d.binary) {
          case BinaryOp::kAdd:
            return "DtFlag(" + v(0) + " + " + v(1) + flag;
          case BinaryOp::kSubtract:
            return "DtFlag(" + v(0) + " - " + v(1) + flag;
          case BinaryOp::kMultiply:
            return "DtFlag(" + v(0) + " * " + v(1) + flag;
          case BinaryOp::kDivide:
            return "DtFlag(" + v(0) + " / " + v(1) + flag;
          case BinaryOp::kMaximum:
            return "DtMax(" + v(0) + ", " + v(1) + flag;
          default:
            return "DtMin(" + v(0) + ", " + v(1) + flag;
        }
      case pb::ScalarOp::COMPARE:  // IEEE comparisons: exact
        return v(0) + " " + CompareOperator(d.direction) + " " + v(1);
      case pb::ScalarOp::SELECT:
        return "DtSelect(" + v(0) + ", " + v(1) + ", " + v(2) + ")";
      case pb::ScalarOp::CONVERT:  // to f32 from pred, s32, u32: round to nearest even, exact
        if (p_.ops[Arg(i, 0)].type == ElementType::kPred)
          return "DtSelect(" + v(0) + ", 1.0f, 0.0f)";
        return "static_cast<float>(" + v(0) + ")";
      case pb::ScalarOp::BITCAST:
        return std::string("std::bit_cast<") + CType(d.type) + ">(" + v(0) + ")";
      default:
        return "0";
    }
  }

  void Line(const std::string& s) { text_ += s + "\n"; }

  const LoopSpec& spec_;
  const plan::DecodedProgram& p_;
  const size_t n_;
  std::vector<uint8_t> uniform_, array_;
  std::vector<int> seg_;
  int segments_ = 1;
  std::vector<ElementType> input_types_;
  std::string text_;
};

constexpr std::string_view kPrelude =
    R"(// detrain: elementwise programs as loops (docs/fused-loops.md).
#include <bit>
#include <cstdint>
#include <cstring>

struct DtLoopEnv {
  void (*unary)(int op, const float* in, float* out, int64_t n);
  void (*rule)(void* ctx, int64_t begin, int64_t n);
};
// p ? a : b for 4-byte a and b, as bits: no branch, so that GCC vectorizes a loop that also
// folds a flag (it does not where if-conversion and the flag's reduction meet).
template <typename T>
static inline T DtSelect(bool p, T a, T b) {
  const uint32_t m = 0u - static_cast<uint32_t>(p);
  return std::bit_cast<T>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}
// The plain operation's result, flagging a NaN (whose payload is the rule's to decide).
static inline float DtFlag(float r, int& flag) {
  flag |= r != r;
  return r;
}
// maximum / minimum: the comparison, flagging NaNs and two zeros (the sign rule).
static inline float DtMax(float a, float b, int& flag) {
  flag |= (a != a) | (b != b) | ((a == 0.0f) & (b == 0.0f));
  return DtSelect(a > b, a, b);
}
static inline float DtMin(float a, float b, int& flag) {
  flag |= (a != a) | (b != b) | ((a == 0.0f) & (b == 0.0f));
  return DtSelect(a < b, a, b);
}
)";

}  // namespace

bool CanGenerate(const plan::DecodedProgram& program) {
  if (program.ops.empty() || program.result < 0 ||
      static_cast<size_t>(program.result) >= program.ops.size() ||
      !Is32(program.ops[static_cast<size_t>(program.result)].type))
    return false;
  for (const plan::DecodedOp& d : program.ops) {
    const bool f32 = d.type == ElementType::kF32;
    switch (d.kind) {
      case pb::ScalarOp::INPUT:
      case pb::ScalarOp::CONSTANT:
        if (!Is32(d.type) && d.type != ElementType::kPred) return false;
        if (d.kind == pb::ScalarOp::CONSTANT && d.type == ElementType::kPred && d.constant > 1)
          return false;
        break;
      case pb::ScalarOp::UNARY:
        if (!f32 || !(IsArrayUnary(d.unary) || d.unary == UnaryOp::kNegate ||
                      d.unary == UnaryOp::kAbs || d.unary == UnaryOp::kSqrt))
          return false;
        break;
      case pb::ScalarOp::BINARY:
        switch (d.binary) {
          case BinaryOp::kAdd:
          case BinaryOp::kSubtract:
          case BinaryOp::kMultiply:
          case BinaryOp::kMaximum:
          case BinaryOp::kMinimum:
            if (!Is32(d.type)) return false;
            break;
          case BinaryOp::kDivide:
            if (!f32) return false;  // an integer division's zero and overflow rules: evaluated
            break;
          case BinaryOp::kAnd:
          case BinaryOp::kOr:
          case BinaryOp::kXor:
            if (!IsInt32(d.type)) return false;
            break;
          default:
            return false;  // shifts, remainder, power
        }
        break;
      case pb::ScalarOp::COMPARE:
        if (!Is32(d.arg_type)) return false;
        break;
      case pb::ScalarOp::SELECT:
        if (!Is32(d.type)) return false;
        break;
      case pb::ScalarOp::CONVERT:
        if (!f32 || !(IsInt32(d.arg_type) || d.arg_type == ElementType::kPred)) return false;
        if (program.ops[static_cast<size_t>(d.args[0])].kind == pb::ScalarOp::INPUT &&
            d.arg_type == ElementType::kPred)
          return false;
        break;
      case pb::ScalarOp::BITCAST:
        if (!Is32(d.type) || !Is32(d.arg_type)) return false;
        break;
      default:
        return false;  // REDUCED, CLAMP
    }
  }
  return true;
}

std::string LoopFunction(const LoopSpec& spec, std::string_view name) {
  return Writer(spec).Function(name);
}

std::string_view LoopPrelude() { return kPrelude; }

}  // namespace detrain::codegen::cpu
