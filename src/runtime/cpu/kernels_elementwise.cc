// Elementwise kernels: a scalar program over the output's index space, in chunks of kChunk
// elements (isa_kernels.h); reduction fusions evaluate `pre` over the reduce operand's space,
// reduce it (reduce_core.h), then `program` over the output space with REDUCED reading the
// reduction. Chunks are independent, so threads and ISA paths change no bit.
#include <algorithm>
#include <cstring>
#include <optional>

#include "runtime/cpu/isa_kernels.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/reduce_core.h"

namespace detrain::runtime::cpu {
namespace {

int64_t AlignUp(int64_t n) { return (n + 63) / 64 * 64; }

// The first n entries of a column of `size`-byte elements, each `bits`.
template <typename T>
void FillTyped(uint64_t* column, uint64_t bits, int64_t n) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  T* d = reinterpret_cast<T*>(column);
  for (int64_t i = 0; i < n; ++i) d[i] = v;
}

void FillColumn(uint64_t* column, uint64_t bits, int size, int64_t n) {
  switch (size) {
    case 1:
      return FillTyped<uint8_t>(column, bits, n);
    case 2:
      return FillTyped<uint16_t>(column, bits, n);
    case 4:
      return FillTyped<uint32_t>(column, bits, n);
    default:
      return FillTyped<uint64_t>(column, bits, n);
  }
}

// A program prepared for one index space: its uniform ops (UniformOps) are evaluated once per run
// and read by every chunk as a filled column, instead of being refilled or recomputed per chunk.
class ChunkProgram {
 public:
  void Prepare(DecodedProgram p, const std::vector<int64_t>& input_elements) {
    p_ = std::move(p);
    scalar_input_.clear();
    for (int64_t e : input_elements) scalar_input_.push_back(e == 1);
    uniform_ = UniformOps(p_, input_elements);
    const size_t n = p_.ops.size();
    // A uniform op needs a column when an evaluated op or the result reads it.
    std::vector<uint8_t> needed(n, 0);
    needed[static_cast<size_t>(p_.result)] = uniform_[static_cast<size_t>(p_.result)];
    for (size_t i = 0; i < n; ++i) {
      if (uniform_[i]) continue;
      for (int32_t a : p_.ops[i].args) {
        if (uniform_[static_cast<size_t>(a)]) needed[static_cast<size_t>(a)] = 1;
      }
    }
    column_of_.assign(n, -1);
    int64_t columns = 0;
    for (size_t i = 0; i < n; ++i) {
      if (needed[i]) column_of_[i] = columns++;
    }
    values_.assign(n, 0);
    columns_.assign(static_cast<size_t>(columns * kChunk), 0);
    fixed_.assign(n, nullptr);
    scalars_.assign(static_cast<size_t>(p_.num_inputs), 0);
  }

  const DecodedProgram& program() const { return p_; }

  // Asks for this program's generated loop (fused_loops.h), when the generator can write it;
  // `output_meets_input`: the output's bytes meet an input's.
  void RequestLoop(FusedLoops& loops, bool output_meets_input) {
    if (!codegen::cpu::CanGenerate(p_)) return;
    codegen::cpu::LoopSpec spec;
    spec.program = &p_;
    spec.scalar_input = scalar_input_;
    spec.output_meets_input = output_meets_input;
    loops.Request(spec, &loop_);
    env_ = {loops.unary(), &Rule};
  }

  // Runs the program over `elements` indices into out (inputs as ChunkIo's).
  void Run(const uint8_t* const* inputs, const int64_t* input_elements, const uint8_t* reduced,
           int64_t elements, uint8_t* out, const ExecContext& ctx) const {
    Begin(inputs, input_elements, elements);
    const size_t scratch_bytes = static_cast<size_t>(ScratchBytes());
    ForBlocks(ctx, Blocks(elements), [&](int64_t block) {
      // Per thread, grown once: never reallocated in the step loop.
      thread_local std::vector<uint64_t> scratch;
      if (scratch.size() * 8 < scratch_bytes) scratch.resize(scratch_bytes / 8 + 1);
      RunBlock(inputs, input_elements, reduced, elements, out, block, ctx.isa,
               reinterpret_cast<uint8_t*>(scratch.data()));
    });
  }

  // Run in parts (FusedRunKernel): Begin once per run, then RunBlock for each block, in any
  // order and on any thread, with ScratchBytes() of 64-byte aligned scratch.
  static constexpr int64_t kChunksPerBlock = 8;
  static int64_t Blocks(int64_t elements) {
    const int64_t chunks = (elements + kChunk - 1) / kChunk;
    return (chunks + kChunksPerBlock - 1) / kChunksPerBlock;
  }
  int64_t ScratchBytes() const { return ChunkScratchBytes(p_); }

