// libFuzzer harness: safetensors files (base/safetensors.h ParseSafetensors). Whatever the bytes,
// the parser returns a file or an error; a file it accepts serializes (when it can) to bytes
// that parse again and serialize to the same bytes.
#include <cstddef>
#include <cstdint>

#include "base/budget.h"
#include "base/safetensors.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detrain::SetMemoryBudget({int64_t{256} << 20, int64_t{1} << 30});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = detrain::ParseSafetensors(detrain::fuzz::AsText(data, size));
  if (!parsed.ok()) return 0;
  auto once = detrain::SerializeSafetensors(*parsed);
  if (!once.ok()) return 0;  // e.g. metadata the writer refuses: an error, not a crash
  auto again = detrain::ParseSafetensors(*once);
  if (!again.ok()) {
    detrain::fuzz::PropertyFailed("SerializeSafetensors output does not parse",
                                  again.status().ToString());
  }
  auto twice = detrain::SerializeSafetensors(*again);
  if (!twice.ok() || *twice != *once) {
    detrain::fuzz::PropertyFailed("safetensors parse/serialize is not a fixed point", "");
  }
  return 0;
}
