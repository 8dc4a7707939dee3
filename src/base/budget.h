// The memory budget: how many bytes one tensor, and one program's tensors together, may take.
// Checked before allocating, so a legal but too-large program or input ("f32[100000, 100000]",
// a 40 GB .npy) is a clear error naming the tensor and the flag that raises the limit, never an
// uncaught std::bad_alloc or the kernel's OOM killer.
//
//   DETRAIN_RETURN_IF_ERROR(CheckTensorBytes(bytes, "parameter 'w1' f32[100000,100000]"));
//
// The budget is process-wide, set once by the CLI (`--max-memory`) before any work starts. It
// decides only whether work is attempted, never a value: nothing hashed depends on it.
//
// Thread safety: reads and the setter are atomic; set it before starting threads.
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

}  // namespace detrain

#endif  // DETRAIN_BASE_BUDGET_H_
