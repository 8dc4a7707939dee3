// Elementwise kernels: a scalar program over the output's index space, in chunks of kChunk
// elements (isa_kernels.h); reduction fusions evaluate `pre` over the reduce operand's space,
// reduce it (reduce_core.h), then `program` over the output space with REDUCED reading the
// reduction. Chunks are independent, so threads and ISA paths change no bit.
#include <cstring>

#include "runtime/cpu/checked.h"
#include "runtime/cpu/isa_kernels.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/reduce_core.h"

namespace detrain::runtime::cpu {
namespace {

// Runs a program over `elements` indices into out.
void RunProgram(const DecodedProgram& p, const std::vector<const uint8_t*>& inputs,
                const std::vector<int64_t>& input_elements, const uint8_t* reduced,
                int64_t elements, uint8_t* out, const ExecContext& ctx) {
  const IsaKernels& k = KernelsFor(ctx.isa);
  ChunkIo io{inputs.data(), input_elements.data(), reduced};
  const int64_t chunks = (elements + kChunk - 1) / kChunk;
  constexpr int64_t kChunksPerBlock = 8;
  const int64_t blocks = (chunks + kChunksPerBlock - 1) / kChunksPerBlock;
  const size_t scratch_bytes = static_cast<size_t>(ChunkScratchBytes(p));
  ForBlocks(ctx, blocks, [&](int64_t block) {
    thread_local std::vector<uint64_t> scratch;
    if (scratch.size() * 8 < scratch_bytes) scratch.resize(scratch_bytes / 8 + 1);
    for (int64_t c = block * kChunksPerBlock; c < std::min(chunks, (block + 1) * kChunksPerBlock);
         ++c) {
      int64_t start = c * kChunk;
      k.eval_chunk(p, io, start, std::min(kChunk, elements - start), out,
                   reinterpret_cast<uint8_t*>(scratch.data()), ctx.isa);
    }
  });
}

class ElementwiseKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    std::vector<const uint8_t*> inputs;
    for (const ArrayRef& a : in_) inputs.push_back(arena + a.offset);
    const uint8_t* reduced = nullptr;
    std::vector<uint8_t> pre_values, reduced_values;
    if (reduce_) {
      pre_values.resize(static_cast<size_t>(reduce_->operand_elements() * type_size_));
      RunProgram(pre_, inputs, input_elements_, nullptr, reduce_->operand_elements(),
                 pre_values.data(), ctx);
      std::vector<uint64_t> scalars(in_.size(), 0);
      for (size_t i = 0; i < in_.size(); ++i) {
        if (in_[i].elements >= 1)
          std::memcpy(&scalars[i], inputs[i], static_cast<size_t>(in_[i].bytes / in_[i].elements));
      }
      uint64_t init = EvalScalar(init_, scalars.data());
      reduced_values.resize(static_cast<size_t>(reduce_->output_elements() * type_size_));
      reduce_->Run(pre_values.data(), init, reduced_values.data(), ctx);
      reduced = reduced_values.data();
    }
    RunProgram(program_, inputs, input_elements_, reduced, out_.elements, arena + out_.offset, ctx);
    return Status::Ok();
  }

  std::vector<ArrayRef> in_;
  std::vector<int64_t> input_elements_;
  ArrayRef out_;
  DecodedProgram program_, pre_, init_;
  std::optional<ReduceCore> reduce_;
  int64_t type_size_ = 0;
};

// Every INPUT of `p` must hold `space` elements or be a scalar.
Status CheckInputs(const plan::v2::Kernel& k, const DecodedProgram& p,
                   const std::vector<ArrayRef>& in, int64_t space) {
  for (const DecodedOp& op : p.ops) {
    if (op.kind != plan::v2::ScalarOp::INPUT) continue;
    int64_t n = in[static_cast<size_t>(op.input)].elements;
    if (n != 1 && n != space) {
      return InvalidArgument("plan: kernel " + k.name() + ": input " + std::to_string(op.input) +
                             " has " + std::to_string(n) + " elements, its index space " +
                             std::to_string(space));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<CpuKernel>> MakeElementwise(const plan::v2::Kernel& k,
                                                   std::vector<ArrayRef> in, ArrayRef out) {
  auto kernel = std::make_unique<ElementwiseKernel>();
  std::vector<ir::ElementType> types;
  for (const ArrayRef& a : in) {
    types.push_back(a.type);
    kernel->input_elements_.push_back(a.elements);
  }
  const plan::v2::ElementwiseSpec& spec = k.elementwise();
  int64_t space = out.elements;
  if (spec.has_reduce()) {
    if (spec.pre().ops_size() == 0)
      return InvalidArgument("plan: a reduction fusion without its pre program");
    DETRAIN_ASSIGN_OR_RETURN(kernel->pre_, DecodeProgram(spec.pre(), types));
    DETRAIN_ASSIGN_OR_RETURN(kernel->init_, DecodeProgram(spec.init(), types));
    ir::ElementType rtype = kernel->pre_.ops[static_cast<size_t>(kernel->pre_.result)].type;
    if (kernel->init_.ops[static_cast<size_t>(kernel->init_.result)].type != rtype) {
      return InvalidArgument("plan: reduction init of the wrong type");
    }
    DETRAIN_ASSIGN_OR_RETURN(ReduceCore core, ReduceCore::Make(spec.reduce(), rtype));
    if (core.output_elements() != out.elements)
      return InvalidArgument("plan: reduction fusion output size mismatch");
    DETRAIN_ASSIGN_OR_RETURN(kernel->program_, DecodeProgram(spec.program(), types, true, rtype));
    kernel->type_size_ = ir::ElementTypeByteSize(rtype);
    space = core.operand_elements();
    kernel->reduce_ = std::move(core);
    DETRAIN_RETURN_IF_ERROR(CheckInputs(k, kernel->pre_, in, space));
    for (const DecodedOp& op : kernel->init_.ops) {
      if (op.kind == plan::v2::ScalarOp::INPUT && in[static_cast<size_t>(op.input)].elements < 1) {
        return InvalidArgument("plan: kernel " + k.name() + ": an empty reduction init");
      }
    }
  } else {
    DETRAIN_ASSIGN_OR_RETURN(kernel->program_, DecodeProgram(spec.program(), types));
  }
  DETRAIN_RETURN_IF_ERROR(CheckInputs(k, kernel->program_, in, out.elements));
  if (kernel->program_.ops[static_cast<size_t>(kernel->program_.result)].type != out.type) {
    return InvalidArgument("plan: kernel " + k.name() +
                           ": the program's result type is not the output's");
  }
  kernel->in_ = std::move(in);
  kernel->out_ = out;
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

}  // namespace detrain::runtime::cpu
