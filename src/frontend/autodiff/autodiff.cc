// The autodiff driver (see autodiff.h): clone the forward computation, decide which values
// carry a gradient (activity), then walk the clone in reverse canonical post-order, summing
// each value's cotangent contributions in arrival order and applying its op's VJP rule.
#include "frontend/autodiff/autodiff.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "frontend/autodiff/vjp.h"

namespace detrain::frontend {
namespace {

using autodiff::Contribution;
using autodiff::VjpArgs;
using autodiff::VjpEntry;
using autodiff::VjpKind;
using ir::Instruction;

bool CarriesFloat(const ir::Shape& s) {
  if (!s.is_tuple()) return s.type() == ir::ElementType::kF32;
  return std::any_of(s.tuple_elements().begin(), s.tuple_elements().end(),
                     [](const ir::Shape& e) { return CarriesFloat(e); });
}

size_t PartCount(const ir::Shape& s) { return s.is_tuple() ? s.tuple_elements().size() : 1; }

const ir::Shape& PartShape(const ir::Shape& s, size_t part) {
  return s.is_tuple() ? s.tuple_elements()[part] : s;
}

Status CheckSignature(const ir::Computation& f, const std::vector<int64_t>& wrt) {
  if (f.root() == nullptr || !(f.root()->shape == ir::Shape::Scalar(ir::ElementType::kF32))) {
    return InvalidArgument("ValueAndGrad: the root of '" + f.name() + "' must be f32[], got " +
                           (f.root() ? f.root()->shape.ToString() : std::string("no root")));
  }
  auto params = f.Parameters();
  for (int64_t p : wrt) {
    auto it = std::find_if(params.begin(), params.end(),
                           [p](const Instruction* q) { return q->parameter_number == p; });
    if (it == params.end()) {
      return InvalidArgument("ValueAndGrad: no parameter " + std::to_string(p) + " in '" +
                             f.name() + "'");
    }
    const ir::Shape& s = (*it)->shape;
    if (s.is_tuple() || s.type() != ir::ElementType::kF32) {
      return InvalidArgument("ValueAndGrad: parameter " + std::to_string(p) + " has shape " +
                             s.ToString() +
                             "; gradients are taken only with respect to f32 arrays");
    }
  }
  return Status::Ok();
}

// The state of one ValueAndGrad call: the clone (indexed like f's post-order) and the
// cotangent contributions of each clone value, per tuple part, in arrival order.
class Differentiator {
 public:
  Differentiator(ir::Module* module, const std::string& name) : b_(module, name), e_(module, &b_) {}

  Result<ir::Computation*> Run(const ir::Computation& f, const std::vector<int64_t>& wrt);

 private:
  void Clone(const std::vector<const Instruction*>& order);
  void MarkActive(const std::vector<const Instruction*>& order, const std::vector<int64_t>& wrt);
  Instruction* SumPart(size_t k, size_t part);
  Status Backprop(size_t k);

