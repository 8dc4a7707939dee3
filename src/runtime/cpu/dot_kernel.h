// The dot kernel (kernels_linalg.cc) as the load-time folds see it (plan_folds.h): its operands,
// sizes and in-place views, and the transposed result a fold may make it write instead of its
// own. Internal to runtime/cpu.
//
// Determinism: every output element is one fmaf chain over k ascending from +0 (DESIGN.md §2),
// whichever layout it is written in. Thread safety: Run may be called from one thread at a time.
#ifndef DETRAIN_RUNTIME_CPU_DOT_KERNEL_H_
#define DETRAIN_RUNTIME_CPU_DOT_KERNEL_H_

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/cpu/kernels.h"

namespace detrain::runtime::cpu {

class DotKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext& ctx) const override;

  ArrayRef lhs_, rhs_, out_;
  std::vector<int64_t> lhs_perm_, rhs_perm_;
  // Strides (batch, rows, columns) of A = lhs as [b, m, k] and B = rhs as [b, k, n], read in
  // place; nullopt where a copy is needed.
  std::optional<std::array<int64_t, 3>> lhs_view_, rhs_view_;
  // Set by FoldDotTranspose: the transpose's result, written instead of out_.
  std::optional<ArrayRef> transposed_out_;
  int64_t batch_ = 0, m_ = 0, n_ = 0, k_ = 0;
};

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_DOT_KERNEL_H_
