// libFuzzer harness: zip archives and .npz files (base/zip.h, base/npz.h). The bytes go through
// ReadZipDirectory and every member through ExtractZipEntry (whose result must be exactly the
// declared size), then through ParseNpz, all members and a named subset.
#include <cstddef>
#include <cstdint>

#include "base/budget.h"
#include "base/npz.h"
#include "base/zip.h"
#include "fuzz_util.h"

namespace {
// Small enough that no accepted archive can exhaust the fuzzer's 2 GiB RSS limit.
constexpr uint64_t kMaxTotal = uint64_t{64} << 20;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detrain::SetMemoryBudget({int64_t{256} << 20, int64_t{1} << 30});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes = detrain::fuzz::AsText(data, size);
  auto entries = detrain::ReadZipDirectory(bytes, kMaxTotal);
  if (entries.ok()) {
    for (const detrain::ZipEntry& e : *entries) {
      (void)detrain::PrintableName(e.name);
      auto member = detrain::ExtractZipEntry(bytes, e);
      if (member.ok() && member->size() != e.size) {
        detrain::fuzz::PropertyFailed("ExtractZipEntry returned other than the declared size",
                                      detrain::PrintableName(e.name));
      }
    }
  }
  (void)detrain::ParseNpz(bytes, kMaxTotal);
  (void)detrain::ParseNpz(bytes, {"x", "y.npy"}, kMaxTotal);
  return 0;
}
