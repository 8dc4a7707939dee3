// detrain's side of the peer benchmark (bench/peers/run.sh, bench/peers/README.md): the time of one
// full train step of a program, measured as the JAX and PyTorch scripts next to this file measure
// theirs, printed as the same JSON lines.
//
//   bench_peer_step PROGRAM.dt --threads T [--steps N] [--warmup W] [--model NAME]
//                   [--backend cpu|cuda] [--devices D] [--plan-format 2|3]
//                   [--state resident|copied] [--loops auto|generated|evaluator]
//
// --loops: how the elementwise kernels run (docs/fused-loops.md), as `detrain run --loops`: auto
// (default) and generated compile loops for the program at load (in first_call_ms; a cached
// library is loaded instead), evaluator runs them op by op.
// --backend cuda runs the step's generated CUDA program on the GPU(s) (docs/cuda.md); then
// compile_ms includes the CUDA stages (NVRTC and nvJitLink). On one device the state stays in
// the device's arena from step to step (--state resident), as JAX's donated buffers do.
//
// first_call_ms: from the start of the process's work to the end of the first step = compile
//   (driver::Compile, every stage) + executor creation (plan loading) + the first step. The
//   arguments (the tests' synthetic values of the right shapes, runtime::TrainStepArguments) are
//   made between the two and their time is reported apart (args_ms), not counted.
// step_ms: the median of N steps after W warm-up steps, each one full executor Run (forward,
//   backward, shard-tree gradient sum, optimizer update) on the same arguments.
// peak_rss_mib: getrusage(RUSAGE_SELF).ru_maxrss at the end.
// Single-threaded driver; the executor's own pool has T threads.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/isa.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/plan/schema.h"
#include "driver/compile.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/executor.h"
#include "runtime/runtime_test_util.h"

namespace detrain {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Flags {
  std::string program;
  std::string model;  // the JSON "model" field; default: the program's directory name
  int threads = 1;
  int steps = 20;
  int warmup = 3;
  int devices = 1;
  int plan_format = static_cast<int>(plan::kPlanFormatVersion);
  std::string backend = "cpu";
  bool resident = true;        // --state resident|copied
  std::string loops = "auto";  // --loops auto|generated|evaluator (docs/fused-loops.md)
};

bool ParseFlags(int argc, char** argv, Flags& f) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--threads" && (v = value())) {
      f.threads = std::atoi(v);
    } else if (a == "--steps" && (v = value())) {
      f.steps = std::atoi(v);
    } else if (a == "--warmup" && (v = value())) {
      f.warmup = std::atoi(v);
    } else if (a == "--model" && (v = value())) {
      f.model = v;
    } else if (a == "--backend" && (v = value())) {
      f.backend = v;
    } else if (a == "--devices" && (v = value())) {
      f.devices = std::atoi(v);
    } else if (a == "--plan-format" && (v = value())) {
      f.plan_format = std::atoi(v);
    } else if (a == "--state" && (v = value()) &&
               (std::string(v) == "resident" || std::string(v) == "copied")) {
      f.resident = std::string(v) == "resident";
    } else if (a == "--loops" && (v = value()) &&
               (std::string(v) == "auto" || std::string(v) == "generated" ||
                std::string(v) == "evaluator")) {
      f.loops = v;
    } else if (!a.empty() && a[0] != '-' && f.program.empty()) {
      f.program = a;
    } else {
      return false;
    }
  }
  if (f.model.empty() && !f.program.empty()) {
    std::string dir = f.program.substr(0, f.program.find_last_of('/'));
    f.model = dir.substr(dir.find_last_of('/') + 1);
  }
  return !f.program.empty() && f.threads >= 1 && f.steps >= 1 && f.warmup >= 0 && f.devices >= 1 &&
         (f.backend == "cpu" || f.backend == "cuda");
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int Fail(const char* what, const Status& s) {
  std::fprintf(stderr, "bench_peer_step: %s: %s\n", what, s.message().c_str());
  return 1;
}

