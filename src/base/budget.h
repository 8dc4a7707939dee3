// The memory budget: how many bytes one tensor, and one program's tensors together, may take.
// Checked before allocating, so a legal but too-large program or input ("f32[100000, 100000]",
// a 40 GB .npy) is a clear error naming the tensor and the flag that raises the limit, never an
// uncaught std::bad_alloc or the kernel's OOM killer.
//
//   DETRAIN_RETURN_IF_ERROR(CheckTensorBytes(bytes, "parameter 'w1' f32[100000,100000]"));
//
// The budget is process-wide, set once by the CLI (`--max-memory`) before any work starts. It
// decides only whether work is attempted, never a value: nothing hashed depends on it. An excess
// is a ResourceExhausted error: a limit of the machine, not a fault of the input (a verifier's
// verdict is never FAILED for it).
//
// A program's declared sizes (a parameter, a batch input, an instruction's result) are checked
// with CheckDeclared*Bytes, which a DeferDeclaredSizes scope can postpone: a verifier compares
// what a bundle's program compiles to with the record before it refuses the program for its size,
// so that a program that differs is found to differ under any budget.
//
// Thread safety: reads and the setter are atomic; set it before starting threads. A
// DeferDeclaredSizes scope is the thread's own.
#ifndef DETRAIN_BASE_BUDGET_H_
#define DETRAIN_BASE_BUDGET_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace detrain {

struct MemoryBudget {
  int64_t max_tensor_bytes = 0;  // one tensor (buffer, constant, input file's data)
  int64_t max_total_bytes = 0;   // all of one program's buffers together
};

// The default: both limits at 3/4 of the machine's physical memory (at least 1 GiB).
MemoryBudget DefaultMemoryBudget();

MemoryBudget CurrentMemoryBudget();
void SetMemoryBudget(const MemoryBudget& budget);

// "1.5 GiB", "512 MiB", "100 B": for messages.
std::string FormatBytes(int64_t bytes);

// Parses a size for --max-memory: a byte count with an optional K, M, G or T suffix (powers of
// 1024; "64G", "1.5T" is not accepted). An error names the text.
Result<int64_t> ParseByteSize(std::string_view text);

// An error (InvalidArgument) when `bytes` exceeds the budget's one-tensor limit; `what` names
// the tensor, e.g. "parameter 'w1' f32[100000,100000]".
Status CheckTensorBytes(int64_t bytes, std::string_view what);
// The same against the total limit; `what` names the whole, e.g. "the plan's buffers".
Status CheckTotalBytes(int64_t bytes, std::string_view what);

// The same checks of a size a program declares (nothing is allocated yet). Inside a
// DeferDeclaredSizes scope on this thread they record the first excess there and succeed.
Status CheckDeclaredTensorBytes(int64_t bytes, std::string_view what);
Status CheckDeclaredTotalBytes(int64_t bytes, std::string_view what);

// While it lives, this thread's declared-size checks are postponed: the first excess is kept,
// not returned. Whoever opens one must not allocate what the checks passed over (the front end
// only builds a program's text and shapes, never its tensors) and must report excess() when the
// scope's work is done. Scopes nest; the innermost records.
class DeferDeclaredSizes {
 public:
  DeferDeclaredSizes();
  ~DeferDeclaredSizes();
  DeferDeclaredSizes(const DeferDeclaredSizes&) = delete;
  DeferDeclaredSizes& operator=(const DeferDeclaredSizes&) = delete;

  // The first declared size over the budget since the scope began; OK when none was.
  const Status& excess() const { return excess_; }

  // A declared size's check result: `s` itself outside any scope on this thread; inside one,
  // OK, the scope keeping `s` when it is its first excess.
  static Status Postpone(Status s);

 private:
  DeferDeclaredSizes* outer_;
  Status excess_;
};

}  // namespace detrain

#endif  // DETRAIN_BASE_BUDGET_H_
