// Internal to the plan reader (reader.h): the checks of one kernel's spec against its buffers,
// one function per family of specs (check_compute.cc, check_movement.cc). Each takes a kernel
// whose `in` and `out` hold its operands' and results' arrays, checks what the spec says about
// them, and decodes the spec's scalar programs into the kernel.
//
// Thread safety: pure functions of their kernel.
#ifndef DETRAIN_COMPILER_PLAN_CHECK_SPECS_H_
#define DETRAIN_COMPILER_PLAN_CHECK_SPECS_H_

#include <string>

#include "base/status.h"
#include "compiler/plan/reader.h"

namespace detrain::plan::internal {

// "plan: kernel ID (NAME): what" — every kernel error names the kernel the same way.
Status KernelError(const v2::Kernel& k, const std::string& what);

// The spec of a kernel that computes (neither an alias, a loop nor an all-reduce), dispatched to
// its family below.
Status CheckSpec(CheckedKernel& k);

// check_compute.cc
Status CheckElementwise(CheckedKernel& k);  // elementwise and reduction fusions
Status CheckReduce(CheckedKernel& k);
Status CheckReduceWindow(CheckedKernel& k);
Status CheckDot(CheckedKernel& k);
Status CheckConvolution(CheckedKernel& k);
Status CheckAllReduce(CheckedKernel& k);

// check_movement.cc
Status CheckMovement(CheckedKernel& k);  // constant, iota, copy, transpose .. dynamic-update-slice
Status CheckGather(CheckedKernel& k);
Status CheckScatter(CheckedKernel& k);
Status CheckThreefry(CheckedKernel& k);

}  // namespace detrain::plan::internal

#endif  // DETRAIN_COMPILER_PLAN_CHECK_SPECS_H_
