// Small IR-building helpers shared by lowering, autodiff and the optimizers: constants of a
// shape, broadcasting, reductions with cached combiners, and JAX's threefry-based random bits.
//
// Thread safety: an Emitter wraps one Builder; one thread.
#ifndef DETRAIN_FRONTEND_EMIT_H_
#define DETRAIN_FRONTEND_EMIT_H_

#include <map>
#include <vector>

#include "compiler/ir/builder.h"

namespace detrain::frontend {

class Emitter {
 public:
  Emitter(ir::Module* module, ir::Builder* builder) : module_(module), b_(builder) {}

  ir::Builder& b() { return *b_; }
  ir::Module* module() { return module_; }

  // A scalar constant of `type` broadcast to `shape` (or a scalar when shape is rank 0).
  ir::Instruction* Full(const ir::Shape& shape, double value);
  ir::Instruction* ScalarF32(float value);
  ir::Instruction* ScalarU32(uint32_t value);
  // Broadcasts x to `shape` with NumPy rules (right-aligned; size-1 dimensions stretch).
  ir::Instruction* BroadcastTo(ir::Instruction* x, const ir::Shape& shape);
  // x broadcast along new dimensions so that its dimensions map to `dims` of `shape`.
  ir::Instruction* BroadcastInDims(ir::Instruction* x, const ir::Shape& shape,
                                   std::vector<int64_t> dims);

  ir::Instruction* Reduce(ir::Instruction* x, ir::Opcode op, std::vector<int64_t> dims);
  ir::Instruction* ReduceSum(ir::Instruction* x, std::vector<int64_t> dims) {
    return Reduce(x, ir::Opcode::kAdd, std::move(dims));
  }
  // Sum divided by the number of reduced elements (jnp.mean).
  ir::Instruction* ReduceMean(ir::Instruction* x, std::vector<int64_t> dims);
  const ir::Computation* Combiner(ir::Opcode op, ir::ElementType type);

  // mean(argmax(logits, -1) == labels) as f32[], argmax taking the first maximal index
  // (jnp.argmax).
  ir::Instruction* Accuracy(ir::Instruction* logits, ir::Instruction* labels);

  // --- Randomness (jax.random semantics; docs/prng.md) ------------------------------------
  // key: u32[2]. Returns u32[2].
  ir::Instruction* FoldIn(ir::Instruction* key, ir::Instruction* data_u32_scalar);
  // 32-bit random bits of `dims` (jax.random.bits), in either threefry mode.
  ir::Instruction* RandomBits(ir::Instruction* key, const std::vector<int64_t>& dims,
                              bool partitionable);
  // jax.random.uniform on [0, 1) in f32.
  ir::Instruction* Uniform01(ir::Instruction* key, const std::vector<int64_t>& dims,
                             bool partitionable);

 private:
  ir::Module* module_;
  ir::Builder* b_;
  std::map<std::pair<int, int>, const ir::Computation*> combiners_;
};

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_EMIT_H_
