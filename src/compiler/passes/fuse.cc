// fuse — elementwise producer/consumer fusion and reduction fusion into `fusion` instructions.
//
// What it does: in the entry computation and in the condition and body of every loop left in the
// module (they run as plans of kernels too), visits instructions consumers first (reverse
// canonical order). An elementwise op or a reduce that is in no group yet starts a group
// (its root); the group then absorbs, transitively, every operand that is elementwise (or a
// reduce, at most one per group) and whose users are all already in the group. Scalar
// constants and broadcasts of scalar constants used by the group are copied into it. A group
// of two or more ops becomes
//   f = fusion(external operands...), kind=K, calls=<fused computation>
// with the group's ops in the fused computation (operands become its parameters in order of
// first use) — kLoop: only elementwise ops; kInput: the root is a reduce fed by elementwise
// producers; kOutput: a reduce whose result feeds elementwise consumers (a reduction
// epilogue). Because only ops whose every user is inside are absorbed, no path leaves a group
// and re-enters it: fusing never creates a cycle.
// Exactness: a fusion's value is by definition its fused computation applied to its operands,
// evaluated op by op with the same semantics (the interpreter evaluates it exactly so), so
// fusing changes no bit; it only decides what runs as one kernel without materializing
// intermediate buffers.
// What it does not do: fuse dot, convolution, data movement, all-reduce, scatter/gather or
// threefry; duplicate non-constant work into several fusions; fuse inside other called
// computations (combiners, comparators: evaluated as scalar programs).
// Pre: a verified module (normally after simplify/cse). Post: a verified module; results
// unchanged bit for bit.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "compiler/passes/passes.h"
#include "compiler/passes/rewrite.h"

namespace detrain::passes {
namespace {

using ir::Instruction;
using ir::Opcode;

bool IsElementwise(const Instruction& x) {
  ir::OpCategory c = ir::OpcodeCategory(x.opcode);
  return c == ir::OpCategory::kUnary || c == ir::OpCategory::kBinary ||
         c == ir::OpCategory::kElementwise;
}

bool IsScalarConstant(const Instruction& x) {
  if (x.opcode == Opcode::kConstant) return x.shape.rank() == 0 && !x.shape.is_tuple();
  return x.opcode == Opcode::kBroadcast && x.operands[0]->opcode == Opcode::kConstant &&
         x.operands[0]->shape.rank() == 0;
}

struct Group {
  std::vector<Instruction*> members;  // the root first, then in order of absorption
  bool has_reduce = false;
};

class Fuser {
 public:
  Fuser(ir::Module& module, ir::Computation& computation, const std::vector<Instruction*>& order)
      : module_(module), computation_(computation), order_(order) {
    for (size_t i = 0; i < order.size(); ++i) {
      position_[order[i]] = i;
      for (const Instruction* op : order[i]->operands) ++users_[op];
    }
    ++users_[computation.root()];  // the root's value leaves the computation
  }

  // Forms the groups and returns (group root -> fusion instruction).
  std::unordered_map<const Instruction*, Instruction*> Run() {
    std::unordered_map<const Instruction*, Instruction*> fused;
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      Instruction* root = *it;
      if (group_of_.count(root) || !(IsElementwise(*root) || root->opcode == Opcode::kReduce))
        continue;
      Group g = Grow(root);
      if (g.members.size() >= 2) fused[root] = Outline(g);
    }
    return fused;
  }

 private:
  Group Grow(Instruction* root) {
    Group g;
    g.members.push_back(root);
    g.has_reduce = root->opcode == Opcode::kReduce;
    group_of_[root] = root;
    std::unordered_map<const Instruction*, int> uses_inside;
    for (size_t next = 0; next < g.members.size(); ++next) {
      for (Instruction* op : g.members[next]->operands) {
        if (group_of_.count(op) || IsScalarConstant(*op)) continue;
        bool reduce = op->opcode == Opcode::kReduce;
        if (!IsElementwise(*op) && !(reduce && !g.has_reduce)) continue;
        if (++uses_inside[op] != users_.at(op)) continue;  // some user is outside (so far)
        g.members.push_back(op);
        g.has_reduce = g.has_reduce || reduce;
        group_of_[op] = root;
      }
    }
    return g;
  }

