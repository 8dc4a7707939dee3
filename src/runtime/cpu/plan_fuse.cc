// The load-time folds that let elementwise kernels read and write less memory (plan_folds.h):
// FoldScalarBroadcasts (a broadcast of a scalar read as the scalar) and FuseElementwiseRuns
// (consecutive elementwise kernels of one index space run block by block together). Neither
// changes a bit: each element is computed by the same program from the same values.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/cpu/plan_folds.h"

namespace detrain::runtime::cpu {

namespace {

// A folded broadcast: keeps its operand's one element where its readers read it, in memory of its
// own (the broadcast's buffer is never written).
class ScalarStoreKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext&) const override {
    std::memcpy(value_.get(), arena + from_, static_cast<size_t>(bytes_));
    return Status::Ok();
  }
  int64_t from_ = 0, bytes_ = 0;
  std::unique_ptr<uint64_t> value_ = std::make_unique<uint64_t>(0);  // a stable address
};

}  // namespace

int64_t FoldScalarBroadcasts(const plan::ValidatedPlan& plan,
                             std::vector<std::unique_ptr<CpuKernel>>& kernels) {
  // Who reads each buffer: (kernel, operand number).
  std::vector<std::vector<std::pair<int32_t, size_t>>> readers(plan.buffers().size());
  for (const plan::CheckedKernel& k : plan.kernels()) {
    if (k.spec->has_alias()) continue;
    for (int o = 0; o < k.spec->operands_size(); ++o) {
      for (int32_t b : k.spec->operands(o).buffers())
        readers[static_cast<size_t>(b)].emplace_back(k.id(), static_cast<size_t>(o));
    }
  }
  int64_t folded = 0;
  for (const plan::CheckedKernel& k : plan.kernels()) {
    std::unique_ptr<CpuKernel>& mine = kernels[static_cast<size_t>(k.id())];
    if (!k.spec->has_broadcast() || mine == nullptr || k.in.size() != 1 || k.out.size() != 1 ||
        k.in[0].elements != 1 || k.out[0].elements <= 1 || k.in[0].type != k.out[0].type ||
        plan.proto().buffers(k.out[0].id).is_output()) {
      continue;
    }
    const auto& rs = readers[static_cast<size_t>(k.out[0].id)];
    bool all = !rs.empty();
    for (const auto& [r, input] : rs) {
      CpuKernel* reader = kernels[static_cast<size_t>(r)].get();
      all = all && reader != nullptr && reader->ReadInputAsScalar(input, /*apply=*/false, nullptr);
    }
    if (!all) continue;
    auto store = std::make_unique<ScalarStoreKernel>();
    store->from_ = k.in[0].offset;
    store->bytes_ = k.in[0].bytes;
    for (const auto& [r, input] : rs) {
      kernels[static_cast<size_t>(r)]->ReadInputAsScalar(
          input, /*apply=*/true, reinterpret_cast<const uint8_t*>(store->value_.get()));
    }
    mine = std::move(store);
    ++folded;
  }
  return folded;
}

namespace {

// Consecutive elementwise kernels run block by block together: block b of each, in order, before
// block b + 1 of any (FuseElementwiseRuns).
class FusedRunKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    for (const auto& store : stores_) DETRAIN_RETURN_IF_ERROR(store->Run(arena, ctx));
    for (const BlockedKernel* m : members_) m->Begin(arena);
    const size_t scratch_bytes = static_cast<size_t>(scratch_bytes_);
    ForBlocks(ctx, blocks_, [&](int64_t block) {
      thread_local std::vector<uint64_t> scratch;  // per thread, grown once
      if (scratch.size() * 8 < scratch_bytes) scratch.resize(scratch_bytes / 8 + 1);
      for (const BlockedKernel* m : members_)
        m->RunBlock(arena, block, ctx.isa, reinterpret_cast<uint8_t*>(scratch.data()));
    });
    return Status::Ok();
  }
  void RequestLoops(FusedLoops& loops) override {
    for (const auto& k : stores_) k->RequestLoops(loops);
    for (const auto& k : owned_) k->RequestLoops(loops);
  }
  // Folded broadcasts, scalar constants and one-element kernels within the run, in their order,
  // hoisted to its start (the scalars they make are read by Begin).
  std::vector<std::unique_ptr<CpuKernel>> stores_;
  std::vector<std::unique_ptr<CpuKernel>> owned_;
  std::vector<const BlockedKernel*> members_;
  int64_t blocks_ = 0, scratch_bytes_ = 0;
};

bool Disjoint(const ArrayRef& x, const ArrayRef& y) {
  return x.bytes <= 0 || y.bytes <= 0 || x.offset >= y.offset + y.bytes ||
         y.offset >= x.offset + x.bytes;
}

// Whether `later`'s output may be written block by block after `earlier`'s block and before its
// next: it must not meet what `earlier` reads or writes, except as the very same array (same
// place, element size and count), whose element i block b touches in both.
bool SameArray(const ArrayRef& x, const ArrayRef& y) {
  return x.offset == y.offset && x.bytes == y.bytes && x.elements == y.elements;
}

