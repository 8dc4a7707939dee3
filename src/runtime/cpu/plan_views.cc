// See plan_views.h.
#include "runtime/cpu/plan_views.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "compiler/ir/element_type.h"
#include "compiler/plan/buffer_assignment.h"
#include "runtime/cpu/copy.h"

namespace detrain::runtime::cpu {
namespace {

namespace pb = ::detrain::plan::v2;

// The buffers and the links between them: parent[b] = the buffer b lies in (or -1), at byte
// `at[b]` of it.
struct Links {
  std::vector<int32_t> parent;
  std::vector<int64_t> at;
  std::vector<char> fixed;  // never a view or an array with views
  std::vector<char> entry;  // an entry parameter's buffer: never a view
  int64_t views = 0;

  // The outermost array b lies in, and where.
  int32_t Root(int32_t b, int64_t* offset) const {
    int64_t at_root = 0;
    while (parent[static_cast<size_t>(b)] >= 0) {
      at_root += at[static_cast<size_t>(b)];
      b = parent[static_cast<size_t>(b)];
    }
    if (offset != nullptr) *offset = at_root;
    return b;
  }

  // Makes `view` the bytes of `array` from byte `offset`, where both may take part and the
  // offset keeps the plan's alignment.
  void Link(const plan::ValidatedPlan& plan, int32_t view, int32_t array, int64_t offset) {
    const size_t v = static_cast<size_t>(view);
    if (view == array || fixed[v] || entry[v] || parent[v] >= 0 ||
        fixed[static_cast<size_t>(array)] || offset % plan.proto().alignment() != 0 ||
        plan.buffer(view).bytes == 0 || offset + plan.buffer(view).bytes > plan.buffer(array).bytes)
      return;
    if (Root(array, nullptr) == view) return;  // a view of itself
    parent[v] = array;
    at[v] = offset;
    ++views;
  }
};

// The byte offset of a slice's result in its operand, or -1 where the result is not one
// contiguous range of it.
int64_t SliceOffset(const pb::SliceSpec& s, const plan::Array& in, const plan::Array& out) {
  const size_t rank = in.dims.size();
  if (out.dims.size() != rank || s.starts_size() != static_cast<int>(rank) ||
      s.strides_size() != static_cast<int>(rank))
    return -1;
  size_t first = 0;  // the first dim of more than one element
  while (first < rank && out.dims[first] == 1) ++first;
  for (size_t d = first; d < rank; ++d) {
    const int i = static_cast<int>(d);
    if (out.dims[d] > 1 && s.strides(i) != 1) return -1;
    if (d > first && (s.starts(i) != 0 || out.dims[d] != in.dims[d])) return -1;
  }
  const std::vector<int64_t> strides = RowMajorStrides(in.dims);
  int64_t element = 0;
  for (size_t d = 0; d < rank; ++d) element += s.starts(static_cast<int>(d)) * strides[d];
  return element * ir::ElementTypeByteSize(in.type);
}

// Links the views of kernel k (plan_views.h).
void ViewsOf(const plan::ValidatedPlan& plan, const pb::Kernel& k, Links* links) {
  if (k.outputs_size() != 1) return;
  const int32_t out = k.outputs(0);
  const plan::Array& o = plan.buffer(out);
  auto single = [&](int i) {
    return k.operands(i).buffers_size() == 1 ? k.operands(i).buffers(0) : -1;
  };
  if ((k.has_copy() || k.has_slice()) && k.operands_size() == 1) {
    const int32_t in = single(0);
    if (in < 0) return;
    const plan::Array& a = plan.buffer(in);
    const int64_t at = k.has_copy() ? (a.bytes == o.bytes ? 0 : -1) : SliceOffset(k.slice(), a, o);
    if (at >= 0) links->Link(plan, out, in, at);
    return;
  }
  if (!k.has_concatenate()) return;
  const size_t dim = static_cast<size_t>(k.concatenate());
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < o.dims.size(); ++d) {
    if (d < dim) outer *= o.dims[d];
    if (d > dim) inner *= o.dims[d];
  }
  if (outer != 1 || dim >= o.dims.size()) return;
  std::vector<int32_t> operands;
  for (int i = 0; i < k.operands_size(); ++i) operands.push_back(single(i));
  int64_t row = 0;  // the concatenated dim's index where operand i starts
  for (size_t i = 0; i < operands.size(); ++i) {
    const int32_t in = operands[i];
    if (in < 0) return;
    const int64_t rows = plan.buffer(in).dims[dim];
    if (std::count(operands.begin(), operands.end(), in) == 1)
      links->Link(plan, in, out, row * inner * ir::ElementTypeByteSize(o.type));
    row += rows;
  }
}

}  // namespace

