// Time per train step of each example: the reference interpreter next to the CPU executor with
// 1 and 2 threads (docs/benchmarks.md "Executor"). Arguments are the tests' deterministic
// synthetic values of the right shapes (tests/runtime/runtime_test_util.h); the executor is created
// once (plan loading is not timed), and every repetition runs one full step. Run with
// --benchmark_repetitions=N for medians.
#include <benchmark/benchmark.h>

#include <string>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "driver/compile.h"
#include "runtime/executor.h"
#include "runtime/runtime_test_util.h"

namespace detrain {
namespace {

struct Example {
  std::unique_ptr<ir::Module> step;
  std::string plan;
  std::vector<ir::Literal> args;
};

const Example& Load(const std::string& name) {
  static std::map<std::string, Example> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Example e;
  auto compiled = driver::Compile(
      std::string(DETRAIN_SOURCE_DIR) + "/" +
          (name == "mlp" ? std::string("bench/mlp") : "examples/" + name) + "/train.dt",
      {});
  if (!compiled.ok()) {
    fprintf(stderr, "%s: %s\n", name.c_str(), compiled.status().message().c_str());
    std::abort();
  }
  auto parsed = ir::ParseAndVerify(compiled->stages.Find("hlo")->bytes);
  e.step = std::move(*parsed);
  e.plan = compiled->stages.Find("plan")->bytes;
  e.args = runtime::TrainStepArguments(*e.step, 12345);
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
  // As the trainer runs a step: arguments borrowed, results overwritten in place (RunInto).
  std::vector<const ir::Literal*> args;
  for (const ir::Literal& a : e.args) args.push_back(&a);
  std::vector<ir::Literal> results;
  for (auto _ : state) {
    Status st = (*executor)->RunInto(args, &results);
    if (!st.ok()) state.SkipWithError(st.message().c_str());
    benchmark::DoNotOptimize(results.data());
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
// The issue-14 benchmark MLP (bench/mlp/train.dt: 784 -> 1024 -> 1024 -> 10, batch 256).
BENCHMARK_CAPTURE(BM_Executor, mlp, std::string("mlp"))
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace detrain

BENCHMARK_MAIN();
