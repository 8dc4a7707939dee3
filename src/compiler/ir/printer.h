// The canonical printer (STYLE.md point 2): the one text form of a module, used for tests,
// dumps and hashing (module fingerprint = SHA-256 of this text).
//
// Canonical form (docs/ir.md "Canonical text"):
//   HloModule <module name>
//   <blank line> then each computation reachable from ENTRY, callees first, ENTRY last
//   computations are named `region.<k>` (k = position in that order) and the entry `main`
//   instructions appear in Computation::PostOrder(); parameters of ENTRY keep their names
//   (default `p<i>`), parameters of other computations are `p<i>`, every other instruction
//   is `<opcode>.<k>` with k counting the non-parameter instructions of its computation
//   attributes are printed in alphabetical order, optional attributes at their default omitted
//   shapes without layouts; no metadata, ids, locations or comments.
// Two modules with the same graph print the same bytes, whatever names or order they were
// written or built with.
//
// Thread safety: pure functions of a const Module. Deterministic: output depends only on the
// module's graph, never on pointers, hash-map order or the environment.
#ifndef DETRAIN_COMPILER_IR_PRINTER_H_
#define DETRAIN_COMPILER_IR_PRINTER_H_

#include <map>
#include <string>

#include "base/status.h"
#include "compiler/ir/module.h"

namespace detrain::ir {

struct CanonicalNames {
  std::map<const Computation*, std::string> computations;
  std::map<const Instruction*, std::string> instructions;
};

// Fails only on a malformed graph (no entry, a cycle, recursion).
Result<CanonicalNames> ComputeCanonicalNames(const Module& module);

Result<std::string> PrintModule(const Module& module);
// The same, given the module's CanonicalOrder (computed by the caller, e.g. VerifyModuleInOrder).
std::string PrintModule(const Module& module, const Module::Order& order);

// One instruction's line exactly as PrintModule writes it, without indentation or newline
// (`ROOT ` prefixed when `is_root`). `names` from ComputeCanonicalNames of its module.
std::string PrintInstruction(const Instruction& instr, bool is_root, const CanonicalNames& names);

// SHA-256 (lowercase hex) of PrintModule(module).
Result<std::string> ModuleFingerprint(const Module& module);

// True for names a parameter may carry in canonical text: [A-Za-z_][A-Za-z0-9_.-]*, not
// ending in `.<digits>` (reserved for generated names) and not a keyword (ENTRY, ROOT, HloModule).
bool IsValidParameterName(std::string_view name);

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_PRINTER_H_
