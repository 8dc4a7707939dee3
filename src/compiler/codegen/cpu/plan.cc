// See plan.h. Layout of the work: print the module once (canonical text and names), assign
// buffers, then emit buffers, kernels, called computations and collectives in schedule order.
#include "compiler/codegen/cpu/plan.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include "attest/sha256.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/buffer_assignment.h"
#include "schemas/cpu_plan.pb.h"

namespace detrain::codegen::cpu {
namespace {

using ir::Instruction;

// The canonical text split into computation blocks: (header line, instruction lines).
struct TextBlocks {
  std::vector<std::string> entry_lines;                             // without indentation
  std::vector<std::pair<std::string, std::string>> computations;    // (name, block text)
};

TextBlocks SplitText(const std::string& text) {
  TextBlocks blocks;
  size_t pos = text.find("\n\n");
  while (pos != std::string::npos) {
    size_t start = pos + 2;
    size_t end = text.find("\n}\n", start) + 1;  // the closing line "}" (no instruction line is)
    std::string block = text.substr(start, end + 2 - start);
    std::string header = block.substr(0, block.find(" {"));
    if (header.rfind("ENTRY ", 0) == 0) {
      size_t line = block.find('\n') + 1;
      while (line < block.size() && block.compare(line, 2, "}\n") != 0) {
        size_t eol = block.find('\n', line);
        blocks.entry_lines.push_back(block.substr(line + 2, eol - line - 2));
        line = eol + 1;
      }
    } else {
      blocks.computations.emplace_back(header, block);
    }
    pos = text.find("\n\n", end);
  }
  return blocks;
}

std::string OrderName(ir::ReductionOrder order) {
  switch (order) {
    case ir::ReductionOrder::kNone: return "";
    case ir::ReductionOrder::kFmaChain: return "fma-chain";
    case ir::ReductionOrder::kPairwise64: return "pairwise-64";
    case ir::ReductionOrder::kUpdateOrder: return "update-order";
    case ir::ReductionOrder::kShardTree: return "shard-tree";
  }
  return "";
}

void AddBuffers(const passes::BufferAssignment& a, plan::v1::Plan* plan) {
  std::unordered_map<const Instruction*, int32_t> position;
  for (size_t i = 0; i < a.schedule.size(); ++i) position[a.schedule[i]] = static_cast<int32_t>(i);
  for (const passes::LogicalBuffer& b : a.buffers) {
    plan::v1::Buffer* out = plan->add_buffers();
    out->set_id(static_cast<int32_t>(b.id));
    out->set_element_type(std::string(ir::ElementTypeName(b.shape.type())));
    for (int64_t d : b.shape.dims()) out->add_dims(d);
    out->set_offset(b.offset);
    out->set_size(b.size);
    out->set_defined_by(position.at(b.defined_by));
    out->set_leaf(static_cast<int32_t>(b.leaf));
    out->set_last_use(static_cast<int32_t>(b.last_use));
    out->set_is_output(b.is_output);
  }
}

void AddKernel(const Instruction& instr, int32_t id, const std::string& hlo, const ir::CanonicalNames& names,
               const passes::BufferAssignment& a, plan::v1::Plan* plan) {
  plan::v1::Kernel* k = plan->add_kernels();
  k->set_id(id);
  k->set_name(names.instructions.at(&instr));
  k->set_opcode(std::string(ir::OpcodeName(instr.opcode)));
  k->set_hlo(hlo);
  for (const Instruction* op : instr.operands) {
    plan::v1::Operand* o = k->add_operands();
    for (int64_t b : a.leaves.at(op)) o->add_buffers(static_cast<int32_t>(b));
  }
  for (int64_t b : a.leaves.at(&instr)) k->add_outputs(static_cast<int32_t>(b));
  k->set_alias_only(instr.opcode == ir::Opcode::kTuple || instr.opcode == ir::Opcode::kGetTupleElement);
  k->set_reduction_order(OrderName(ir::OpcodeReductionOrder(instr.opcode)));
  for (const ir::Computation* c : ir::CalledComputations(instr)) k->add_calls(names.computations.at(c));
  if (instr.opcode == ir::Opcode::kParameter) k->set_parameter_number(instr.parameter_number);
  if (instr.opcode == ir::Opcode::kAllReduce) {
    plan::v1::CollectiveCall* c = plan->add_collectives();
    c->set_kernel(id);
    c->set_op("all-reduce");
    if (const ir::AttrValue* groups = instr.FindAttr(ir::Attr::kReplicaGroups)) {
      for (const auto& group : groups->lists) {
        plan::v1::ReplicaGroup* g = c->add_replica_groups();
        for (int64_t r : group) g->add_replicas(r);
      }
    }
    c->set_combiner(names.computations.at(instr.ComputationAttr(ir::Attr::kToApply)));
    c->set_order("shard-tree");
    for (int64_t b : a.leaves.at(instr.operands[0])) c->add_buffers(static_cast<int32_t>(b));
  }
}

}  // namespace

Result<std::string> BuildPlan(const ir::Module& optimized) {
  DETRAIN_RETURN_IF_ERROR(ir::VerifyModule(optimized));
  DETRAIN_ASSIGN_OR_RETURN(std::string text, ir::PrintModule(optimized));
  DETRAIN_ASSIGN_OR_RETURN(ir::CanonicalNames names, ir::ComputeCanonicalNames(optimized));
  DETRAIN_ASSIGN_OR_RETURN(passes::BufferAssignment a, passes::AssignBuffers(optimized));
  TextBlocks blocks = SplitText(text);
  if (blocks.entry_lines.size() != a.schedule.size()) {
    return Internal("plan: the entry text has " + std::to_string(blocks.entry_lines.size()) +
                    " instructions, the schedule " + std::to_string(a.schedule.size()));
  }
  plan::v1::Plan plan;
  plan.set_format_version(kPlanFormatVersion);
  plan.set_module_name(optimized.name());
  plan.set_module_sha256(attest::Sha256Hex(text));
  plan.set_alignment(passes::kBufferAlignment);
  plan.set_arena_bytes(a.arena_bytes);
  plan.set_total_buffer_bytes(a.total_bytes);
  AddBuffers(a, &plan);
  for (size_t i = 0; i < a.schedule.size(); ++i) {
    AddKernel(*a.schedule[i], static_cast<int32_t>(i), blocks.entry_lines[i], names, a, &plan);
  }
  for (const auto& [name, hlo] : blocks.computations) {
    plan::v1::CalledComputation* c = plan.add_computations();
    c->set_name(name);
    c->set_hlo(hlo);
  }
  for (int64_t b : a.leaves.at(optimized.entry()->root())) plan.add_outputs(static_cast<int32_t>(b));
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!plan.SerializeToCodedStream(&coded)) return Internal("plan: serialization failed");
  }
  return bytes;
}

Result<std::string> PlanToText(std::string_view plan_bytes) {
  plan::v1::Plan plan;
  if (!plan.ParseFromArray(plan_bytes.data(), static_cast<int>(plan_bytes.size()))) {
    return InvalidArgument("not a serialized detrain.plan.v1.Plan (" + std::to_string(plan_bytes.size()) + " bytes)");
  }
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(plan, &text)) return Internal("plan: text printing failed");
  return text;
}

}  // namespace detrain::codegen::cpu
