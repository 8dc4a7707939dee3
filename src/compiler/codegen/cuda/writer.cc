// See writer.h.
#include "compiler/codegen/cuda/writer.h"

#include <algorithm>
#include <cstdio>

#include "compiler/ir/op_enums.h"

namespace detrain::codegen::cuda::internal {
namespace {

namespace pb = plan::v2;

const char* UnaryName(ir::UnaryOp op) {
  switch (op) {
#define OP(e, s, n, c, o, x, a, t)
#define UNARY(e, s, x, t) \
  case ir::UnaryOp::e:    \
    return #e;
#define BINARY(e, s, x, t)
#include "compiler/ir/ops.def"
#undef OP
  }
  return "kAbs";
}

const char* BinaryName(ir::BinaryOp op) {
  switch (op) {
#define OP(e, s, n, c, o, x, a, t)
#define UNARY(e, s, x, t)
#define BINARY(e, s, x, t) \
  case ir::BinaryOp::e:    \
    return #e;
#include "compiler/ir/ops.def"
#undef OP
  }
  return "kAdd";
}

const char* DirectionSpelling(ir::Direction d) {
  switch (d) {
#define DETRAIN_X(e, s)  \
  case ir::Direction::e: \
    return #e;
    DETRAIN_DIRECTIONS(DETRAIN_X)
#undef DETRAIN_X
  }
  return "kEq";
}

std::string Hex(uint64_t bits) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(bits));
  return buf;
}

// Arrays up to this many elements are indexed with int: a grid-stride step (at most
// kMaxBlocks * kBlock) added to an index below it cannot overflow.
constexpr int64_t kNarrowElements = int64_t{1} << 30;

}  // namespace

const char* CType(ir::ElementType type) {
  switch (type) {
    case ir::ElementType::kPred:
      return "uint8_t";
    case ir::ElementType::kS32:
      return "int32_t";
    case ir::ElementType::kU32:
      return "uint32_t";
    case ir::ElementType::kS64:
      return "int64_t";
    case ir::ElementType::kU64:
      return "uint64_t";
    case ir::ElementType::kF32:
      return "float";
  }
  return "uint8_t";
}

const char* BitsType(ir::ElementType type) {
  switch (ir::ElementTypeByteSize(type)) {
    case 1:
      return "uint8_t";
    case 4:
      return "uint32_t";
    default:
      return "uint64_t";
  }
}

// Stands for a function's name in its text until the text is compared with those written before.
constexpr char kName[] = "@NAME@";

KernelWriter::KernelWriter(const plan::CheckedKernel& kernel, int64_t base, ProgramText* text,
                           std::vector<Launch>* launches, int64_t* scratch_bytes)
    : checked_(kernel),
      in_(kernel.in),
      out_(kernel.out),
      text_(text),
      launches_(launches),
      scratch_bytes_(scratch_bytes) {
  for (std::vector<Array>* arrays : {&in_, &out_}) {
    for (Array& a : *arrays) {
      a.offset += base;
      wide_ = wide_ || a.elements > kNarrowElements;
    }
  }
}

void KernelWriter::Write(const std::string& line) {
  current_.append(static_cast<size_t>(depth_) * 2, ' ');
  current_.append(line);
  current_.push_back('\n');
}

std::string KernelWriter::Finish(const std::string& prefix, int* counter) {
  std::string text = std::move(current_);
  current_.clear();
  auto found = text_->names.find(text);
  if (found != text_->names.end()) return found->second;
  const std::string name = prefix + std::to_string((*counter)++);
  text_->names.emplace(text, name);
  const size_t at = text.find(kName);
  text.replace(at, sizeof(kName) - 1, name);
  text_->body += "\n// " + name + ": first used by kernel " + std::to_string(kernel().id()) + " (" +
                 kernel().name() + ")\n" + text;
  return name;
}

void KernelWriter::BeginFunction(uint32_t block) {
  args_.clear();
  Write("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " + kName +
        "(unsigned char* __restrict__ arena, unsigned char* __restrict__ scratch, const long "
        "long* __restrict__ args) {");
  ++depth_;
  Write(std::string("typedef ") + index_type() + " I;");
}

std::string KernelWriter::EndFunction() {
  --depth_;
  Write("}");
  last_args_ = std::move(args_);
  args_.clear();
  return Finish("dt_f", &text_->functions);
}

void KernelWriter::BeginHelper(const std::string& result, const std::string& params) {
  Write("__device__ __forceinline__ " + result + " " + kName + "(" + params + ") {");
  ++depth_;
}

