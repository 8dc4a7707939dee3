// See cuda_program.h. The plan's buffers are checked (inside the arena, sized by their dims),
// every kernel goes to the emitter of its spec (emit_*.cc) in schedule order, and the header —
// format line, device headers with their digests, the launch plan — is written last above the
// functions, since the launch plan is known only then.
#include "compiler/codegen/cuda/cuda_program.h"

#include "attest/sha256.h"
#include "base/checked.h"
#include "compiler/codegen/common/kernel_spec.h"
#include "compiler/codegen/cuda/writer.h"

namespace detrain::codegen::cuda {
namespace {

namespace pb = plan::v2;
using internal::Array;
using internal::KernelWriter;

// Helpers every kernel may use, after the device headers.
constexpr char kPrelude[] = R"(namespace sem = detrain::semantics;

namespace dt {
__device__ __forceinline__ float F32(uint32_t bits) { return sem::BitsFloat(bits); }
// An index operand's value as the interpreter reads it: u64 above INT64_MAX saturates.
template <typename T>
__device__ __forceinline__ long long IndexValue(T v) { return static_cast<long long>(v); }
template <>
__device__ __forceinline__ long long IndexValue<uint64_t>(uint64_t v) {
  return v > 9223372036854775807ull ? 9223372036854775807ll : static_cast<long long>(v);
}
__device__ __forceinline__ long long Clamp(long long x, long long lo, long long hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}
}  // namespace dt
)";

Result<std::vector<Array>> CheckedArrays(const pb::Plan& plan) {
  std::vector<Array> arrays;
  for (int i = 0; i < plan.buffers_size(); ++i) {
    const pb::Buffer& b = plan.buffers(i);
    Array a;
    a.id = i;
    DETRAIN_ASSIGN_OR_RETURN(a.type, FromPlanType(b.type()));
    a.dims.assign(b.dims().begin(), b.dims().end());
    a.offset = b.offset();
    int64_t elements = 1;
    for (int64_t d : a.dims) {
      if (d < 0 || !CheckedMul(elements, d, &elements))
        return InvalidArgument("plan: buffer " + std::to_string(i) + " has bad dimensions");
    }
    a.elements = elements;
    int64_t bytes = 0;
    if (!CheckedMul(elements, int64_t{ir::ElementTypeByteSize(a.type)}, &bytes) ||
        bytes != b.size() || a.offset < 0 || a.offset > plan.arena_bytes() ||
        bytes > plan.arena_bytes() - a.offset) {
      return InvalidArgument("plan: buffer " + std::to_string(i) + " does not fit the arena");
    }
    a.bytes = bytes;
    arrays.push_back(std::move(a));
  }
  return arrays;
}

Status EmitKernel(KernelWriter& w) {
  const pb::Kernel& k = w.kernel();
  if (k.has_threefry()) return internal::EmitThreefry(w);
  if (w.out().size() != 1) return internal::BadSpec(w, "expected one result array");
  switch (k.spec_case()) {
    case pb::Kernel::kElementwise:
      return internal::EmitElementwise(w);
    case pb::Kernel::kDot:
      return internal::EmitDot(w);
    case pb::Kernel::kConvolution:
      return internal::EmitConvolution(w);
    case pb::Kernel::kReduce:
      return internal::EmitReduce(w);
    case pb::Kernel::kReduceWindow:
      return internal::EmitReduceWindow(w);
    case pb::Kernel::kGather:
      return internal::EmitGather(w);
    case pb::Kernel::kScatter:
      return internal::EmitScatter(w);
    case pb::Kernel::kConstant:
    case pb::Kernel::kIota:
    case pb::Kernel::kTranspose:
    case pb::Kernel::kBroadcast:
    case pb::Kernel::kCopy:
    case pb::Kernel::kSlice:
    case pb::Kernel::kReverse:
    case pb::Kernel::kConcatenate:
    case pb::Kernel::kPad:
    case pb::Kernel::kDynamicSlice:
    case pb::Kernel::kDynamicUpdateSlice:
      return internal::EmitMovement(w);
    default:
      return Unimplemented("plan: kernel " + std::to_string(k.id()) + " (" + k.name() +
                           "): no CUDA code for this spec");
  }
}

std::string LaunchText(const std::vector<Launch>& launches) {
  if (launches.empty()) return " -";
  std::string line;
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = launches[i];
    line += i == 0 ? " " : "; ";
    switch (l.kind) {
      case Launch::Kind::kKernel:
        line += l.function + "(";
        for (size_t a = 0; a < l.args.size(); ++a)
          line += (a == 0 ? "" : ", ") + std::to_string(l.args[a]);
        line += ") grid " + std::to_string(l.grid[0]) + " " + std::to_string(l.grid[1]) + " " +
                std::to_string(l.grid[2]) + " block " + std::to_string(l.block);
        break;
      case Launch::Kind::kCopy:
        line += "copy " + std::to_string(l.bytes) + " bytes " + std::to_string(l.src) + " -> " +
                std::to_string(l.dst);
        break;
      case Launch::Kind::kConstant:
        line += "constant " + std::to_string(l.bytes) + " bytes -> " + std::to_string(l.dst);
        break;
      case Launch::Kind::kLoop:
        line += "loop " + std::to_string(l.loop);
        break;
    }
  }
  return line;
}

