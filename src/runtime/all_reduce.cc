// See all_reduce.h.
#include "runtime/all_reduce.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "compiler/plan/scalar_eval.h"
#include "compiler/semantics/semantics.h"

namespace detrain::runtime {
namespace {

// The kernel's replica groups, checked to name each of `replicas` replicas once; no groups: all
// replicas form one.
Result<std::vector<std::vector<int64_t>>> ReplicaGroups(const plan::v2::AllReduceSpec& spec,
                                                        int64_t replicas) {
  std::vector<std::vector<int64_t>> groups;
  for (const auto& g : spec.replica_groups())
    groups.emplace_back(g.replicas().begin(), g.replicas().end());
  if (groups.empty()) {
    groups.emplace_back();
    for (int64_t r = 0; r < replicas; ++r) groups.back().push_back(r);
  }
  std::vector<int> covered(static_cast<size_t>(replicas), 0);
  for (const auto& g : groups) {
    for (int64_t r : g) {
      if (r < 0 || r >= replicas || covered[static_cast<size_t>(r)]++) {
        return InvalidArgument("all-reduce replica groups must name each of the " +
                               std::to_string(replicas) + " replicas once");
      }
    }
  }
  if (std::count(covered.begin(), covered.end(), 0) != 0)
    return InvalidArgument("all-reduce replica groups must cover every replica");
  return groups;
}

}  // namespace

Status HostAllReduce(const plan::CheckedKernel& k, std::vector<std::unique_ptr<Device>>& devices,
                     int64_t replicas) {
  const plan::Array& in = k.in[0];  // the reader checked: one array in, one of its shape out
  const plan::Array& out = k.out[0];
  DETRAIN_ASSIGN_OR_RETURN(auto groups, ReplicaGroups(k.spec->all_reduce(), replicas));
  std::vector<std::string> operand(static_cast<size_t>(replicas));
  for (int64_t r = 0; r < replicas; ++r) {
    operand[static_cast<size_t>(r)].resize(static_cast<size_t>(in.bytes));
    DETRAIN_RETURN_IF_ERROR(devices[static_cast<size_t>(r)]->CopyOut(
        in.id, operand[static_cast<size_t>(r)].data(), in.bytes));
  }
  std::string sum(static_cast<size_t>(out.bytes), '\0');
  for (const auto& g : groups) {
    ir::DispatchElementType(in.type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto combine = [&](T a, T b) { return plan::Combine<T>(k.combiner, a, b); };
      std::vector<T> values;
      for (int64_t i = 0; i < in.elements; ++i) {
        values.clear();
        for (int64_t r : g) {
          T v;
          std::memcpy(&v, operand[static_cast<size_t>(r)].data() + i * sizeof(T), sizeof(T));
          values.push_back(v);
        }
        T total = semantics::PairwiseTreeInPlace(values.data(), static_cast<int64_t>(values.size()),
                                                 combine);
        std::memcpy(sum.data() + i * sizeof(T), &total, sizeof(T));
      }
    });
    for (int64_t r : g)
      DETRAIN_RETURN_IF_ERROR(
          devices[static_cast<size_t>(r)]->CopyIn(out.id, sum.data(), out.bytes));
  }
  return Status::Ok();
}

}  // namespace detrain::runtime