Result<std::unique_ptr<plan::ValidatedPlan>> PlaceViews(const plan::ValidatedPlan& plan,
                                                        int64_t* views) {
  *views = 0;
  const pb::Plan& p = plan.proto();
  const size_t n = static_cast<size_t>(p.buffers_size());
  const int32_t end_of_plan = p.kernels_size();
  for (const pb::Kernel& k : p.kernels()) {
    if (k.has_while_loop()) return std::unique_ptr<plan::ValidatedPlan>();
  }
  Links links;
  links.parent.assign(n, -1);
  links.at.assign(n, 0);
  links.fixed.assign(n, 0);
  links.entry.assign(n, 0);
  for (const pb::Buffer& b : p.buffers()) {
    const size_t i = static_cast<size_t>(b.id());
    if (b.is_output() || b.size() == 0) links.fixed[i] = 1;
    if (b.has_donor()) {
      links.fixed[i] = 1;
      links.fixed[static_cast<size_t>(b.donor())] = 1;
    }
  }
  for (const pb::EntryParameter& e : p.parameters()) {
    for (int32_t b : e.buffers()) links.entry[static_cast<size_t>(b)] = 1;
  }
  // A result where the plan put an entry parameter (its donor, or a parameter whose block it took
  // over after the parameter's last read) must stay there: the executor reads a carried result
  // as in place by the plan's offsets (Executor::CarriedInPlace). Such pairs keep one place here.
  std::vector<std::pair<int32_t, int32_t>> together;
  for (int32_t r : p.outputs()) {
    const plan::Array& out = plan.buffer(r);
    for (const pb::EntryParameter& e : p.parameters()) {
      for (int32_t b : e.buffers()) {
        if (b == r || out.bytes == 0 || plan.buffer(b).offset != out.offset) continue;
        links.fixed[static_cast<size_t>(b)] = 1;
        together.emplace_back(r, b);
      }
    }
  }
  for (const pb::Kernel& k : p.kernels()) ViewsOf(plan, k, &links);
  if (links.views == 0) return std::unique_ptr<plan::ValidatedPlan>();
  // Donated pairs share their donor's slice, as the plan placed them; so do the pairs above. All
  // of them are fixed, so none holds a view, and each group is a set of buffers at one offset whose
  // lifetimes meet only where the plan made them (a donation).
  for (const pb::Buffer& b : p.buffers()) {
    if (b.has_donor()) links.parent[static_cast<size_t>(b.id())] = b.donor();
  }
  for (const auto& [a, b] : together) {
    const int32_t ra = links.Root(a, nullptr), rb = links.Root(b, nullptr);
    if (ra != rb) links.parent[static_cast<size_t>(rb)] = ra;  // at offset 0, as all of them
  }

  // Each group's lifetime, then first fit in schedule order (buffer_assignment.cc's rule).
  std::vector<int32_t> root(n);
  std::vector<int64_t> offset(n, 0);
  std::vector<int32_t> first(n, end_of_plan), last(n, -1);
  std::vector<int64_t> extent(n, 0);  // a group's bytes: the farthest end of any member
  for (const pb::Buffer& b : p.buffers()) {
    const size_t i = static_cast<size_t>(b.id());
    root[i] = links.Root(b.id(), &offset[i]);
    const size_t r = static_cast<size_t>(root[i]);
    first[r] = std::min(first[r], b.defined_by());
    last[r] = std::max(last[r], b.is_output() ? end_of_plan : b.last_use());
    extent[r] = std::max(extent[r], offset[i] + b.size());
  }
  std::vector<std::vector<int32_t>> starts(static_cast<size_t>(end_of_plan) + 1),
      ends(static_cast<size_t>(end_of_plan) + 1);
  for (size_t i = 0; i < n; ++i) {
    if (root[i] != static_cast<int32_t>(i) || extent[i] == 0) continue;
    starts[static_cast<size_t>(first[i])].push_back(static_cast<int32_t>(i));
    ends[static_cast<size_t>(last[i])].push_back(static_cast<int32_t>(i));
  }
  const int64_t align = p.alignment();
  auto aligned = [&](int32_t r) {
    return (extent[static_cast<size_t>(r)] + align - 1) / align * align;
  };
  std::vector<int64_t> place(n, 0);
  plan::FirstFitArena arena;
  for (size_t pos = 0; pos < starts.size(); ++pos) {
    for (int32_t r : starts[pos]) place[static_cast<size_t>(r)] = arena.Allocate(aligned(r));
    for (int32_t r : ends[pos]) arena.Free(place[static_cast<size_t>(r)], aligned(r));
  }
  pb::Plan placed = p;
  for (size_t i = 0; i < n; ++i) {
    if (p.buffers(static_cast<int>(i)).size() == 0) continue;
    placed.mutable_buffers(static_cast<int>(i))
        ->set_offset(place[static_cast<size_t>(root[i])] + offset[i]);
  }
  placed.set_arena_bytes(arena.end());
  DETRAIN_ASSIGN_OR_RETURN(plan::ValidatedPlan validated, plan::ValidatePlan(std::move(placed)));
  *views = links.views;
  return std::make_unique<plan::ValidatedPlan>(std::move(validated));
}

}  // namespace detrain::runtime::cpu
