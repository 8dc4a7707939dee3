// See buffer_assignment.h.
#include "compiler/plan/buffer_assignment.h"

#include <algorithm>
#include <map>
#include <set>

namespace detrain::plan {
namespace {

using ir::Instruction;
using ir::Opcode;

void FlattenShape(const ir::Shape& shape, std::vector<ir::Shape>* leaves) {
  if (!shape.is_tuple()) {
    leaves->push_back(shape);
    return;
  }
  for (const ir::Shape& e : shape.tuple_elements()) FlattenShape(e, leaves);
}

int64_t AlignUp(int64_t bytes) {
  return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

// Defines buffers and their live ranges; fills schedule, buffers and leaves.
void ComputeLiveness(const ir::Computation& entry, BufferAssignment* a) {
  for (size_t pos = 0; pos < a->schedule.size(); ++pos) {
    const Instruction* instr = a->schedule[pos];
    std::vector<int64_t>& mine = a->leaves[instr];
    if (instr->opcode == Opcode::kTuple) {
      for (const Instruction* op : instr->operands) {
        const auto& l = a->leaves.at(op);
        mine.insert(mine.end(), l.begin(), l.end());
      }
    } else if (instr->opcode == Opcode::kGetTupleElement) {
      const Instruction* t = instr->operands[0];
      int64_t skip = 0, index = instr->IntAttr(ir::Attr::kIndex);
      for (int64_t j = 0; j < index; ++j)
        skip += LeafCount(t->shape.tuple_elements()[static_cast<size_t>(j)]);
      const auto& l = a->leaves.at(t);
      mine.assign(l.begin() + skip, l.begin() + skip + LeafCount(instr->shape));
    } else {
      std::vector<ir::Shape> shapes;
      FlattenShape(instr->shape, &shapes);
      for (size_t k = 0; k < shapes.size(); ++k) {
        LogicalBuffer b;
        b.id = static_cast<int64_t>(a->buffers.size());
        b.defined_by = instr;
        b.leaf = static_cast<int64_t>(k);
        b.size = shapes[k].ElementCount() * ir::ElementTypeByteSize(shapes[k].type());
        b.shape = std::move(shapes[k]);
        b.defined_at = b.last_use = static_cast<int64_t>(pos);
        mine.push_back(b.id);
        a->buffers.push_back(std::move(b));
      }
    }
    for (const Instruction* op : instr->operands) {
      for (int64_t id : a->leaves.at(op)) {
        a->buffers[static_cast<size_t>(id)].last_use = static_cast<int64_t>(pos);
      }
    }
  }
  for (int64_t id : a->leaves.at(entry.root())) {
    LogicalBuffer& b = a->buffers[static_cast<size_t>(id)];
    b.is_output = true;
    b.last_use = static_cast<int64_t>(a->schedule.size());
  }
}

// Marks the donations that qualify (buffer_assignment.h): result buffer -> donor buffer.
void Donate(const DonationOptions& options, const Instruction* root, BufferAssignment* a) {
  const std::vector<int64_t>& results = a->leaves.at(root);
  std::vector<char> taken(a->buffers.size(), 0);
  for (const Donation& d : options.donations) {
    if (d.result_leaf < 0 || d.result_leaf >= static_cast<int64_t>(results.size())) continue;
    const auto it = a->leaves.find(d.parameter);
    if (it == a->leaves.end() || it->second.size() != 1) continue;
    LogicalBuffer& donor = a->buffers[static_cast<size_t>(it->second[0])];
    LogicalBuffer& result =
        a->buffers[static_cast<size_t>(results[static_cast<size_t>(d.result_leaf)])];
    // One result per donor and one donor per result (a result listed twice in the tuple is one
    // buffer); the donor dies where the result is born, in a kernel that may write over it.
    if (donor.is_output || result.donor >= 0 || result.defined_by->opcode == Opcode::kParameter ||
        donor.shape != result.shape || donor.last_use != result.defined_at ||
        LeafCount(result.defined_by->shape) != 1 ||
        !options.in_place(*result.defined_by, *d.parameter)) {
      continue;
    }
    if (taken[static_cast<size_t>(donor.id)]) continue;
    taken[static_cast<size_t>(donor.id)] = 1;
    result.donor = donor.id;
  }
}

// Marks the updates in place that qualify (buffer_assignment.h), after the state's donations:
// result buffer -> the buffer of its kernel's operand 0.
void UpdateInPlace(const DonationOptions& options, BufferAssignment* a) {
  std::vector<char> taken(a->buffers.size(), 0);
  for (const LogicalBuffer& b : a->buffers) {
    if (b.donor >= 0) taken[static_cast<size_t>(b.donor)] = 1;
  }
  for (LogicalBuffer& result : a->buffers) {
    const Instruction* user = result.defined_by;
    if (result.donor >= 0 || LeafCount(user->shape) != 1 || user->operands.empty() ||
        !options.updates_in_place(*user)) {
      continue;
    }
    const std::vector<int64_t>& source = a->leaves.at(user->operands[0]);
    if (source.size() != 1) continue;
    LogicalBuffer& donor = a->buffers[static_cast<size_t>(source[0])];
    bool read_twice = false;  // the donor also read through another operand
    for (size_t i = 1; i < user->operands.size(); ++i) {
      for (int64_t id : a->leaves.at(user->operands[i])) read_twice |= id == donor.id;
    }
    if (read_twice || taken[static_cast<size_t>(donor.id)] || donor.is_output ||
        donor.defined_by->opcode == Opcode::kParameter || donor.shape != result.shape ||
        donor.last_use != result.defined_at || donor.size == 0) {
      continue;
    }
    taken[static_cast<size_t>(donor.id)] = 1;
    result.donor = donor.id;
  }
}

}  // namespace

int64_t FirstFitArena::Allocate(int64_t size) {
  const int want = Class(size);
  int64_t best = -1;
  for (int c = want + 1; c < kClasses; ++c) {
    if (!by_class_[c].empty() && (best < 0 || *by_class_[c].begin() < best))
      best = *by_class_[c].begin();
  }
  for (int64_t offset : by_class_[want]) {
    if (best >= 0 && offset > best) break;
    if (free_.at(offset) >= size) {
      best = offset;
      break;
    }
  }
  if (best >= 0) {
    const int64_t block = free_.at(best);
    Remove(best);
    if (block > size) Insert(best + size, block - size);
    return best;
  }
  // Grow: reuse a free block at the end of the arena if there is one.
  int64_t offset = end_;
  if (!free_.empty()) {
    auto last = std::prev(free_.end());
    if (last->first + last->second == end_) {
      offset = last->first;
      Remove(offset);
    }
  }
  end_ = offset + size;
  return offset;
}

void FirstFitArena::Free(int64_t offset, int64_t size) {
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + size == next->first) {
    size += next->second;
    Remove(next->first);
  }
  auto prev = free_.lower_bound(offset);
  if (prev != free_.begin()) {
    --prev;
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      Remove(offset);
    }
  }
  Insert(offset, size);
}