  void RunBlock(const uint8_t* const* inputs, const int64_t* input_elements, const uint8_t* reduced,
                int64_t elements, uint8_t* out, int64_t block, Isa isa, uint8_t* scratch) const {
    const IsaKernels& k = KernelsFor(isa);
    ChunkIo io{inputs, input_elements, reduced, fixed_.data()};
    if (loop_ != nullptr) {  // the generated loop, the evaluator for the blocks it leaves
      const int64_t begin = block * kChunksPerBlock * kChunk;
      RuleContext rc{this, &k, &io, out, scratch, isa};
      loop_(inputs, out, begin, std::min(elements, begin + kChunksPerBlock * kChunk), &env_, &rc);
      return;
    }
    const int64_t chunks = (elements + kChunk - 1) / kChunk;
    const int64_t c1 = std::min(chunks, (block + 1) * kChunksPerBlock);
    for (int64_t c = block * kChunksPerBlock; c < c1; ++c) {
      const int64_t start = c * kChunk;
      k.eval_chunk(p_, io, start, std::min(kChunk, elements - start), out, scratch, isa);
    }
  }

  // The uniform ops of this run: scalar inputs read, evaluated, their columns filled.
  void Begin(const uint8_t* const* inputs, const int64_t* input_elements, int64_t elements) const {
    for (size_t i = 0; i < scalars_.size(); ++i) {
      if (input_elements[i] != 1) continue;
      const int size = ir::ElementTypeByteSize(InputType(static_cast<int32_t>(i)));
      std::memcpy(&scalars_[i], inputs[i], static_cast<size_t>(size));
    }
    EvalUniform(p_, uniform_, scalars_.data(), values_.data());
    // A chunk reads at most `elements` entries of a column (vector paths may load up to a whole
    // vector past the last, whose lanes they discard): a small index space fills only those.
    const int64_t filled = std::min(kChunk, (elements + 63) / 64 * 64);
    for (size_t i = 0; i < p_.ops.size(); ++i) {
      if (column_of_[i] < 0) continue;
      uint64_t* column = columns_.data() + column_of_[i] * kChunk;
      FillColumn(column, values_[i], ir::ElementTypeByteSize(p_.ops[i].type), filled);
      fixed_[i] = reinterpret_cast<const uint8_t*>(column);
    }
  }

 private:
  // What a generated loop's `rule` needs: the evaluator, over indices of one chunk or more.
  struct RuleContext {
    const ChunkProgram* self;
    const IsaKernels* kernels;
    const ChunkIo* io;
    uint8_t* out;
    uint8_t* scratch;
    Isa isa;
  };
  static void Rule(void* ctx, int64_t begin, int64_t n) {
    const RuleContext& rc = *static_cast<const RuleContext*>(ctx);
    for (int64_t start = begin; start < begin + n;) {
      const int64_t count = std::min(begin + n, (start / kChunk + 1) * kChunk) - start;
      rc.kernels->eval_chunk(rc.self->p_, *rc.io, start, count, rc.out, rc.scratch, rc.isa);
      start += count;
    }
  }

  ir::ElementType InputType(int32_t input) const {
    for (const DecodedOp& d : p_.ops) {
      if (d.kind == plan::v2::ScalarOp::INPUT && d.input == input) return d.type;
    }
    return ir::ElementType::kPred;  // an input the program never reads: its bits do not matter
  }

  DecodedProgram p_;
  std::vector<bool> scalar_input_;  // per input: one element
  LoopFn loop_ = nullptr;           // the generated loop, once FusedLoops::Build filled it
  DtLoopEnv env_{};
  std::vector<uint8_t> uniform_;
  std::vector<int64_t> column_of_;  // per op: its column in columns_, or -1
  // Per-run state (Run is called from one thread at a time per kernel), sized at Prepare.
  mutable std::vector<uint64_t> values_, scalars_, columns_;
  mutable std::vector<const uint8_t*> fixed_;
};

class ElementwiseKernel : public CpuKernel, public BlockedKernel {
 public:
  BlockedKernel* AsBlocked() override { return reduce_ ? nullptr : this; }
  int64_t Elements() const override { return out_.elements; }
  int64_t Blocks() const override { return ChunkProgram::Blocks(out_.elements); }
  int64_t BlockScratchBytes() const override { return program_.ScratchBytes(); }
  const std::vector<ArrayRef>& Inputs() const override { return in_; }
  const ArrayRef& Output() const override { return out_; }
  void Begin(uint8_t* arena) const override {
    SetInputs(arena);
    program_.Begin(inputs_.data(), input_elements_.data(), out_.elements);
  }
  void RunBlock(uint8_t* arena, int64_t block, Isa isa, uint8_t* scratch) const override {
    program_.RunBlock(inputs_.data(), input_elements_.data(), nullptr, out_.elements,
                      arena + out_.offset, block, isa, scratch);
  }

  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    SetInputs(arena);
    const uint8_t* reduced = nullptr;
    if (reduce_) {
      std::vector<uint8_t> fallback;  // only when run without a device's scratch
      uint8_t* scratch = ctx.scratch;
      if (ctx.scratch_bytes < ScratchBytes()) {
        fallback.resize(static_cast<size_t>(ScratchBytes()));
        scratch = fallback.data();
      }
      uint8_t* pre_values = scratch;
      uint8_t* reduced_values = scratch + AlignUp(reduce_->operand_elements() * type_size_);
      pre_.Run(inputs_.data(), input_elements_.data(), nullptr, reduce_->operand_elements(),
               pre_values, ctx);
      for (size_t i = 0; i < in_.size(); ++i) {
        if (in_[i].elements >= 1)
          std::memcpy(&scalars_[i], inputs_[i],
                      static_cast<size_t>(ir::ElementTypeByteSize(in_[i].type)));
      }
      uint64_t init = EvalScalar(init_, scalars_.data());
      reduce_->Run(pre_values, init, reduced_values, ctx);
      reduced = reduced_values;
    }
    program_.Run(inputs_.data(), input_elements_.data(), reduced, out_.elements,
                 arena + out_.offset, ctx);
    return Status::Ok();
  }

