// Lowering checked .dt functions to IR (stage 1 of the attested chain is the lowered loss).
//
// A function becomes one computation whose parameters are the program's parameters in
// declaration order, then the function's arguments (a `key` is u32[2], JAX's key data), and
// whose root is the function's result. Calls of user functions are inlined; layers expand to
// IR ops through the table in lower_layers.cc, with the semantics of docs/language.md (JAX,
// Flax and optax formulas). Dimension names are bound to sizes by `dims` (B -> batch per shard).
//
// Thread safety: mutates only the given module. Determinism: the emitted IR is a pure function
// of the checked program and the options; nothing depends on addresses or iteration of
// unordered containers.
#ifndef DETRAIN_FRONTEND_LOWER_H_
#define DETRAIN_FRONTEND_LOWER_H_

#include <map>
#include <string>

#include "compiler/ir/builder.h"
#include "compiler/ir/module.h"
#include "frontend/check.h"
#include "frontend/emit.h"
#include "frontend/run_config.h"  // PrngMode

namespace detrain::frontend {

struct LowerOptions {
  std::map<std::string, int64_t> dims;  // values of dimension names, e.g. {"B": 8}
  PrngMode prng = PrngMode::kPartitionable;
  bool deterministic = false;  // evaluation: dropout is the identity (Flax's deterministic=True)
};

// Adds computation `name` computing function `f` to `module`.
Result<ir::Computation*> LowerFunction(const CheckedProgram& program, const FuncDecl& f,
                                       const LowerOptions& options, ir::Module* module,
                                       const std::string& name);

// Lowers function `f` into the computation `emit` is building: `params` are the program's
// parameters (declaration order), `args` f's arguments. Returns f's result.
Result<ir::Instruction*> LowerInline(const CheckedProgram& program, const FuncDecl& f,
                                     const LowerOptions& options, Emitter& emit,
                                     const std::vector<ir::Instruction*>& params,
                                     const std::vector<ir::Instruction*>& args);

// The IR shape of an argument's declared type.
Result<ir::Shape> ArgShape(const FuncArg& arg, const std::map<std::string, int64_t>& dims);

// The IR shape of a checked type under dimension bindings (keys are u32[2]).
Result<ir::Shape> ToShape(const Type& type, const std::map<std::string, int64_t>& dims);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_LOWER_H_
