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

std::string LaunchLine(const pb::Kernel& k, const std::vector<Launch>& launches) {
  std::string line = "//   " + std::to_string(k.id()) + " " + k.name() + ":";
  if (launches.empty()) return line + " -";
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
    }
  }
  return line;
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
  DETRAIN_ASSIGN_OR_RETURN(std::vector<Array> arrays, CheckedArrays(plan));
  CudaProgram program;
  program.launches.resize(static_cast<size_t>(plan.kernels_size()));
  internal::ProgramText body;
  for (int i = 0; i < plan.kernels_size(); ++i) {
    const pb::Kernel& k = plan.kernels(i);
    if (k.id() != i)
      return InvalidArgument("plan: kernel ids out of order at " + std::to_string(i));
    if (k.has_alias()) continue;
    if (k.has_all_reduce()) continue;  // across devices: the runtime's (docs/cuda.md)
    auto arrays_of = [&](const auto& ids, std::vector<Array>* out) -> Status {
      for (int32_t id : ids) {
        if (id < 0 || id >= static_cast<int32_t>(arrays.size()))
          return InvalidArgument("plan: kernel " + k.name() + " names a missing buffer");
        out->push_back(arrays[static_cast<size_t>(id)]);
      }
      return Status::Ok();
    };
    std::vector<Array> in, out;
    for (const pb::Operand& op : k.operands()) {
      if (op.buffers_size() != 1)
        return InvalidArgument("plan: kernel " + k.name() + ": an operand that is not one array");
      DETRAIN_RETURN_IF_ERROR(arrays_of(op.buffers(), &in));
    }
    DETRAIN_RETURN_IF_ERROR(arrays_of(k.outputs(), &out));
    KernelWriter w(k, std::move(in), std::move(out), &body,
                   &program.launches[static_cast<size_t>(i)], &program.scratch_bytes);
    DETRAIN_RETURN_IF_ERROR(EmitKernel(w));
  }
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
  for (int i = 0; i < plan.kernels_size(); ++i)
    text += LaunchLine(plan.kernels(i), program.launches[static_cast<size_t>(i)]) + "\n";
  text += "\n#include \"attest/prng/threefry_block.h\"\n";
  text += "#include \"compiler/semantics/semantics.h\"\n\n";
  text += kPrelude;
  text += body.body;
  return program;
}

}  // namespace detrain::codegen::cuda
