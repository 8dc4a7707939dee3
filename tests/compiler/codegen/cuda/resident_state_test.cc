// The train loop on emulated GPUs (emulator.h) with the state resident (issue 38): steps under
// the step digest xxh3-128-chunked keep the state on the GPU — the next step reads it where it
// lies, the digests are computed there by the program's digest kernels — and give the CPU's
// records bit for bit; each step moves its batch in and at most 4 KiB besides (its key and
// learning rate in, its loss and one 16-byte digest per state tensor out). The MLP runs in the
// long checks (cuda_resident_state_slow_test).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "driver/compile.h"
#include "runtime/train/session.h"
#include "tests/compiler/codegen/cuda/emulator.h"

namespace detrain::testing {
namespace {

// `program`: a path under the source tree.
std::unique_ptr<runtime::RunSession> Open(const std::string& program,
                                          const runtime::SessionOptions& o) {
  const std::string path = std::string(DETRAIN_SOURCE_DIR) + "/" + program;
  Result<driver::CompileResult> c = driver::Compile(path, {});
  EXPECT_TRUE(c.ok()) << c.status().message();
  if (!c.ok()) return nullptr;
  Result<std::unique_ptr<runtime::RunSession>> s = runtime::RunSession::Open(std::move(*c), o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(*s) : nullptr;
}

void CheckResidentSteps(const std::string& example, int64_t steps, uint32_t max_blocks = 0) {
  runtime::SessionOptions cpu_options;
  cpu_options.step_digest = attest::DigestPolicy::kXxh3Chunked;
  cpu_options.steps = steps;
  runtime::SessionOptions gpu_options = cpu_options;
  auto traffic = std::make_shared<GpuTraffic>();
  gpu_options.executor.backend = runtime::Backend::kCuda;
  gpu_options.executor.backend_options = EmulatedCuda(1, max_blocks, nullptr, nullptr, traffic);
  std::unique_ptr<runtime::RunSession> cpu = Open(example, cpu_options);
  std::unique_ptr<runtime::RunSession> gpu = Open(example, gpu_options);
  ASSERT_TRUE(cpu != nullptr && gpu != nullptr);
  ThreadPool pool(1);
  Result<runtime::TrainState> a = cpu->InitialState(), b = gpu->InitialState();
  ASSERT_TRUE(a.ok() && b.ok());
  int64_t state_bytes = 0;
  for (const runtime::StateTensor& s : *b)
    state_bytes += static_cast<int64_t>(s.value.bytes().size());
  runtime::TrainingData data = gpu->data();  // for the batches' sizes
  attest::Digest256 prev{};
  int64_t resident_steps = 0;
  for (int64_t t = 0; t < steps; ++t) {
    SCOPED_TRACE(example + " step " + std::to_string(t));
    const GpuTraffic before = *traffic;
    Result<runtime::StepOutcome> x = cpu->Step(t, prev, &*a, &pool, /*keep=*/true);
    Result<runtime::StepOutcome> y = gpu->Step(t, prev, &*b, &pool, /*keep=*/true);
    ASSERT_TRUE(x.ok() && y.ok() && x->finite && y->finite);
    ASSERT_EQ(x->record.hash, y->record.hash);
    ASSERT_EQ(x->record.tensors, y->record.tensors);
    prev = x->record.hash;
    const int64_t in = traffic->to_device - before.to_device;
    const int64_t out = traffic->to_host - before.to_host;
    Result<runtime::Batch> batch = data.BatchOf(t);
    ASSERT_TRUE(batch.ok());
    const int64_t batch_bytes =
        static_cast<int64_t>(batch->features.bytes().size() + batch->labels.bytes().size());
    std::printf("%s step %lld: %lld bytes in (batch %lld), %lld out, %lld launches; state %lld\n",
                example.c_str(), static_cast<long long>(t), static_cast<long long>(in),
                static_cast<long long>(batch_bytes), static_cast<long long>(out),
                static_cast<long long>(traffic->launches - before.launches),
                static_cast<long long>(state_bytes));
    // The first step copies the state in (and lays out the digest once); a step that takes the
    // roots or evaluates reads the state out.
    const runtime::StepSchedule& sched = gpu->schedule();
    if (t == 0 || sched.TakesRoots(t) || sched.Evaluates(t)) continue;
    EXPECT_LE(in, batch_bytes + 4096);
    EXPECT_LE(out, 4096);
    ++resident_steps;
  }
  EXPECT_GE(resident_steps, steps - 3);
  // What the GPU holds is the CPU's state.
  ASSERT_TRUE(cpu->Sync(&*a).ok());
  ASSERT_TRUE(gpu->Sync(&*b).ok());
  for (size_t i = 0; i < a->size(); ++i)
    EXPECT_EQ((*a)[i].value.bytes(), (*b)[i].value.bytes()) << (*a)[i].name;
}

#if !defined(DETRAIN_RESIDENT_MLP)
TEST(ResidentState, BreastCancerMovesOnlyItsBatches) {
  CheckResidentSteps("examples/breast_cancer/train.dt", 6);
}
// Grids capped at 4 blocks a dimension (the emulator runs every block on one core).
TEST(ResidentState, DigitsMovesOnlyItsBatches) {
  CheckResidentSteps("examples/digits/train.dt", 3, 4);
}
TEST(ResidentState, CharLmMovesOnlyItsBatches) {
  CheckResidentSteps("examples/charlm/train.dt", 3, 4);
}
#else
// The 784-1024-1024-10 MLP (22 MB of state): ~30 s on the emulator, a long check
// (cuda_resident_state_slow_test, ctest -L long).
TEST(ResidentState, MlpMovesOnlyItsBatches) { CheckResidentSteps("bench/mlp/train.dt", 3, 4); }
#endif

}  // namespace
}  // namespace detrain::testing