std::string KernelWriter::EndHelper() {
  --depth_;
  Write("}");
  return Finish("dt_h", &text_->helpers);
}

std::string KernelWriter::Arg(int64_t value) {
  args_.push_back(value);
  return "args[" + std::to_string(args_.size() - 1) + "]";
}

void KernelWriter::Line(const std::string& line) { Write(line); }

void KernelWriter::Open(const std::string& line) {
  Write(line + " {");
  ++depth_;
}

void KernelWriter::Close(const std::string& tail) {
  --depth_;
  Write("}" + tail);
}

std::string KernelWriter::InputPointer(size_t i, const std::string& name) {
  const Array& a = in_[i];
  const char* t = CType(a.type);
  Write(std::string("const ") + t + "* __restrict__ " + name + " = reinterpret_cast<const " + t +
        "*>(arena + " + Arg(a.offset) + ");");
  return name;
}

std::string KernelWriter::OutputPointer(size_t o, const std::string& name) {
  const Array& a = out_[o];
  const char* t = CType(a.type);
  Write(std::string(t) + "* __restrict__ " + name + " = reinterpret_cast<" + t + "*>(arena + " +
        Arg(a.offset) + ");");
  return name;
}

void KernelWriter::OpenGridStride(const std::string& var, int64_t n) {
  Open("for (I " + var + " = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + " +
       "static_cast<I>(threadIdx.x); " + var + " < " + std::to_string(n) + "; " + var +
       " += static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x))");
}

void KernelWriter::LaunchKernel(const std::string& function, int64_t blocks_x, uint32_t block,
                                int64_t blocks_y, int64_t blocks_z) {
  Launch l;
  l.kind = Launch::Kind::kKernel;
  l.function = function;
  l.args = last_args_;
  l.grid[0] = static_cast<uint32_t>(std::clamp<int64_t>(blocks_x, 1, INT32_MAX));
  l.grid[1] = static_cast<uint32_t>(std::clamp<int64_t>(blocks_y, 1, kMaxBlocks));
  l.grid[2] = static_cast<uint32_t>(std::clamp<int64_t>(blocks_z, 1, kMaxBlocks));
  l.block = block;
  launches_->push_back(std::move(l));
}

void KernelWriter::LaunchCopy(int64_t src, int64_t dst, int64_t bytes) {
  if (src == dst) return;  // an update in place (plan format 4): the bytes are there already
  Launch l;
  l.kind = Launch::Kind::kCopy;
  l.src = src;
  l.dst = dst;
  l.bytes = bytes;
  launches_->push_back(std::move(l));
}

void KernelWriter::LaunchConstant(int64_t dst, int64_t bytes) {
  Launch l;
  l.kind = Launch::Kind::kConstant;
  l.dst = dst;
  l.bytes = bytes;
  l.constant = kernel().constant();
  launches_->push_back(std::move(l));
}

void KernelWriter::LaunchElementwise(const std::string& function, int64_t n) {
  const int64_t blocks = std::min<int64_t>((n + kBlock - 1) / kBlock, kMaxBlocks);
  LaunchKernel(function, blocks, kBlock);
}

void KernelWriter::NeedScratch(int64_t bytes) {
  *scratch_bytes_ = std::max(*scratch_bytes_, bytes);
}

std::string KernelWriter::Fresh(const std::string& prefix) {
  return prefix + std::to_string(fresh_++);
}

std::vector<std::string> Unravel(KernelWriter& w, const std::string& linear,
                                 const std::vector<int64_t>& dims, const std::string& prefix) {
  std::vector<std::string> index(dims.size(), "0");
  size_t first = 0;  // the outermost dim with more than one element
  while (first < dims.size() && dims[first] == 1) ++first;
  if (first == dims.size()) return index;
  std::string rest = linear;
  bool copied = false;
  for (size_t d = dims.size(); d-- > first;) {
    if (dims[d] == 1) continue;
    const std::string name = w.Fresh(prefix);
    // A caller may use only some dims (a broadcast, a gather's batch dims).
    if (d == first) {
      w.Line("[[maybe_unused]] const I " + name + " = " + rest + ";");
    } else {
      if (!copied) {
        const std::string r = w.Fresh(prefix + "r");
        w.Line("I " + r + " = " + rest + ";");
        rest = r;
        copied = true;
      }
      w.Line("[[maybe_unused]] const I " + name + " = " + rest + " % " + std::to_string(dims[d]) +
             "; " + rest + " /= " + std::to_string(dims[d]) + ";");
    }
    index[d] = name;
  }
  return index;
}

