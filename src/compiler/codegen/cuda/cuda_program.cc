// See cuda_program.h. Every kernel of the validated plan goes to the emitter of its spec
// (emit_*.cc) in schedule order, and the header —
// format line, device headers with their digests, the launch plan — is written last above the
// functions, since the launch plan is known only then.
#include "compiler/codegen/cuda/cuda_program.h"

#include "attest/sha256.h"
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

// The state digest's kernels (cuda_program.h kDigestLeaves, kDigestTensors).
constexpr char kDigestKernels[] = R"(
// The chunked state digest (attest/state_digest.h, policy xxh3-128-chunked): items of
// (source offset, bytes, scratch offset), each XXH3-128 of its bytes to 16 canonical bytes.
namespace dt {
__device__ __forceinline__ void DigestItems(const unsigned char* source, unsigned char* scratch,
                                            const long long* args) {
  const long long n = args[0];
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long* item = args + 1 + 3 * i;
    namespace x = detrain::attest::xxh3;
    x::Canonical(x::Hash(source + item[0], static_cast<uint64_t>(item[1])), scratch + item[2]);
  }
}
}  // namespace dt
extern "C" __global__ void __launch_bounds__(64) dt_digest_leaves(unsigned char* arena,
    unsigned char* scratch, const long long* args) {
  dt::DigestItems(arena, scratch, args);
}
extern "C" __global__ void __launch_bounds__(64) dt_digest_tensors(unsigned char* arena,
    unsigned char* scratch, const long long* args) {
  dt::DigestItems(scratch, scratch, args);
}
)";

Status EmitKernel(KernelWriter& w) {
  const pb::Kernel& k = w.kernel();
  if (k.has_threefry()) return internal::EmitThreefry(w);
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

Status GenerateKernels(const plan::ValidatedPlan& plan, int64_t base, internal::ProgramText* body,
                       CudaProgram* program, std::vector<std::vector<Launch>>* launches);

// The copies of `from` to `to`, array by array (the reader checked they are the same arrays),
// `from` at `from_base` and `to` at `to_base` of the device's arena.
void AddCopies(const std::vector<Array>& from, int64_t from_base, const std::vector<Array>& to,
               int64_t to_base, std::vector<Launch>* out) {
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i].bytes == 0) continue;
    Launch l;
    l.kind = Launch::Kind::kCopy;
    l.src = from_base + from[i].offset;
    l.dst = to_base + to[i].offset;
    l.bytes = from[i].bytes;
    out->push_back(std::move(l));
  }
}

// The arrays `ids` names among `plan`'s buffers.
std::vector<Array> Pick(const plan::ValidatedPlan& plan,
                        const google::protobuf::RepeatedField<int32_t>& ids) {
  std::vector<Array> out;
  for (int32_t id : ids) out.push_back(plan.buffer(id));
  return out;
}

// A while kernel: the copies of the initial state to the state, then a kLoop step whose
// condition and body are the sub-plans' launches at base + region.
Status EmitWhile(const plan::CheckedKernel& k, int64_t base, internal::ProgramText* text,
                 CudaProgram* program, std::vector<Launch>* out) {
  const int64_t region = base + k.spec->while_loop().region();
  AddCopies(k.in, base, k.out, base, out);
  const size_t index = program->loops.size();
  program->loops.emplace_back();
  Loop loop;
  loop.name = k.name();
  for (const plan::ValidatedPlan* sub : {k.condition.get(), k.body.get()}) {
    const bool is_body = sub == k.body.get();
    std::vector<Launch>& steps = is_body ? loop.body : loop.condition;
    AddCopies(k.out, base, Pick(*sub, sub->proto().parameters(0).buffers()), region, &steps);
    std::vector<std::vector<Launch>> launches;
    DETRAIN_RETURN_IF_ERROR(GenerateKernels(*sub, region, text, program, &launches));
    for (auto& kernel : launches) {
      for (Launch& l : kernel) steps.push_back(std::move(l));
    }
    const std::vector<Array> results = Pick(*sub, sub->proto().outputs());
    if (is_body) {
      AddCopies(results, region, k.out, base, &steps);
    } else {
      loop.predicate = region + results[0].offset;
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
Status GenerateKernels(const plan::ValidatedPlan& plan, int64_t base, internal::ProgramText* body,
                       CudaProgram* program, std::vector<std::vector<Launch>>* launches) {
  launches->resize(plan.kernels().size());
  for (const plan::CheckedKernel& k : plan.kernels()) {
    std::vector<Launch>& steps = (*launches)[static_cast<size_t>(k.id())];
    // Aliases do no work; an all-reduce runs across devices (the runtime's, docs/cuda.md).
    if (k.spec->has_alias() || k.spec->has_all_reduce()) continue;
    if (k.spec->has_while_loop()) {
      DETRAIN_RETURN_IF_ERROR(EmitWhile(k, base, body, program, &steps));
      continue;
    }
    KernelWriter w(k, base, body, &steps, &program->scratch_bytes);
    DETRAIN_RETURN_IF_ERROR(EmitKernel(w));
  }
  return Status::Ok();
}

}  // namespace

Result<CudaProgram> GenerateCuda(std::string_view plan_bytes) {
  DETRAIN_ASSIGN_OR_RETURN(plan::ValidatedPlan plan, plan::ReadPlan(plan_bytes));
  return GenerateCuda(plan);
}

Result<CudaProgram> GenerateCuda(const plan::ValidatedPlan& validated) {
  const pb::Plan& plan = validated.proto();
  CudaProgram program;
  internal::ProgramText body;
  DETRAIN_RETURN_IF_ERROR(GenerateKernels(validated, 0, &body, &program, &program.launches));
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
  text += "#include \"attest/xxh3_block.h\"\n";
  text += "#include \"compiler/semantics/semantics.h\"\n\n";
  text += kPrelude;
  text += body.body;
  text += kDigestKernels;
  return program;
}

}  // namespace detrain::codegen::cuda
