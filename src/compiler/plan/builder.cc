// See builder.h. Layout of the work: name the module's instructions once, assign buffers, then emit
// buffers, the entry signature and the kernels (typed specs, HLO lines, shard ranges) in
// schedule order.
#include "compiler/plan/builder.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "attest/sha256.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/plan/buffer_assignment.h"
#include "compiler/plan/kernel_spec.h"
#include "compiler/plan/schema.h"
#include "schemas/plan.pb.h"

namespace detrain::plan {
namespace {

using ir::Instruction;
namespace pb = plan::v2;

std::string OrderName(ir::ReductionOrder order) {
  switch (order) {
    case ir::ReductionOrder::kNone:
      return "";
    case ir::ReductionOrder::kFmaChain:
      return "fma-chain";
    case ir::ReductionOrder::kPairwise64:
      return "pairwise-64";
    case ir::ReductionOrder::kUpdateOrder:
      return "update-order";
    case ir::ReductionOrder::kShardTree:
      return "shard-tree";
  }
  return "";
}

struct ShardRange {
  int64_t lo = 0, hi = 0;  // empty: depends on no shard
  bool empty() const { return lo >= hi; }
};

// The shard range of every instruction (schemas/plan.md "Shards and devices"): a slice of a
// sharded parameter along dimension 0 that covers whole shards [a, b) depends on those shards;
// any other use of a sharded parameter depends on all S; everything else on the hull of its
// operands' ranges.
std::unordered_map<const Instruction*, ShardRange> ShardRanges(
    const std::vector<const Instruction*>& schedule, const EntrySignature& sig) {
  std::unordered_map<const Instruction*, ShardRange> range;
  auto sharded = [&](const Instruction* x) {
    return x->opcode == ir::Opcode::kParameter && !sig.roles.empty() &&
           IsShardedRole(sig.roles[static_cast<size_t>(x->parameter_number)]);
  };
  for (const Instruction* x : schedule) {
    ShardRange r;
    if (x->opcode == ir::Opcode::kSlice && sharded(x->operands[0]) &&
        x->operands[0]->shape.rank() > 0) {
      const ir::SliceDim& d = x->FindAttr(ir::Attr::kSlice)->slice[0];
      int64_t rows = x->operands[0]->shape.dim(0), per = rows / sig.shards;
      if (d.stride == 1 && per > 0 && rows % sig.shards == 0 && d.start % per == 0 &&
          d.limit % per == 0 && d.limit > d.start) {
        range[x] = {d.start / per, d.limit / per};
        continue;
      }
    }
    for (const Instruction* op : x->operands) {
      ShardRange o = sharded(op) ? ShardRange{0, sig.shards} : range[op];
      if (o.empty()) continue;
      r = r.empty() ? o : ShardRange{std::min(r.lo, o.lo), std::max(r.hi, o.hi)};
    }
    range[x] = r;
  }
  return range;
}

void AddBuffers(const BufferAssignment& a, pb::Plan* plan) {
  std::unordered_map<const Instruction*, int32_t> position;
  for (size_t i = 0; i < a.schedule.size(); ++i) position[a.schedule[i]] = static_cast<int32_t>(i);
  for (const LogicalBuffer& b : a.buffers) {
    pb::Buffer* out = plan->add_buffers();
    out->set_id(static_cast<int32_t>(b.id));
    out->set_type(ToPlanType(b.shape.type()));
    for (int64_t d : b.shape.dims()) out->add_dims(d);
    out->set_offset(b.offset);
    out->set_size(b.size);
    out->set_defined_by(position.at(b.defined_by));
    out->set_leaf(static_cast<int32_t>(b.leaf));
    out->set_last_use(static_cast<int32_t>(b.last_use));
    out->set_is_output(b.is_output);
    if (b.donor >= 0) out->set_donor(static_cast<int32_t>(b.donor));
  }
}

// Plan format 3's donations (builder.h): the k-th state parameter to result leaf k.
DonationOptions StateDonations(const ir::Computation& entry, const EntrySignature& signature) {
  DonationOptions d;
  int64_t k = 0;
  for (const Instruction* p : entry.Parameters()) {
    if (IsStateRole(signature.roles[static_cast<size_t>(p->parameter_number)]))
      d.donations.push_back({p, k++});
  }
  d.in_place = [](const Instruction& user, const Instruction& operand) {
    return IsElementwiseKernel(user) &&
           std::find(user.operands.begin(), user.operands.end(), &operand) != user.operands.end();
  };
  return d;
}

Result<pb::Plan> PlanComputation(const ir::Computation& computation,
                                 const ir::CanonicalNames& names, const EntrySignature& signature,
                                 int depth, uint32_t format, BuiltPlan* totals = nullptr);

// A `while` kernel's spec: its condition and body planned as plans of their own, their arenas at
// `region` of the enclosing plan's arena (plan.proto WhileSpec).
Status AddWhile(const Instruction& instr, const ir::CanonicalNames& names, int64_t region,
                int depth, uint32_t format, pb::Kernel* k) {
  if (depth >= kMaxLoopNesting) {
    return InvalidArgument("loops nested more than " + std::to_string(kMaxLoopNesting) + " deep");
  }
  pb::WhileSpec* w = k->mutable_while_loop();
  DETRAIN_ASSIGN_OR_RETURN(
      *w->mutable_condition(),
      PlanComputation(*instr.ComputationAttr(ir::Attr::kCondition), names, {}, depth + 1, format));
  DETRAIN_ASSIGN_OR_RETURN(
      *w->mutable_body(),
      PlanComputation(*instr.ComputationAttr(ir::Attr::kBody), names, {}, depth + 1, format));
  w->set_region(region);
  k->set_implementation("cpu.while.v1");
  return Status::Ok();
}

Status AddKernel(const Instruction& instr, int32_t id, bool is_root,
                 const ir::CanonicalNames& names, const BufferAssignment& a, ShardRange shards,
                 int depth, uint32_t format, pb::Plan* plan) {
  pb::Kernel* k = plan->add_kernels();
  k->set_id(id);
  k->set_name(names.instructions.at(&instr));
  k->set_opcode(std::string(ir::OpcodeName(instr.opcode)));
  k->set_hlo(ir::PrintInstruction(instr, is_root, names));
  for (const Instruction* op : instr.operands) {
    pb::Operand* o = k->add_operands();
    for (int64_t b : a.leaves.at(op)) o->add_buffers(static_cast<int32_t>(b));
  }
  for (int64_t b : a.leaves.at(&instr)) k->add_outputs(static_cast<int32_t>(b));
  k->set_reduction_order(OrderName(ir::OpcodeReductionOrder(instr.opcode)));
  if (!shards.empty()) {
    k->set_shard_lo(shards.lo);
    k->set_shard_hi(shards.hi);
  }
  Status s = instr.opcode == ir::Opcode::kWhile
                 ? AddWhile(instr, names, a.arena_bytes, depth, format, k)
                 : BuildKernelSpec(instr, names, k);
  if (!s.ok()) return Status(s.code(), "plan: kernel " + k->name() + ": " + s.message());
  if (instr.opcode == ir::Opcode::kAllReduce) plan->set_replicated(true);
  return Status::Ok();
}

// The plan of `computation` (the entry, or at depth > 0 a loop's condition or body): buffers,
// parameters, kernels in schedule order and outputs. Its arena is the buffer assignment's, then
// one region that its loops' sub-plans share (they run one at a time). `totals`, when given,
// gets the assignment's peak and total bytes.
Result<pb::Plan> PlanComputation(const ir::Computation& computation,
                                 const ir::CanonicalNames& names, const EntrySignature& signature,
                                 int depth, uint32_t format, BuiltPlan* totals) {
  auto params = computation.Parameters();
  if (!signature.roles.empty() && signature.roles.size() != params.size()) {
    return InvalidArgument("plan: the signature has " + std::to_string(signature.roles.size()) +
                           " roles for " + std::to_string(params.size()) + " entry parameters");
  }
  if (signature.shards < 1) return InvalidArgument("plan: the shard count must be at least 1");
  // The entry of a training program (its state roles) donates its state; a loop's plans and an
  // imported module's do not.
  std::optional<DonationOptions> donation;
  if (format >= 3 && depth == 0 && !signature.roles.empty())
    donation = StateDonations(computation, signature);
  // Format 4 updates in place in every plan, a loop's too (plan.md "Updates in place").
  if (format >= 4) {
    if (!donation) donation.emplace();
    donation->updates_in_place = [](const Instruction& user) {
      return user.opcode == ir::Opcode::kDynamicUpdateSlice || user.opcode == ir::Opcode::kScatter;
    };
  }
  DETRAIN_ASSIGN_OR_RETURN(BufferAssignment a,
                           AssignBuffers(computation, donation ? &*donation : nullptr));
  if (totals != nullptr) {
    totals->peak_bytes = a.arena_bytes;
    totals->total_bytes = a.total_bytes;
  }
  pb::Plan plan;
  plan.set_format_version(format);
  plan.set_module_name(names.computations.at(&computation));
  plan.set_alignment(kBufferAlignment);
  plan.set_total_buffer_bytes(a.total_bytes);
  plan.set_shards(signature.shards);
  AddBuffers(a, &plan);
  for (const Instruction* p : params) {
    pb::EntryParameter* e = plan.add_parameters();
    e->set_number(static_cast<int32_t>(p->parameter_number));
    e->set_name(names.instructions.at(p));
    e->set_role(signature.roles.empty()
                    ? pb::INPUT
                    : ToPlanRole(signature.roles[static_cast<size_t>(p->parameter_number)]));
    for (int64_t b : a.leaves.at(p)) e->add_buffers(static_cast<int32_t>(b));
  }
  auto ranges = ShardRanges(a.schedule, signature);
  const Instruction* root = computation.root();
  int64_t region = 0;  // the largest arena of a loop's sub-plans
  for (size_t i = 0; i < a.schedule.size(); ++i) {
    const Instruction* x = a.schedule[i];
    DETRAIN_RETURN_IF_ERROR(AddKernel(*x, static_cast<int32_t>(i), x == root, names, a, ranges[x],
                                      depth, format, &plan));
    if (x->opcode == ir::Opcode::kWhile) {
      const pb::WhileSpec& w = plan.kernels(static_cast<int>(i)).while_loop();
      region = std::max({region, w.condition().arena_bytes(), w.body().arena_bytes()});
    }
  }
  plan.set_arena_bytes(a.arena_bytes + region);
  for (int64_t b : a.leaves.at(root)) plan.add_outputs(static_cast<int32_t>(b));
  return plan;
}

}  // namespace

Result<BuiltPlan> BuildPlan(const ir::Module& optimized, const EntrySignature& signature,
                            std::string_view canonical_text, const PlanOptions& options) {
  if (!IsKnownPlanFormat(options.format_version)) {
    return InvalidArgument(
        "plan format " + std::to_string(options.format_version) + ": this detrain writes formats " +
        std::to_string(kOldestPlanFormatVersion) + " to " + std::to_string(kPlanFormatVersion));
  }
  std::string text(canonical_text);
  if (text.empty()) {
    DETRAIN_RETURN_IF_ERROR(ir::VerifyModule(optimized));
    DETRAIN_ASSIGN_OR_RETURN(text, ir::PrintModule(optimized));
  }
  if (optimized.entry() == nullptr) return InvalidArgument("plan: the module has no entry");
  DETRAIN_ASSIGN_OR_RETURN(ir::CanonicalNames names, ir::ComputeCanonicalNames(optimized));
  BuiltPlan built;
  DETRAIN_ASSIGN_OR_RETURN(pb::Plan plan,
                           PlanComputation(*optimized.entry(), names, signature, /*depth=*/0,
                                           options.format_version, &built));
  plan.set_module_name(optimized.name());
  plan.set_module_sha256(attest::Sha256Hex(text));
  {
    google::protobuf::io::StringOutputStream stream(&built.bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!plan.SerializeToCodedStream(&coded)) return Internal("plan: serialization failed");
  }
  return built;
}

Result<std::string> PlanToText(std::string_view plan_bytes) {
  pb::Plan plan;
  if (plan_bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !plan.ParseFromArray(plan_bytes.data(), static_cast<int>(plan_bytes.size()))) {
    return InvalidArgument("not a serialized detrain.plan.v2.Plan (" +
                           std::to_string(plan_bytes.size()) + " bytes)");
  }
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(plan, &text))
    return Internal("plan: text printing failed");
  return text;
}

}  // namespace detrain::plan
