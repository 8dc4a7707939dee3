// combine-all-reduce — buckets all-reduces into one concatenated all-reduce.
//
// What it does: walks the all-reduces of the entry computation in canonical order and groups
// consecutive ones with the same combiner computation, replica groups and element type into
// buckets of at most kMaxBucketBytes (an all-reduce whose operand depends on a member starts a
// new bucket). A bucket of two or more becomes
//   c = all-reduce(concatenate(reshape(x1), ..., reshape(xn)))   (each xi flattened to 1-D)
//   yi = reshape(slice(c, [off_i : off_i + n_i]))
// All-reduce is elementwise across replicas: element j of the result is the shard-tree
// reduction of element j over the replicas, the same tree whatever the array holds around it.
// So every element is reduced by exactly the same operations as before — the per-element
// reduction tree is unchanged — and the rewrite is exact; it only makes fewer, larger
// collective calls (as XLA's all-reduce combiner does).
// What it does not do: combine across different combiners, replica groups or element types;
// reorder replicas; use tuple-shaped all-reduce (not in the IR subset); touch computations
// other than the entry (run `inline` first; all-reduce may not appear in combiners).
// Pre: a verified module. Post: a verified module; replicated interpreter results unchanged.
#include <algorithm>
#include <unordered_map>

#include "compiler/passes/passes.h"
#include "compiler/passes/rewrite.h"

namespace detrain::passes {
namespace {

using ir::Instruction;
using ir::Opcode;

constexpr int64_t kMaxBucketBytes = int64_t{32} << 20;

std::string BucketKey(const Instruction& ar) {
  std::string key =
      std::to_string(reinterpret_cast<uintptr_t>(ar.ComputationAttr(ir::Attr::kToApply)));
  key += std::string(ir::ElementTypeName(ar.shape.type()));
  if (const ir::AttrValue* g = ar.FindAttr(ir::Attr::kReplicaGroups)) {
    key += ir::FormatAttrValue(ir::Attr::kReplicaGroups, *g,
                               [](const ir::Computation*) { return ""; });
  }
  return key;  // compared for equality only
}

struct Bucket {
  std::vector<Instruction*> members;
  int64_t bytes = 0;
};

// One bucket is open at a time: an all-reduce with another key, a dependence on a member, or
// the size limit closes it. Buckets are therefore contiguous in canonical order, so a bucket's
// operands never depend on a later bucket and combining cannot create a cycle.
// Whether an operand depends on a member of the open bucket (the newest) is one comparison:
// `newest[x]` is the highest bucket number among the members x depends on (itself included),
// -1 for none, propagated along canonical order (operands first).
std::vector<Bucket> MakeBuckets(const std::vector<Instruction*>& order, size_t instructions) {
  std::vector<Bucket> buckets;
  std::vector<int64_t> newest(instructions, -1);  // by id
  std::string open_key;
  for (Instruction* instr : order) {
    int64_t& mine = newest[static_cast<size_t>(instr->id)];
    for (const Instruction* op : instr->operands) {
      mine = std::max(mine, newest[static_cast<size_t>(op->id)]);
    }
    if (instr->opcode != Opcode::kAllReduce) continue;
    std::string key = BucketKey(*instr);
    int64_t bytes = instr->shape.ElementCount() * ir::ElementTypeByteSize(instr->shape.type());
    const int64_t open = static_cast<int64_t>(buckets.size()) - 1;
    bool join = !buckets.empty() && key == open_key &&
                buckets.back().bytes + bytes <= kMaxBucketBytes &&
                newest[static_cast<size_t>(instr->operands[0]->id)] != open;
    if (!join) {
      buckets.emplace_back();
      open_key = key;
    }
    Bucket& bucket = buckets.back();
    bucket.members.push_back(instr);
    bucket.bytes += bytes;
    mine = static_cast<int64_t>(buckets.size()) - 1;
  }
  return buckets;
}

// Builds the combined all-reduce of `bucket`; returns each member's replacement.
std::vector<Instruction*> Combine(ir::Computation& c, const Bucket& bucket) {
  const Instruction& first = *bucket.members.front();
  ir::ElementType type = first.shape.type();
  std::vector<Instruction*> flat;
  int64_t total = 0;
  for (const Instruction* m : bucket.members) {
    Instruction* x = m->operands[0];
    int64_t n = x->shape.ElementCount();
    flat.push_back(
        x->shape.rank() == 1 ? x : AddInstruction(c, Opcode::kReshape, ir::Shape(type, {n}), {x}));
    total += n;
  }
  ir::AttrMap concat_attrs;
  concat_attrs[ir::Attr::kDimensions].ints = {0};
  Instruction* concat =
      AddInstruction(c, Opcode::kConcatenate, ir::Shape(type, {total}), flat, concat_attrs);
  Instruction* combined =
      AddInstruction(c, Opcode::kAllReduce, ir::Shape(type, {total}), {concat}, first.attrs);
  std::vector<Instruction*> replacements;
  int64_t offset = 0;
  for (const Instruction* m : bucket.members) {
    int64_t n = m->shape.ElementCount();
    ir::AttrMap slice_attrs;
    slice_attrs[ir::Attr::kSlice].slice = {ir::SliceDim{offset, offset + n, 1}};
    Instruction* part =
        AddInstruction(c, Opcode::kSlice, ir::Shape(type, {n}), {combined}, slice_attrs);
    replacements.push_back(
        m->shape.rank() == 1 ? part : AddInstruction(c, Opcode::kReshape, m->shape, {part}));
    offset += n;
  }
  return replacements;
}

}  // namespace

Status CombineAllReducesInPlace(ir::Module& module) {
  ir::Computation& entry = *module.entry();
  DETRAIN_ASSIGN_OR_RETURN(auto order, MutablePostOrder(entry));
  std::unordered_map<const Instruction*, Instruction*> replaced;
  for (const Bucket& bucket : MakeBuckets(order, entry.instructions().size())) {
    if (bucket.members.size() < 2) continue;
    std::vector<Instruction*> parts = Combine(entry, bucket);
    for (size_t i = 0; i < parts.size(); ++i) replaced[bucket.members[i]] = parts[i];
  }
  if (replaced.empty()) return Status::Ok();
  // Redirect every use (new instructions included: a bucket may consume another's member).
  for (const auto& instr : entry.instructions()) {
    for (Instruction*& op : instr->operands) {
      auto it = replaced.find(op);
      if (it != replaced.end()) op = it->second;
    }
  }
  if (auto it = replaced.find(entry.root()); it != replaced.end()) entry.set_root(it->second);
  return Compact(module);
}

PassOutput CombineAllReduces(const ir::Module& module) {
  return OnCopy(module, CombineAllReducesInPlace);
}

}  // namespace detrain::passes
