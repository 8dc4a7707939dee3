// Time per train step of each example: the reference interpreter next to the CPU executor with
// 1 and 2 threads (docs/benchmarks.md "Executor"). Arguments are deterministic synthetic values
// of the right shapes; the executor is created once (plan loading is not timed), and every
// repetition runs one full step. Run with --benchmark_repetitions=N for medians.
#include <benchmark/benchmark.h>

#include <string>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "driver/compile.h"
#include "runtime/executor.h"

namespace detrain {
namespace {

struct Example {
  std::unique_ptr<ir::Module> step;
  std::string plan;
  std::vector<ir::Literal> args;
};

std::vector<ir::Literal> Arguments(const ir::Module& step) {
  uint64_t state = 12345;
  std::vector<ir::Literal> args;
  for (const ir::Instruction* p : step.entry()->Parameters()) {
    ir::Literal lit(p->shape);
    for (int64_t i = 0; i < lit.element_count(); ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      switch (p->shape.type()) {
        case ir::ElementType::kF32:
          lit.Set<float>(
              i, static_cast<float>(static_cast<int32_t>(state >> 40) - (1 << 23)) / 8388608.0f);
          break;
        case ir::ElementType::kS32:
          lit.Set<int32_t>(i, static_cast<int32_t>((state >> 33) & 1));
          break;
        case ir::ElementType::kU32:
          lit.Set<uint32_t>(i, static_cast<uint32_t>(state >> 32));
          break;
        default:
          break;
      }
    }
    if (p->name == "count") lit.Set<int32_t>(0, 0);
    if (p->name == "learning_rate") lit.Set<float>(0, 1e-3f);
    args.push_back(std::move(lit));
  }
  return args;
}

const Example& Load(const std::string& name) {
  static std::map<std::string, Example> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Example e;
  auto compiled =
      driver::Compile(std::string(DETRAIN_SOURCE_DIR) + "/examples/" + name + "/train.dt", {});
  if (!compiled.ok()) {
    fprintf(stderr, "%s: %s\n", name.c_str(), compiled.status().message().c_str());
    std::abort();
  }
  auto parsed = ir::ParseAndVerify(compiled->stages.Find("hlo")->bytes);
  e.step = std::move(*parsed);
  e.plan = compiled->stages.Find("plan")->bytes;
  e.args = Arguments(*e.step);
  return cache.emplace(name, std::move(e)).first->second;
}

void BM_Interpreter(benchmark::State& state, const std::string& name) {
  const Example& e = Load(name);
  for (auto _ : state) {
    auto out = interp::Evaluate(*e.step, e.args);
    benchmark::DoNotOptimize(out);
  }
}

void BM_Executor(benchmark::State& state, const std::string& name) {
  const Example& e = Load(name);
  runtime::ExecutorOptions options;
  options.threads = static_cast<int>(state.range(0));
  auto executor = runtime::Executor::Create(e.plan, options);
  if (!executor.ok()) {
    state.SkipWithError(executor.status().message().c_str());
    return;
  }
  for (auto _ : state) {
    auto out = (*executor)->Run({e.args});
    benchmark::DoNotOptimize(out);
  }
}

BENCHMARK_CAPTURE(BM_Interpreter, breast_cancer, std::string("breast_cancer"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Executor, breast_cancer, std::string("breast_cancer"))
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Interpreter, digits, std::string("digits"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Executor, digits, std::string("digits"))
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Interpreter, charlm, std::string("charlm"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);
BENCHMARK_CAPTURE(BM_Executor, charlm, std::string("charlm"))
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace detrain

BENCHMARK_MAIN();
