// Shared helpers of the runtime tests: bitwise comparison with the first differing element
// named, the ISA paths this CPU runs, and train-step arguments for the examples. Test-only.
#ifndef DETRAIN_TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_
#define DETRAIN_TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/isa.h"
#include "base/status.h"
#include "compiler/ir/literal.h"
#include "compiler/ir/module.h"

namespace detrain::runtime {

inline std::vector<Isa> SupportedIsas() {
  std::vector<Isa> out;
  for (Isa isa : kAllIsas) {
    if (IsaSupported(isa)) out.push_back(isa);
  }
  return out;
}

// Bitwise equality of two lists of arrays; a failure names the array and the first element.
inline void ExpectSameBits(const std::vector<ir::Literal>& want,
                           const std::vector<ir::Literal>& got) {
  ASSERT_EQ(want.size(), got.size()) << "number of result arrays";
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].shape().ToString(), got[i].shape().ToString()) << "result " << i;
    const std::string& a = want[i].bytes();
    const std::string& b = got[i].bytes();
    if (a == b) continue;
    size_t size = static_cast<size_t>(ir::ElementTypeByteSize(want[i].shape().type()));
    size_t j = 0;
    while (j < a.size() && a[j] == b[j]) ++j;
    size_t element = j / size;
    uint64_t x = 0, y = 0;
    std::memcpy(&x, a.data() + element * size, size);
    std::memcpy(&y, b.data() + element * size, size);
    FAIL() << "result " << i << " (" << want[i].shape().ToString() << ") differs first at element "
           << element << ": bits 0x" << std::hex << x << " expected, 0x" << y << " got";
  }
}

// Deterministic train-step arguments for `step`: f32 values in [-1, 1), s32 values in {0, 1}
// (valid labels and tokens for every example), u32 keys, the count 0 and learning rate 1e-3
// for the scalar parameters named `count` and `learning_rate`.
std::vector<ir::Literal> TrainStepArguments(const ir::Module& step, uint64_t seed);

// `module` through the default pass pipeline to its serialized plan (stage 4).
Result<std::string> OptimizedPlan(const ir::Module& module);

}  // namespace detrain::runtime

#endif  // DETRAIN_TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_
