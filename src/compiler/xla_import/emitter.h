// Internal to the importer: the op builder its expansions share (select_and_scatter.cc,
// variadic_reduce.cc, sort.cc). Each new instruction goes into the computation beside the one
// being expanded, at its source position, named after it. Not part of the importer's API.
#ifndef DETRAIN_COMPILER_XLA_IMPORT_EMITTER_H_
#define DETRAIN_COMPILER_XLA_IMPORT_EMITTER_H_

#include <string>
#include <vector>

#include "compiler/xla_import/expansions.h"

namespace detrain::xla_import {

class Emitter {
 public:
  // New instructions are named like.name + suffix + a serial number.
  Emitter(Computation& comp, const Instruction& like, std::string suffix)
      : comp_(comp), like_(like), suffix_(std::move(suffix)) {}

  Instruction* Add(Opcode opcode, Shape shape, std::vector<Instruction*> operands);
  // A scalar constant: `v` for s32 or pred (0 or 1); Zero: all bits clear (+0 for f32).
  Instruction* Scalar(ElementType type, int32_t v);
  Instruction* Zero(ElementType type);
  // `scalar` broadcast to `dims` (the scalar itself for rank 0).
  Instruction* Broadcast(Instruction* scalar, const std::vector<int64_t>& dims);
  Instruction* Splat(ElementType type, int32_t v, const std::vector<int64_t>& dims) {
    return Broadcast(Scalar(type, v), dims);
  }
  Instruction* Binary(Opcode op, Instruction* a, Instruction* b) {
    return Add(op, a->shape, {a, b});
  }
  Instruction* Compare(Instruction* a, Instruction* b, Direction d);
  Instruction* Select(Instruction* p, Instruction* t, Instruction* f) {
    return Add(Opcode::kSelect, t->shape, {p, t, f});
  }
  // x itself where nothing would change.
  Instruction* Reshape(Instruction* x, std::vector<int64_t> dims);
  Instruction* Transpose(Instruction* x, const std::vector<int64_t>& perm);
  // x[start:limit:stride] along `dim`, whole along the others.
  Instruction* Slice(Instruction* x, size_t dim, int64_t start, int64_t limit, int64_t stride = 1);
  // Tap k (row-major over the window) of every window of `window` (no padding or dilation) over
  // x: a strided slice of x with the windows' dimensions `windows`.
  Instruction* WindowTap(Instruction* x, const std::vector<WindowDim>& window,
                         const std::vector<int64_t>& windows, int64_t k);

  Computation& comp() { return comp_; }
  const Instruction& like() const { return like_; }
  int* serial() { return &serial_; }

 private:
  Computation& comp_;
  const Instruction& like_;
  std::string suffix_;
  int serial_ = 0;
};

}  // namespace detrain::xla_import

#endif  // DETRAIN_COMPILER_XLA_IMPORT_EMITTER_H_