bool MayFollow(const BlockedKernel& earlier, const BlockedKernel& later) {
  const ArrayRef& out = later.Output();
  for (const ArrayRef& in : earlier.Inputs()) {
    if (!Disjoint(out, in) && !SameArray(out, in)) return false;
  }
  const ArrayRef& prev = earlier.Output();
  if (!Disjoint(out, prev) && !SameArray(out, prev)) return false;
  // What `later` reads that `earlier` wrote is read at the same elements, or not at all; a
  // one-element input is read once, by Begin, before any block runs: not at all.
  for (const ArrayRef& in : later.Inputs()) {
    if (!Disjoint(in, prev) && (in.elements == 1 || !SameArray(in, prev))) return false;
  }
  return true;
}

// Whether a kernel that reads `reads` and writes `writes` may run before the members of `run`
// (kernel ids; `blocked` gives each one's blocked form): it must not read what they write, nor
// write what they read or write. (The members after it are checked against it as they join.)
template <typename Blocked>
bool MayHoist(const std::vector<int32_t>& run, const Blocked& blocked,
              const std::optional<ArrayRef>& writes, const std::vector<ArrayRef>& reads) {
  for (int32_t e : run) {
    const BlockedKernel& m = *blocked(e);
    for (const ArrayRef& r : reads) {
      if (!Disjoint(r, m.Output())) return false;
    }
    if (!writes) continue;
    if (!Disjoint(*writes, m.Output())) return false;
    for (const ArrayRef& in : m.Inputs()) {
      if (!Disjoint(*writes, in)) return false;
    }
  }
  return true;
}

}  // namespace

int64_t FuseElementwiseRuns(const plan::ValidatedPlan& plan,
                            std::vector<std::unique_ptr<CpuKernel>>& kernels) {
  int64_t fused = 0;
  const auto n = static_cast<int32_t>(kernels.size());
  auto blocked = [&](int32_t i) -> BlockedKernel* {
    return kernels[static_cast<size_t>(i)] ? kernels[static_cast<size_t>(i)]->AsBlocked() : nullptr;
  };
  // Whether every input is the index space's size or a scalar (a broadcast read as one).
  auto elementwise = [](const BlockedKernel& k) {
    for (const ArrayRef& in : k.Inputs()) {
      if (in.elements != k.Elements() && in.elements != 1) return false;
    }
    return k.Output().elements == k.Elements();
  };
  auto range = [](int64_t offset, int64_t bytes) {
    ArrayRef a;
    a.offset = offset;
    a.bytes = bytes;
    return a;
  };
  for (int32_t first = 0; first < n; ++first) {
    BlockedKernel* head = blocked(first);
    if (head == nullptr || !elementwise(*head)) continue;
    std::vector<int32_t> run = {first}, stores;
    std::vector<ArrayRef> store_ranges;  // what the hoisted stores read and write
    int32_t last = first;
    for (int32_t next = first + 1; next < n; ++next) {
      // An all-reduce runs in the executor, across the replicas' devices, at its place.
      if (plan.kernel(next).spec->has_all_reduce()) break;
      CpuKernel* k = kernels[static_cast<size_t>(next)].get();
      if (k == nullptr) continue;  // an alias, or folded into another kernel: nothing runs here
      // What runs at the run's head instead of here (the scalars Begin reads): a folded
      // broadcast (it writes only its own memory), a scalar constant (the step count's
      // increment), a one-element kernel (Adam's bias corrections, made at their first use).
      std::optional<ArrayRef> writes;
      std::vector<ArrayRef> reads;
      const plan::CheckedKernel& spec = plan.kernel(next);
      BlockedKernel* b = k->AsBlocked();
      bool hoist = true;
      if (auto* store = dynamic_cast<ScalarStoreKernel*>(k)) {
        reads.push_back(range(store->from_, store->bytes_));
      } else if (spec.spec->has_constant() && spec.out.size() == 1 && spec.out[0].elements == 1 &&
                 head->Elements() > 1) {
        writes = spec.out[0];
      } else if (b != nullptr && b->Elements() == 1 && head->Elements() > 1) {
        writes = b->Output();
        reads = b->Inputs();
      } else {
        hoist = false;
      }
      if (hoist) {
        if (!MayHoist(run, blocked, writes, reads)) break;
        stores.push_back(next);
        if (writes) store_ranges.push_back(*writes);
        store_ranges.insert(store_ranges.end(), reads.begin(), reads.end());
        continue;
      }
      if (b == nullptr || b->Elements() != head->Elements() || !elementwise(*b)) break;
      bool ok = true;
      for (int32_t e : run) ok = ok && MayFollow(*blocked(e), *b);
      for (const ArrayRef& r : store_ranges) ok = ok && Disjoint(b->Output(), r);
      if (!ok) break;
      run.push_back(next);
      last = next;
    }
    if (run.size() < 2) continue;
    auto group = std::make_unique<FusedRunKernel>();
    group->blocks_ = head->Blocks();
    for (int32_t e : stores) {
      if (e > last) break;  // after the run's last member: stays where it is
      group->stores_.push_back(std::move(kernels[static_cast<size_t>(e)]));
    }
    for (int32_t e : run) {
      BlockedKernel* m = blocked(e);
      group->members_.push_back(m);
      group->scratch_bytes_ = std::max(group->scratch_bytes_, m->BlockScratchBytes());
      group->owned_.push_back(std::move(kernels[static_cast<size_t>(e)]));
    }
    kernels[static_cast<size_t>(first)] = std::move(group);
    fused += static_cast<int64_t>(run.size());
    first = last;
  }
  return fused;
}

}  // namespace detrain::runtime::cpu
