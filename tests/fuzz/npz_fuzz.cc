// libFuzzer harness: zip archives and .npz files (base/zip.h, base/npz.h). The bytes go through
// ReadZipDirectory and every member through ExtractZipEntry (whose result must be exactly the
// declared size), then through ParseNpz, all members and a named subset. Properties of the
// memory budget: no accepted deflated member declares more than deflate can expand to (1032:1),
// and a member that extracts under the budget is refused, as over the budget, under a budget
// one byte smaller — before it is inflated, so with CheckExtractionBudget's message.
#include <cstddef>
#include <cstdint>

#include "base/budget.h"
#include "base/npz.h"
#include "base/zip.h"
#include "fuzz_util.h"

namespace {
// Small enough that no accepted archive can exhaust the fuzzer's 2 GiB RSS limit.
constexpr uint64_t kMaxTotal = uint64_t{64} << 20;
constexpr detrain::MemoryBudget kBudget = {int64_t{256} << 20, int64_t{1} << 30};

// Extracted under the budget: one byte less must refuse it, from the declared size alone.
void CheckBudgetBoundary(std::string_view bytes, const detrain::ZipEntry& e) {
  if (e.size < 2) return;  // a budget of 0 means the default
  const int64_t less = static_cast<int64_t>(e.size) - 1;
  detrain::SetMemoryBudget({less, less});
  const detrain::Status expected = detrain::CheckExtractionBudget({&e});
  auto refused = detrain::ExtractZipEntry(bytes, e);
  detrain::SetMemoryBudget(kBudget);
  if (refused.ok() || expected.ok() || refused.status().message() != expected.message() ||
      refused.status().code() != detrain::StatusCode::kResourceExhausted) {
    detrain::fuzz::PropertyFailed("a member one byte past the budget was not refused up front",
                                  detrain::PrintableName(e.name));
  }
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detrain::SetMemoryBudget(kBudget);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes = detrain::fuzz::AsText(data, size);
  auto entries = detrain::ReadZipDirectory(bytes, kMaxTotal);
  if (entries.ok()) {
    for (const detrain::ZipEntry& e : *entries) {
      (void)detrain::PrintableName(e.name);
      if (e.method == 8 && e.size / 1032 > e.compressed_size) {
        detrain::fuzz::PropertyFailed("a member declares more than deflate can expand to",
                                      detrain::PrintableName(e.name));
      }
      auto member = detrain::ExtractZipEntry(bytes, e);
      if (member.ok() && member->size() != e.size) {
        detrain::fuzz::PropertyFailed("ExtractZipEntry returned other than the declared size",
                                      detrain::PrintableName(e.name));
      }
      if (member.ok()) CheckBudgetBoundary(bytes, e);
    }
  }
  (void)detrain::ParseNpz(bytes, kMaxTotal);
  (void)detrain::ParseNpz(bytes, {"x", "y.npy"}, kMaxTotal);
  return 0;
}
