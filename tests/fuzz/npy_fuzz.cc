// libFuzzer harness: .npy arrays (base/npy.h ParseNpy). Whatever the bytes, ParseNpy returns an
// array or an error; an array it accepts serializes to bytes that parse again and serialize to
// the same bytes (SerializeNpy writes the one canonical header).
#include <cstddef>
#include <cstdint>

#include "base/budget.h"
#include "base/npy.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detrain::SetMemoryBudget({int64_t{256} << 20, int64_t{1} << 30});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = detrain::ParseNpy(detrain::fuzz::AsText(data, size));
  if (!parsed.ok()) return 0;
  std::string once = detrain::SerializeNpy(*parsed);
  auto again = detrain::ParseNpy(once);
  if (!again.ok()) {
    detrain::fuzz::PropertyFailed("SerializeNpy output does not parse", again.status().ToString());
  }
  if (detrain::SerializeNpy(*again) != once) {
    detrain::fuzz::PropertyFailed("npy parse/serialize is not a fixed point", "");
  }
  return 0;
}
