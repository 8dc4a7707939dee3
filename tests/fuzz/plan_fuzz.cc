// libFuzzer harness: serialized CPU plans (stage 4; schemas/cpu-plan.md). The bytes go to
// runtime::Executor::Create, which parses the protobuf, checks every buffer, kernel and
// parameter and prepares each kernel for a CPU device (runtime/cpu: CheckBuffers, the scalar
// program decoder, PrepareKernel) — the code a hostile 04.plan.pb reaches before anything runs —
// and to codegen::cpu::PlanToText (`detrain inspect`). A plan that loads is not executed: its
// kernels could legitimately run for as long as its shapes say.
#include <cstddef>
#include <cstdint>

#include "base/budget.h"
#include "compiler/codegen/cpu/plan.h"
#include "fuzz_util.h"
#include "runtime/executor.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detrain::SetMemoryBudget({int64_t{256} << 20, int64_t{1} << 30});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes = detrain::fuzz::AsText(data, size);
  detrain::runtime::ExecutorOptions options;
  options.threads = 1;
  options.isa = detrain::Isa::kScalar;
  (void)detrain::runtime::Executor::Create(bytes, options);
  (void)detrain::codegen::cpu::PlanToText(bytes);
  return 0;
}
