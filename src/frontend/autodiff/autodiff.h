// Reverse-mode automatic differentiation on detrain's IR (docs/autodiff.md).
//
// ValueAndGrad clones a scalar-valued computation and appends its vector-Jacobian products:
// one VJP rule per opcode, looked up in the table of vjp_table.cc (an exhaustive `switch`
// without `default:`, so an op added to ops.def that autodiff does not classify is a compile
// error). The rules mirror JAX's (each rule's comment names the JAX rule it follows).
//
// Determinism: the result depends only on the graph of `f` (never on pointers or container
// order). Instructions are processed in reverse canonical post-order (Computation::PostOrder);
// the cotangent contributions to one value are summed left to right in the order they were
// produced: users in reverse post-order, and within a user in operand index order.
//
// Thread safety: mutates `module`; one thread per module.
#ifndef DETRAIN_FRONTEND_AUTODIFF_AUTODIFF_H_
#define DETRAIN_FRONTEND_AUTODIFF_AUTODIFF_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ir/module.h"

namespace detrain::frontend {

// Given computation `f` of `module` whose root is an f32[] scalar, adds to `module` a new
// computation named `name` with the same parameters returning tuple(f's value, d f/d p_i for
// each i in wrt) — gradients have the shapes of those parameters (which must be f32). Integer
// and pred paths and the threefry custom call carry no gradient. The value is computed by a
// clone of f's instructions, so it equals f's bit for bit. Ops whose VJP is not supported
// (docs/autodiff.md) fail with Unimplemented naming the op, but only when a gradient actually
// flows through them.
Result<ir::Computation*> ValueAndGrad(ir::Module* module, const ir::Computation& f,
                                      const std::vector<int64_t>& wrt, const std::string& name);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_AUTODIFF_AUTODIFF_H_
