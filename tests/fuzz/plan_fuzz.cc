// libFuzzer harness: serialized plans (stage 4; schemas/plan.md). The bytes go to the one plan
// reader (compiler/plan/reader.h: every buffer, kernel, spec, scalar program and loop checked)
// through runtime::Executor::Create, which then prepares each kernel for a CPU device — the code
// a hostile 04.plan.pb reaches before anything runs; a plan the reader accepts also goes to the
// CUDA code generator, which trusts the reader's checks; and the bytes go to plan::PlanToText
// (`detrain inspect`). A plan that loads is not executed: its kernels could legitimately run
// for as long as its shapes say.
#include <cstddef>
#include <cstdint>

#include "base/budget.h"
#include "compiler/codegen/cuda/cuda_program.h"
#include "compiler/plan/builder.h"
#include "compiler/plan/reader.h"
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
  auto plan = detrain::plan::ReadPlan(bytes);
  if (plan.ok()) (void)detrain::codegen::cuda::GenerateCuda(*plan);
  (void)detrain::plan::PlanToText(bytes);
  return 0;
}