  bool ReadInputAsScalar(size_t input, bool apply, const uint8_t* at) override {
    if (input >= in_.size()) return false;
    if (!apply) return true;
    // Read from `at`: no longer a range of the arena (an empty one, which meets nothing).
    ArrayRef& a = in_[input];
    a.elements = 1;
    a.bytes = 0;
    a.dims.clear();
    input_elements_[input] = 1;
    outside_[input] = at;
    // Ops that now read only scalars are evaluated once per run (ChunkProgram's uniform ops).
    if (reduce_) pre_.Prepare(pre_.program(), input_elements_);
    program_.Prepare(program_.program(), input_elements_);
    return true;
  }

  void RequestLoops(FusedLoops& loops) override {
    if (reduce_) {
      // A fused reduction: `pre`, over the operand's space, writes scratch (never an input); the
      // program after the reduction reads REDUCED, which the generator does not write, and runs
      // over the (smaller) output space: the evaluator's.
      pre_.RequestLoop(loops, /*output_meets_input=*/false);
      return;
    }
    bool meets = false;
    for (size_t i = 0; i < in_.size(); ++i) {
      const ArrayRef& a = in_[i];
      if (outside_[i] == nullptr && a.bytes > 0 && out_.bytes > 0 &&
          a.offset < out_.offset + out_.bytes && out_.offset < a.offset + a.bytes)
        meets = true;
    }
    program_.RequestLoop(loops, meets);
  }

  int64_t ScratchBytes() const override {
    if (!reduce_) return 0;
    return AlignUp(reduce_->operand_elements() * type_size_) +
           AlignUp(reduce_->output_elements() * type_size_);
  }

  void SetInputs(uint8_t* arena) const {
    for (size_t i = 0; i < in_.size(); ++i)
      inputs_[i] = outside_[i] != nullptr ? outside_[i] : arena + in_[i].offset;
  }

  std::vector<ArrayRef> in_;
  std::vector<const uint8_t*> outside_;  // per input: where a folded broadcast's scalar is, or null
  std::vector<int64_t> input_elements_;
  ArrayRef out_;
  ChunkProgram program_, pre_;
  DecodedProgram init_;
  std::optional<ReduceCore> reduce_;
  int64_t type_size_ = 0;
  mutable std::vector<const uint8_t*> inputs_;
  mutable std::vector<uint64_t> scalars_;
};

}  // namespace

Result<std::unique_ptr<CpuKernel>> MakeElementwise(const plan::CheckedKernel& k) {
  auto kernel = std::make_unique<ElementwiseKernel>();
  for (const ArrayRef& a : k.in) kernel->input_elements_.push_back(a.elements);
  const plan::v2::ElementwiseSpec& spec = k.spec->elementwise();
  if (spec.has_reduce()) {
    const ir::ElementType rtype = k.pre.ops[static_cast<size_t>(k.pre.result)].type;
    kernel->reduce_ = ReduceCore::Make(spec.reduce(), rtype, k.combiner);
    kernel->type_size_ = ir::ElementTypeByteSize(rtype);
    kernel->init_ = k.init;
    kernel->pre_.Prepare(k.pre, kernel->input_elements_);
  }
  kernel->program_.Prepare(k.program, kernel->input_elements_);
  kernel->inputs_.assign(k.in.size(), nullptr);
  kernel->outside_.assign(k.in.size(), nullptr);
  kernel->scalars_.assign(k.in.size(), 0);
  kernel->in_ = k.in;
  kernel->out_ = k.out[0];
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

}  // namespace detrain::runtime::cpu