void FirstFitArena::Insert(int64_t offset, int64_t size) {
  free_[offset] = size;
  by_class_[Class(size)].insert(offset);
}

void FirstFitArena::Remove(int64_t offset) {
  auto it = free_.find(offset);
  by_class_[Class(it->second)].erase(offset);
  free_.erase(it);
}

int64_t LeafCount(const ir::Shape& shape) {
  if (!shape.is_tuple()) return 1;
  int64_t n = 0;
  for (const ir::Shape& e : shape.tuple_elements()) n += LeafCount(e);
  return n;
}

Result<BufferAssignment> AssignBuffers(const ir::Module& module) {
  if (module.entry() == nullptr)
    return InvalidArgument("buffer assignment: the module has no entry");
  return AssignBuffers(*module.entry());
}

Result<BufferAssignment> AssignBuffers(const ir::Computation& computation,
                                       const DonationOptions* donation) {
  BufferAssignment a;
  DETRAIN_ASSIGN_OR_RETURN(a.schedule, computation.PostOrder());
  ComputeLiveness(computation, &a);
  if (donation != nullptr && computation.root() != nullptr)
    Donate(*donation, computation.root(), &a);
  if (donation != nullptr && donation->updates_in_place) UpdateInPlace(*donation, &a);
  // Buffers to free after each position, in id order; a donor's block is not freed but passed on.
  std::vector<std::vector<int64_t>> frees(a.schedule.size() + 1);
  std::vector<char> donated(a.buffers.size(), 0);
  for (const LogicalBuffer& b : a.buffers) {
    if (b.donor >= 0) donated[static_cast<size_t>(b.donor)] = 1;
  }
  for (const LogicalBuffer& b : a.buffers) {
    if (!donated[static_cast<size_t>(b.id)]) frees[static_cast<size_t>(b.last_use)].push_back(b.id);
  }
  FirstFitArena arena;
  size_t next = 0;  // buffers are defined in id order along the schedule
  for (size_t pos = 0; pos < a.schedule.size(); ++pos) {
    for (; next < a.buffers.size() && a.buffers[next].defined_at == static_cast<int64_t>(pos);
         ++next) {
      LogicalBuffer& b = a.buffers[next];
      if (b.donor >= 0) {
        b.offset = a.buffers[static_cast<size_t>(b.donor)].offset;
      } else {
        b.offset = b.size == 0 ? 0 : arena.Allocate(AlignUp(b.size));
      }
      a.total_bytes += AlignUp(b.size);
    }
    for (int64_t id : frees[pos]) {
      const LogicalBuffer& b = a.buffers[static_cast<size_t>(id)];
      if (b.size > 0) arena.Free(b.offset, AlignUp(b.size));
    }
  }
  a.arena_bytes = arena.end();
  return a;
}

}  // namespace detrain::plan
