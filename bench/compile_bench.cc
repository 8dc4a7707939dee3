// Compile time program -> stage 4 (issue 7): parse + check + lower the train step (stage 2),
// run the default pass pipeline (stage 3) and build the CPU plan (stage 4), per example.
// Counters: peak_bytes (the plan's arena), total_bytes (sum of all buffers),
// live instructions (all reachable computations) of stage 2 and stage 3.
//
//   bench_compile --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
//
// reports the median over 10 repetitions (docs/benchmarks.md, "compiler (issue 7)").
// Examples that do not exist are skipped.
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>

#include "base/file_io.h"
#include "compiler/passes/pipeline.h"
#include "compiler/plan/builder.h"
#include "frontend/check.h"
#include "frontend/parser.h"
#include "frontend/train_step.h"

namespace {

using namespace detrain;

struct Compiled {
  int64_t peak = 0, total = 0, before = 0, after = 0;
  size_t plan_bytes = 0;
};

Result<Compiled> CompileOnce(const std::string& path, const std::string& text) {
  frontend::SourceFile source(path, text);
  DETRAIN_ASSIGN_OR_RETURN(frontend::Program program, frontend::Parse(source));
  DETRAIN_ASSIGN_OR_RETURN(auto checked, frontend::Check(source, program));
  DETRAIN_ASSIGN_OR_RETURN(auto step, frontend::LowerTrainStep(checked));
  DETRAIN_ASSIGN_OR_RETURN(auto opt, passes::RunPipeline(*step, passes::kDefaultPipeline, {}));
  DETRAIN_ASSIGN_OR_RETURN(plan::BuiltPlan plan, plan::BuildPlan(*opt.module));
  auto live = [](const ir::Module& m) {  // live instructions of all reachable computations
    int64_t n = 0;
    auto comps = m.ComputationPostOrder();  // kept alive: the loop reads into it
    for (const ir::Computation* c : *comps) n += static_cast<int64_t>(c->PostOrder()->size());
    return n;
  };
  return Compiled{plan.peak_bytes, plan.total_bytes, live(*step), live(*opt.module),
                  plan.bytes.size()};
}

void BM_Compile(benchmark::State& state, std::string example) {
  std::string path = std::string(DETRAIN_SOURCE_DIR) + "/examples/" + example + "/train.dt";
  if (!std::filesystem::exists(path)) {
    state.SkipWithError(("no " + path).c_str());
    return;
  }
  std::string text = *ReadFile(path);
  Compiled last;
  for (auto _ : state) {
    auto c = CompileOnce(path, text);
    if (!c.ok()) {
      state.SkipWithError(c.status().message().c_str());
      return;
    }
    last = *c;
  }
  state.SetLabel("peak_bytes=" + std::to_string(last.peak) +
                 " total_bytes=" + std::to_string(last.total));
  state.counters["peak_bytes"] = static_cast<double>(last.peak);
  state.counters["total_bytes"] = static_cast<double>(last.total);
  state.counters["instr_stage2"] = static_cast<double>(last.before);
  state.counters["instr_stage3"] = static_cast<double>(last.after);
  state.counters["plan_bytes"] = static_cast<double>(last.plan_bytes);
}

// The stage-3 part alone, pass by pass: each pass timed on its own input (for finding hot spots).
void BM_Passes(benchmark::State& state, std::string example) {
  std::string path = std::string(DETRAIN_SOURCE_DIR) + "/examples/" + example + "/train.dt";
  if (!std::filesystem::exists(path)) {
    state.SkipWithError(("no " + path).c_str());
    return;
  }
  std::string text = *ReadFile(path);
  frontend::SourceFile source(path, text);
  auto program = frontend::Parse(source);
  auto checked = frontend::Check(source, *program);
  auto step = frontend::LowerTrainStep(*checked);
  std::string spec = passes::kDefaultPipeline;
  std::vector<std::string> names;
  for (size_t start = 0, comma; start < spec.size(); start = comma + 1) {
    comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    names.push_back(spec.substr(start, comma - start));
  }
  std::vector<double> seconds(names.size(), 0.0);
  for (auto _ : state) {
    std::unique_ptr<ir::Module> m;
    const ir::Module* current = step->get();
    for (size_t i = 0; i < names.size(); ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = passes::RunPipeline(*current, names[i], {});
      seconds[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      m = std::move(r->module);
      current = m.get();
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {
    state.counters[std::to_string(i) + "." + names[i] + "_ms"] =
        1e3 * seconds[i] / static_cast<double>(state.iterations());
  }
}

BENCHMARK_CAPTURE(BM_Passes, charlm, std::string("charlm"))->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(BM_Compile, breast_cancer, std::string("breast_cancer"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, digits, std::string("digits"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, charlm, std::string("charlm"))->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