int Main(const Flags& f) {
  Clock::time_point t0 = Clock::now();
  driver::CompileOptions copts;
  copts.cuda = f.backend == "cuda";
  copts.plan_format_version = static_cast<uint32_t>(f.plan_format);
  auto compiled = driver::Compile(f.program, copts);
  if (!compiled.ok()) return Fail("compile", compiled.status());
  double compile_ms = MsSince(t0);

  // Not timed: the synthetic arguments need the step's parameter shapes, read from stage "hlo".
  Clock::time_point ta = Clock::now();
  auto step = ir::ParseAndVerify(compiled->stages.Find("hlo")->bytes);
  if (!step.ok()) return Fail("parse hlo", step.status());
  std::vector<std::vector<ir::Literal>> args = {runtime::TrainStepArguments(**step, 12345)};
  double args_ms = MsSince(ta);

  Clock::time_point tc = Clock::now();
  runtime::ExecutorOptions options;
  options.threads = f.threads;
  // As `detrain run`: auto is generated loops on the CPU where the compiler is present.
  options.generated_loops = f.loops == "generated" || (f.loops == "auto" && f.backend == "cpu");
  options.loops_fallback = f.loops == "auto";
  options.devices = f.devices;
  if (f.backend == "cuda") {
    // The executable the compile made (stages cuda, ptx and cubin-*), as a run uses it.
    options.backend = runtime::Backend::kCuda;
    const driver::CudaExecutable& cuda = compiled->cuda.at("");
    options = runtime::cuda::WithCompiledCuda(options, cuda.program, cuda.images);
  }
  auto executor = runtime::Executor::Create(compiled->stages.Find("plan")->bytes, options);
  if (!executor.ok()) return Fail("executor", executor.status());
  double create_ms = MsSince(tc);
  // --state resident (default): steps run as a train loop with resident state runs them, as
  // JAX's donated step does: the state is passed once, each step takes the previous step's new
  // state where it lies (Executor::SetCarry) and only the loss is read out. --state copied: the
  // same arguments every step, copied in, and every result copied out (Executor::RunInto).
  runtime::Executor& ex = **executor;
  std::vector<const ir::Literal*> borrowed, carried;
  for (const ir::Literal& a : args[0]) borrowed.push_back(&a);
  std::vector<int> carry;
  int next_state = 0;
  for (const plan::v2::EntryParameter& p : ex.plan().parameters()) {
    const plan::ParamRole role = plan::FromPlanRole(p.role());
    const bool state = plan::IsStateRole(role);
    // The optimizer's slots start at zero, as a run's do (the synthetic values would make
    // Adam's second moment negative and every update NaN).
    const size_t i = carry.size();
    if (role == plan::ParamRole::kOptimizerState && i < args[0].size())
      std::fill(args[0][i].mutable_bytes().begin(), args[0][i].mutable_bytes().end(), '\0');
    carry.push_back(state ? next_state++ : -1);
  }
  const bool resident = f.resident && next_state + 1 == ex.plan().outputs_size() &&
                        ex.plan().parameters_size() == static_cast<int>(borrowed.size());
  if (resident) {
    if (Status st = ex.SetCarry(carry); !st.ok()) return Fail("carry", st);
    for (size_t i = 0; i < borrowed.size(); ++i)
      carried.push_back(carry[i] >= 0 ? nullptr : borrowed[i]);
  }
  std::vector<ir::Literal> results;
  ir::Literal loss;
  auto run_step = [&](bool first) -> Status {
    if (!resident) return ex.RunInto(borrowed, &results);
    DETRAIN_RETURN_IF_ERROR(ex.RunKeep(first ? borrowed : carried));
    return ex.ReadResult(next_state, &loss);
  };
  Clock::time_point tf = Clock::now();
  if (Status st = run_step(true); !st.ok()) return Fail("first step", st);
  double first_step_ms = MsSince(tf);
  double first_call_ms = compile_ms + create_ms + first_step_ms;

  for (int i = 0; i < f.warmup; ++i) {
    if (Status st = run_step(false); !st.ok()) return Fail("warm-up step", st);
  }
  std::vector<double> times;
  const runtime::DeviceTraffic before = ex.Traffic();
  for (int i = 0; i < f.steps; ++i) {
    Clock::time_point ts = Clock::now();
    Status st = run_step(false);
    times.push_back(MsSince(ts));
    if (!st.ok()) return Fail("step", st);
  }
  // Per timed step, what the devices were asked (runtime/device.h DeviceTraffic: GPUs only).
  const runtime::DeviceTraffic after = ex.Traffic();
  const double per = f.steps > 0 ? 1.0 / f.steps : 0.0;
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "{\"framework\": \"detrain\", \"backend\": \"%s\", \"device\": \"%s\", "
      "\"devices\": %d, \"model\": \"%s\", \"threads\": %d, \"isa\": \"%s\", "
      "\"first_call_ms\": %.3f, \"compile_ms\": %.3f, \"create_ms\": %.3f, "
      "\"first_step_ms\": %.3f, \"args_ms\": %.3f, \"step_ms\": %.4f, \"step_min_ms\": %.4f, "
      "\"steps\": %d, \"warmup\": %d, \"folded_transposes\": %lld, \"folded_dot_trees\": %lld, "
      "\"views\": %lld, \"state\": \"%s\", \"resident_arguments\": %lld, \"peak_rss_mib\": %.1f, "
      "\"device_launches_per_step\": %.1f, \"bytes_in_per_step\": %.0f, "
      "\"bytes_out_per_step\": %.0f}\n",
      f.backend.c_str(), (*executor)->stats().devices.at(0).c_str(), f.devices, f.model.c_str(),
      f.threads, std::string(IsaName((*executor)->isa())).c_str(), first_call_ms, compile_ms,
      create_ms, first_step_ms, args_ms, Median(times),
      *std::min_element(times.begin(), times.end()), f.steps, f.warmup,
      static_cast<long long>((*executor)->stats().folded_transposes),
      static_cast<long long>((*executor)->stats().folded_dot_trees),
      static_cast<long long>((*executor)->stats().views), resident ? "resident" : "copied",
      static_cast<long long>(ex.resident_arguments()),
      static_cast<double>(usage.ru_maxrss) / 1024.0,
      static_cast<double>(after.launches - before.launches) * per,
      static_cast<double>(after.bytes_in - before.bytes_in) * per,
      static_cast<double>(after.bytes_out - before.bytes_out) * per);
  return 0;
}

}  // namespace
}  // namespace detrain

int main(int argc, char** argv) {
  detrain::Flags flags;
  if (!detrain::ParseFlags(argc, argv, flags)) {
    std::fprintf(stderr,
                 "usage: bench_peer_step PROGRAM.dt --threads T [--steps N] [--warmup W] "
                 "[--model NAME] [--backend cpu|cuda] [--devices D] [--plan-format 2|3] "
                 "[--state resident|copied] [--loops auto|generated|evaluator]\n");
    return 2;
  }
  return detrain::Main(flags);
}