Status GenerateKernels(const pb::Plan& plan, int64_t base, int depth, internal::ProgramText* body,
                       CudaProgram* program, std::vector<std::vector<Launch>>* launches);

// The copies of `from` to `to`, array by array (checked to be the same arrays).
Status AddCopies(const pb::Kernel& k, const std::vector<Array>& from, const std::vector<Array>& to,
                 std::vector<Launch>* out) {
  if (from.size() != to.size())
    return InvalidArgument("plan: kernel " + k.name() + ": its loop's state does not match");
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i].type != to[i].type || from[i].dims != to[i].dims)
      return InvalidArgument("plan: kernel " + k.name() + ": its loop's state does not match");
    if (from[i].bytes == 0) continue;
    Launch l;
    l.kind = Launch::Kind::kCopy;
    l.src = from[i].offset;
    l.dst = to[i].offset;
    l.bytes = from[i].bytes;
    out->push_back(std::move(l));
  }
  return Status::Ok();
}

// The arrays `ids` name in a sub-plan's `arrays`.
Result<std::vector<Array>> Pick(const pb::Kernel& k, const std::vector<Array>& arrays,
                                const google::protobuf::RepeatedField<int32_t>& ids) {
  std::vector<Array> out;
  for (int32_t id : ids) {
    if (id < 0 || id >= static_cast<int32_t>(arrays.size()))
      return InvalidArgument("plan: kernel " + k.name() + " names a missing buffer");
    out.push_back(arrays[static_cast<size_t>(id)]);
  }
  return out;
}

// A while kernel: the copies of the initial state to the state, then a kLoop step whose
// condition and body are the sub-plans' launches at base + region.
Status EmitWhile(const pb::Kernel& k, const pb::Plan& plan, const std::vector<Array>& init,
                 const std::vector<Array>& state, int64_t base, int depth,
                 internal::ProgramText* text, CudaProgram* program, std::vector<Launch>* out) {
  if (depth >= kMaxLoopNesting) {
    return InvalidArgument("plan: kernel " + k.name() + ": loops nested more than " +
                           std::to_string(kMaxLoopNesting) + " deep");
  }
  const pb::WhileSpec& w = k.while_loop();
  for (const pb::Plan* sub : {&w.condition(), &w.body()}) {
    if (w.region() < 0 || w.region() > plan.arena_bytes() || sub->arena_bytes() < 0 ||
        sub->arena_bytes() > plan.arena_bytes() - w.region() || sub->parameters_size() != 1) {
      return InvalidArgument("plan: kernel " + k.name() + ": its loop's plans do not fit");
    }
    if (sub->replicated()) return InvalidArgument("plan: kernel " + k.name() + ": all-reduce");
  }
  const int64_t region = base + w.region();
  DETRAIN_RETURN_IF_ERROR(AddCopies(k, init, state, out));
  const size_t index = program->loops.size();
  program->loops.emplace_back();
  Loop loop;
  loop.name = k.name();
  for (const pb::Plan* sub : {&w.condition(), &w.body()}) {
    const bool is_body = sub == &w.body();
    DETRAIN_ASSIGN_OR_RETURN(std::vector<Array> arrays, CheckedArrays(*sub));
    for (Array& a : arrays) a.offset += region;
    DETRAIN_ASSIGN_OR_RETURN(std::vector<Array> params,
                             Pick(k, arrays, sub->parameters(0).buffers()));
    DETRAIN_ASSIGN_OR_RETURN(std::vector<Array> results, Pick(k, arrays, sub->outputs()));
    std::vector<Launch>& steps = is_body ? loop.body : loop.condition;
    DETRAIN_RETURN_IF_ERROR(AddCopies(k, state, params, &steps));
    std::vector<std::vector<Launch>> launches;
    DETRAIN_RETURN_IF_ERROR(GenerateKernels(*sub, region, depth + 1, text, program, &launches));
    for (auto& kernel : launches) {
      for (Launch& l : kernel) steps.push_back(std::move(l));
    }
    if (is_body) {
      DETRAIN_RETURN_IF_ERROR(AddCopies(k, results, state, &steps));
    } else {
      if (results.size() != 1 || results[0].type != ir::ElementType::kPred ||
          results[0].elements != 1) {
        return InvalidArgument("plan: kernel " + k.name() + ": its condition is not one pred");
      }
      loop.predicate = results[0].offset;
    }
  }
  program->loops[index] = std::move(loop);
  Launch l;
  l.kind = Launch::Kind::kLoop;
  l.loop = static_cast<int32_t>(index);
  out->push_back(std::move(l));
  return Status::Ok();
}