  ir::Builder b_;
  Emitter e_;
  std::vector<Instruction*> clone_;
  std::unordered_map<const Instruction*, size_t>
      index_;  // clone instruction -> position (lookup only)
  std::vector<bool> active_;
  std::vector<std::vector<std::vector<Instruction*>>> contributions_;  // [k][part][arrival]
};

void Differentiator::Clone(const std::vector<const Instruction*>& order) {
  std::unordered_map<const Instruction*, Instruction*> map;  // lookup only
  for (const Instruction* in : order) {
    Instruction* c;
    if (in->opcode == ir::Opcode::kParameter) {
      c = b_.Parameter(in->parameter_number, in->shape, in->name);
    } else if (in->opcode == ir::Opcode::kConstant) {
      c = b_.Constant(in->literal);
    } else {
      std::vector<Instruction*> ops;
      for (const Instruction* o : in->operands) ops.push_back(map.at(o));
      c = b_.Emit(in->opcode, ops, in->attrs, in->shape);
    }
    map[in] = c;
    index_[c] = clone_.size();
    clone_.push_back(c);
  }
}

void Differentiator::MarkActive(const std::vector<const Instruction*>& order,
                                const std::vector<int64_t>& wrt) {
  active_.assign(order.size(), false);
  for (size_t k = 0; k < order.size(); ++k) {
    const Instruction* in = order[k];
    if (in->opcode == ir::Opcode::kParameter) {
      active_[k] = std::find(wrt.begin(), wrt.end(), in->parameter_number) != wrt.end();
      continue;
    }
    if (!CarriesFloat(in->shape) || autodiff::LookupVjp(in->opcode).kind == VjpKind::kNoGradient)
      continue;
    for (const Instruction* o : clone_[k]->operands)
      active_[k] = active_[k] || active_[index_.at(o)];
  }
}

// Contributions summed left to right in arrival order: ((c0 + c1) + c2) + ...
Instruction* Differentiator::SumPart(size_t k, size_t part) {
  Instruction* sum = nullptr;
  for (Instruction* c : contributions_[k][part]) sum = sum == nullptr ? c : b_.Add(sum, c);
  return sum;
}

Status Differentiator::Backprop(size_t k) {
  Instruction* fwd = clone_[k];
  VjpArgs args{e_, fwd, {}, {}};
  bool any = false;
  for (size_t p = 0; p < contributions_[k].size(); ++p) {
    args.ct.push_back(SumPart(k, p));
    any = any || args.ct.back() != nullptr;
  }
  if (!any) return Status::Ok();
  VjpEntry entry = autodiff::LookupVjp(fwd->opcode);
  std::string op(ir::OpcodeName(fwd->opcode));
  if (entry.kind != VjpKind::kRule)
    return Unimplemented("autodiff: no gradient through " + op + ": " +
                         (entry.why ? entry.why : "not in the VJP table"));
  for (const Instruction* o : fwd->operands) args.active.push_back(active_[index_.at(o)]);
  DETRAIN_ASSIGN_OR_RETURN(std::vector<Contribution> out, entry.fn(args));
  for (size_t i = 0; i < out.size() && i < fwd->operands.size(); ++i) {
    if (out[i].value == nullptr || !args.active[i]) continue;
    size_t o = index_.at(fwd->operands[i]);
    size_t part = out[i].tuple_index < 0 ? 0 : static_cast<size_t>(out[i].tuple_index);
    const ir::Shape& want = PartShape(clone_[o]->shape, part);
    if (part >= contributions_[o].size() || !(out[i].value->shape == want)) {
      return Internal("autodiff: the " + op + " rule produced " + out[i].value->shape.ToString() +
                      " for operand " + std::to_string(i) + ", expected " + want.ToString());
    }
    contributions_[o][part].push_back(out[i].value);
  }
  return Status::Ok();
}

Result<ir::Computation*> Differentiator::Run(const ir::Computation& f,
                                             const std::vector<int64_t>& wrt) {
  DETRAIN_ASSIGN_OR_RETURN(std::vector<const Instruction*> listed, f.PostOrder());
  // Keep the first occurrence of each instruction (defensive: PostOrder once listed a root
  // that is a parameter twice).
  std::vector<const Instruction*> order;
  std::unordered_set<const Instruction*> seen;  // membership only, never iterated
  for (const Instruction* in : listed) {
    if (seen.insert(in).second) order.push_back(in);
  }
  Clone(order);
  MarkActive(order, wrt);
  contributions_.resize(order.size());
  for (size_t k = 0; k < order.size(); ++k) contributions_[k].resize(PartCount(clone_[k]->shape));
  size_t root =
      static_cast<size_t>(std::find(order.begin(), order.end(), f.root()) - order.begin());
  if (active_[root]) contributions_[root][0].push_back(b_.ConstantF32(1.0f));
  for (size_t k = order.size(); k-- > 0;) {
    if (!active_[k] || clone_[k]->opcode == ir::Opcode::kParameter) continue;
    DETRAIN_RETURN_IF_ERROR(Backprop(k));
  }
  std::vector<Instruction*> outputs = {clone_[root]};
  for (int64_t p : wrt) {
    size_t k = 0;  // the position of parameter p (parameters come first, by number)
    while (order[k]->opcode != ir::Opcode::kParameter || order[k]->parameter_number != p) ++k;
    Instruction* g = SumPart(k, 0);
    outputs.push_back(g != nullptr ? g : e_.Full(clone_[k]->shape, 0));
  }
  return b_.Build(b_.Tuple(outputs));
}

}  // namespace

Result<ir::Computation*> ValueAndGrad(ir::Module* module, const ir::Computation& f,
                                      const std::vector<int64_t>& wrt, const std::string& name) {
  DETRAIN_RETURN_IF_ERROR(CheckSignature(f, wrt));
  Differentiator d(module, name);
  return d.Run(f, wrt);
}

}  // namespace detrain::frontend