std::string Ravel(const std::vector<std::string>& index, const std::vector<int64_t>& strides) {
  std::string expr;
  for (size_t d = 0; d < index.size(); ++d) {
    if (index[d] == "0" || strides[d] == 0) continue;
    if (!expr.empty()) expr += " + ";
    expr += strides[d] == 1 ? index[d] : index[d] + " * " + std::to_string(strides[d]);
  }
  return expr.empty() ? "0" : expr;
}

std::string Literal(ir::ElementType type, uint64_t bits) {
  switch (type) {
    case ir::ElementType::kPred:
      return "static_cast<uint8_t>(" + std::to_string(bits & 0xff) + ")";
    case ir::ElementType::kS32:
      return "static_cast<int32_t>(" + Hex(bits & 0xffffffffu) + "u)";
    case ir::ElementType::kU32:
      return Hex(bits & 0xffffffffu) + "u";
    case ir::ElementType::kS64:
      return "static_cast<int64_t>(" + Hex(bits) + "ull)";
    case ir::ElementType::kU64:
      return Hex(bits) + "ull";
    case ir::ElementType::kF32:
      return "dt::F32(" + Hex(bits & 0xffffffffu) + "u)";
  }
  return "0";
}

std::string WriteProgram(KernelWriter& w, const plan::DecodedProgram& program,
                         const std::function<std::string(int32_t)>& input,
                         const std::string& reduced, const std::string& prefix,
                         const std::vector<uint8_t>* emit) {
  auto name = [&](int32_t i) { return prefix + "v" + std::to_string(i); };
  for (size_t i = 0; i < program.ops.size(); ++i) {
    if (emit != nullptr && !(*emit)[i]) continue;
    const plan::DecodedOp& d = program.ops[i];
    const std::string t = CType(d.type);
    const std::string a = name(d.args[0]), b = name(d.args[1]), c = name(d.args[2]);
    std::string value;
    switch (d.kind) {
      case pb::ScalarOp::INPUT:
        value = input(d.input);
        break;
      case pb::ScalarOp::CONSTANT:
        value = Literal(d.type, d.constant);
        break;
      case pb::ScalarOp::REDUCED:
        value = reduced;
        break;
      case pb::ScalarOp::UNARY:
        value = "sem::ApplyUnary<" + t + ">(sem::UnaryOp::" + UnaryName(d.unary) + ", " + a + ")";
        break;
      case pb::ScalarOp::BINARY:
        value = "sem::ApplyBinary<" + t + ">(sem::BinaryOp::" + BinaryName(d.binary) + ", " + a +
                ", " + b + ")";
        break;
      case pb::ScalarOp::COMPARE:
        value = std::string("sem::Compare<") + CType(d.arg_type) +
                ">(sem::Direction::" + DirectionSpelling(d.direction) + ", " + a + ", " + b +
                ") ? 1 : 0";
        break;
      case pb::ScalarOp::SELECT:
        value = a + " != 0 ? " + b + " : " + c;
        break;
      case pb::ScalarOp::CLAMP:
        value = "sem::Clamp<" + t + ">(" + a + ", " + b + ", " + c + ")";
        break;
      case pb::ScalarOp::CONVERT:
        value = "sem::ConvertElement<" + t + ", " + CType(d.arg_type) + ">(" + a + ")";
        break;
      case pb::ScalarOp::BITCAST:
        value = "sem::BitcastElement<" + t + ">(" + a + ")";
        break;
      default:
        value = "0";
        break;
    }
    w.Line("const " + t + " " + name(static_cast<int32_t>(i)) + " = " + value + ";");
  }
  return name(program.result);
}

std::string WriteCombiner(KernelWriter& w, const plan::DecodedProgram& combiner,
                          ir::ElementType type) {
  const std::string t = CType(type);
  w.BeginHelper(t, t + " a, " + t + " b");
  const std::string result = WriteProgram(
      w, combiner, [](int32_t i) { return std::string(i == 0 ? "a" : "b"); }, "", "c");
  w.Line("return " + result + ";");
  return w.EndHelper();
}

Status BadSpec(const KernelWriter& w, const std::string& what) {
  return InvalidArgument("plan: kernel " + std::to_string(w.kernel().id()) + " (" +
                         w.kernel().name() + "): " + what);
}

}  // namespace detrain::codegen::cuda::internal