  // Builds the fused computation and the fusion instruction of `g`.
  Instruction* Outline(const Group& g) {
    std::vector<Instruction*> members = g.members;
    std::sort(members.begin(), members.end(), [&](const Instruction* a, const Instruction* b) {
      return position_.at(a) < position_.at(b);
    });
    std::unordered_set<const Instruction*> inside(members.begin(), members.end());
    auto* body = module_.AddComputation(std::make_unique<ir::Computation>("fused_computation"));
    std::unordered_map<const Instruction*, Instruction*> copies;
    std::vector<Instruction*> external;
    auto copy_of = [&](Instruction* op) -> Instruction* {
      if (auto it = copies.find(op); it != copies.end()) return it->second;
      if (IsScalarConstant(*op)) {  // copied in, with the scalar it broadcasts
        std::vector<Instruction*> ops;
        if (op->opcode == Opcode::kBroadcast)
          ops.push_back(body->AddInstruction(std::make_unique<Instruction>(*op->operands[0])));
        auto c = std::make_unique<Instruction>(*op);
        c->operands = ops;
        return copies[op] = body->AddInstruction(std::move(c));
      }
      auto p = std::make_unique<Instruction>();
      p->opcode = Opcode::kParameter;
      p->shape = op->shape;
      p->parameter_number = static_cast<int64_t>(external.size());
      external.push_back(op);
      return copies[op] = body->AddInstruction(std::move(p));
    };
    for (Instruction* m : members) {
      auto c = std::make_unique<Instruction>(*m);
      c->name.clear();
      for (Instruction*& op : c->operands) op = inside.count(op) ? copies.at(op) : copy_of(op);
      copies[m] = body->AddInstruction(std::move(c));
    }
    const Instruction* root = g.members.front();
    body->set_root(copies.at(root));
    ir::AttrMap attrs;
    attrs[ir::Attr::kCalls].computation = body;
    attrs[ir::Attr::kKind].s = !g.has_reduce                     ? "kLoop"
                               : root->opcode == Opcode::kReduce ? "kInput"
                                                                 : "kOutput";
    return AddInstruction(computation_, Opcode::kFusion, root->shape, external, std::move(attrs));
  }

  ir::Module& module_;
  ir::Computation& computation_;
  const std::vector<Instruction*>& order_;
  std::unordered_map<const Instruction*, size_t> position_;
  std::unordered_map<const Instruction*, int> users_;
  std::unordered_map<const Instruction*, const Instruction*> group_of_;
};

// The computations that run as plans of kernels: the entry, and the condition and body of every
// loop that stays a loop (schemas/plan.md "Loops"), nested ones included, in a fixed order.
Result<std::vector<ir::Computation*>> KernelComputations(ir::Module& module) {
  std::vector<ir::Computation*> out = {module.entry()};
  for (size_t i = 0; i < out.size(); ++i) {
    DETRAIN_ASSIGN_OR_RETURN(auto order, MutablePostOrder(*out[i]));
    for (const Instruction* x : order) {
      if (x->opcode != Opcode::kWhile) continue;
      for (ir::Attr a : {ir::Attr::kCondition, ir::Attr::kBody}) {
        auto* c = const_cast<ir::Computation*>(x->ComputationAttr(a));
        if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
      }
    }
  }
  return out;
}

}  // namespace

Status FuseInPlace(ir::Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(auto computations, KernelComputations(module));
  for (ir::Computation* c : computations) {
    DETRAIN_ASSIGN_OR_RETURN(auto order, MutablePostOrder(*c));
    auto fused = Fuser(module, *c, order).Run();
    if (fused.empty()) continue;
    for (const auto& instr : c->instructions()) {
      for (Instruction*& op : instr->operands) {
        if (auto it = fused.find(op); it != fused.end()) op = it->second;
      }
    }
    if (auto it = fused.find(c->root()); it != fused.end()) c->set_root(it->second);
  }
  return Compact(module);
}

PassOutput Fuse(const ir::Module& module) { return OnCopy(module, FuseInPlace); }

}  // namespace detrain::passes