// Every kernel of `plan`, its buffers at `base` of the device's arena (0 for the whole plan; a
// loop's sub-plans at their region), in schedule order: launches[i] gets kernel i's steps.
Status GenerateKernels(const pb::Plan& plan, int64_t base, int depth, internal::ProgramText* body,
                       CudaProgram* program, std::vector<std::vector<Launch>>* launches) {
  DETRAIN_ASSIGN_OR_RETURN(std::vector<Array> arrays, CheckedArrays(plan));
  for (Array& a : arrays) a.offset += base;
  launches->resize(static_cast<size_t>(plan.kernels_size()));
  for (int i = 0; i < plan.kernels_size(); ++i) {
    const pb::Kernel& k = plan.kernels(i);
    if (k.id() != i)
      return InvalidArgument("plan: kernel ids out of order at " + std::to_string(i));
    if (k.has_alias()) continue;
    if (k.has_all_reduce()) {
      if (depth > 0) return InvalidArgument("plan: kernel " + k.name() + ": all-reduce in a loop");
      continue;  // across devices: the runtime's (docs/cuda.md)
    }
    std::vector<Array> in, out;
    for (const pb::Operand& op : k.operands()) {
      if (op.buffers_size() != 1 && !k.has_while_loop())
        return InvalidArgument("plan: kernel " + k.name() + ": an operand that is not one array");
      DETRAIN_ASSIGN_OR_RETURN(std::vector<Array> leaves, Pick(k, arrays, op.buffers()));
      in.insert(in.end(), leaves.begin(), leaves.end());
    }
    DETRAIN_ASSIGN_OR_RETURN(out, Pick(k, arrays, k.outputs()));
    std::vector<Launch>& steps = (*launches)[static_cast<size_t>(i)];
    if (k.has_while_loop()) {
      if (k.operands_size() != 1)
        return InvalidArgument("plan: kernel " + k.name() + ": expected one operand");
      DETRAIN_RETURN_IF_ERROR(EmitWhile(k, plan, in, out, base, depth, body, program, &steps));
      continue;
    }
    KernelWriter w(k, std::move(in), std::move(out), body, &steps, &program->scratch_bytes);
    DETRAIN_RETURN_IF_ERROR(EmitKernel(w));
  }
  return Status::Ok();
}

}  // namespace

Result<CudaProgram> GenerateCuda(std::string_view plan_bytes) {
  pb::Plan plan;
  if (plan_bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !plan.ParseFromArray(plan_bytes.data(), static_cast<int>(plan_bytes.size()))) {
    return InvalidArgument("not a serialized detrain.plan.v2.Plan (" +
                           std::to_string(plan_bytes.size()) + " bytes)");
  }
  return GenerateCuda(plan);
}

Result<CudaProgram> GenerateCuda(const pb::Plan& plan) {
  CudaProgram program;
  internal::ProgramText body;
  DETRAIN_RETURN_IF_ERROR(GenerateKernels(plan, 0, 0, &body, &program, &program.launches));
  std::string& text = program.source;
  text = "// detrain CUDA source v" + std::to_string(kCudaSourceVersion) + ": stage 4 of module " +
         plan.module_name() + " (opt-hlo sha256 " + plan.module_sha256() + ").\n";
  text +=
      "// Generated from the executable plan by detrain's CUDA code generator (docs/cuda.md);\n"
      "// compile with --fmad=false, no flush-to-zero, IEEE division and square root.\n"
      "// Device headers (detrain's own, embedded in detrain; part of this stage):\n";
  for (const DeviceHeader& h : DeviceHeaders()) {
    text += "//   " + std::string(h.path) + " sha256 " + attest::Sha256Hex(h.bytes) + "\n";
  }
  text += "// Arena " + std::to_string(plan.arena_bytes()) + " bytes, scratch " +
          std::to_string(program.scratch_bytes) +
          " bytes. Launch plan, per plan kernel in schedule order (offsets in the arena):\n";
  for (int i = 0; i < plan.kernels_size(); ++i) {
    const pb::Kernel& k = plan.kernels(i);
    text += "//   " + std::to_string(k.id()) + " " + k.name() + ":" +
            LaunchText(program.launches[static_cast<size_t>(i)]) + "\n";
  }
  for (size_t i = 0; i < program.loops.size(); ++i) {
    const Loop& loop = program.loops[i];
    text += "//   loop " + std::to_string(i) + " (" + loop.name +
            ") condition:" + LaunchText(loop.condition) + "\n";
    text += "//   loop " + std::to_string(i) + " predicate at " + std::to_string(loop.predicate) +
            ", body:" + LaunchText(loop.body) + "\n";
  }
  text += "\n#include \"attest/prng/threefry_block.h\"\n";
  text += "#include \"compiler/semantics/semantics.h\"\n\n";
  text += kPrelude;
  text += body.body;
  return program;
}

}  // namespace detrain::codegen::cuda
