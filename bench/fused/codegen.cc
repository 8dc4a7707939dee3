// bench_fused_codegen: each elementwise kernel of a program's plan run by the CPU evaluator
// (isa_kernels.inc) next to the same kernel as a generated, compiled loop (runtime/cpu/
// fused_loops.h) — issue 37's "a faster evaluator, or code generated for the program", measured
// kernel by kernel (docs/fused-loops.md; whole steps: bench_peer_step --loops).
//
//   bench_fused_codegen PROGRAM.dt [--reps N] [--cold] [--only ID]
//
// Every top-level elementwise kernel (no fused reduction) whose program the generator writes is
// made twice — one instance on the evaluator, one given its loop — and run on its own arena,
// both filled with the same positive floats in [0.25, 2). Before each run the kernel's operands
// and result are restored from the first fill (so no kernel reads values another run grew), and
// then either left in cache (as after their producers) or, with --cold, evicted (16 MiB
// written). The two alternate, --reps times per kernel; their outputs must be equal bit for bit.
// Kernels read every operand as an array (the load-time folds of a step are not applied), and
// each kernel runs alone (not block by block with its neighbours): the whole-step effect is
// bench_peer_step's to measure. Prints per-kernel medians and totals as JSON; exit 1 on a
// mismatch.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/isa.h"
#include "compiler/plan/reader.h"
#include "driver/compile.h"
#include "runtime/cpu/fused_loops.h"
#include "runtime/cpu/kernels.h"

namespace detrain {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Item {
  const plan::CheckedKernel* k = nullptr;
  std::unique_ptr<runtime::cpu::CpuKernel> eval, gen;
  int64_t ops = 0;  // per element
  std::vector<double> t_eval, t_gen;
};

int Run(const std::string& program, int reps, bool cold, int only) {
  auto compiled = driver::Compile(program, driver::CompileOptions{});
  if (!compiled.ok()) {
    std::fprintf(stderr, "bench_fused_codegen: %s\n", compiled.status().message().c_str());
    return 2;
  }
  auto validated = plan::ReadPlan(compiled->stages.Find("plan")->bytes);
  if (!validated.ok()) {
    std::fprintf(stderr, "bench_fused_codegen: %s\n", validated.status().message().c_str());
    return 2;
  }
  const Isa isa = BestIsa();
  runtime::cpu::FusedLoops loops(isa);
  std::vector<Item> items;
  int64_t all_kernels = 0;
  for (const plan::CheckedKernel& k : validated->kernels()) {
    if (k.spec->implementation() != "cpu.elementwise.v1" || k.spec->elementwise().has_reduce())
      continue;
    if (only >= 0 && k.id() != only) continue;
    ++all_kernels;
    if (!codegen::cpu::CanGenerate(k.program)) continue;
    auto eval = runtime::cpu::MakeElementwise(k);
    auto gen = runtime::cpu::MakeElementwise(k);
    if (!eval.ok() || !gen.ok()) return 3;
    Item it;
    it.k = &k;
    it.eval = std::move(*eval);
    it.gen = std::move(*gen);
    for (const plan::DecodedOp& d : k.program.ops)
      it.ops += d.kind != plan::v2::ScalarOp::INPUT && d.kind != plan::v2::ScalarOp::CONSTANT;
    it.gen->RequestLoops(loops);
    items.push_back(std::move(it));
  }
  Clock::time_point tc = Clock::now();
  if (Status st = loops.Build(); !st.ok()) {
    std::fprintf(stderr, "bench_fused_codegen: %s\n", st.message().c_str());
    return 3;
  }
  const double build_ms = MsSince(tc);

  const size_t words = static_cast<size_t>(validated->proto().arena_bytes()) / 4 + 16;
  std::vector<uint32_t> pristine(words);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(0.25f, 2.0f);
  for (uint32_t& w : pristine) w = std::bit_cast<uint32_t>(dist(rng));
  std::vector<uint32_t> a = pristine, b = pristine;
  uint8_t* arena_a = reinterpret_cast<uint8_t*>(a.data());
  uint8_t* arena_b = reinterpret_cast<uint8_t*>(b.data());
  std::vector<uint8_t> scratch(1 << 20);
  runtime::cpu::ExecContext ctx;
  ctx.isa = isa;
  ctx.scratch = scratch.data();
  ctx.scratch_bytes = static_cast<int64_t>(scratch.size());
  std::vector<uint8_t> flush(16 << 20);
  uint8_t sink = 0;
  auto prepare = [&](const plan::CheckedKernel& k, uint8_t* arena) {
    const uint8_t* from = reinterpret_cast<const uint8_t*>(pristine.data());
    for (const plan::Array& x : k.in)
      std::memcpy(arena + x.offset, from + x.offset, static_cast<size_t>(x.bytes));
    const plan::Array& y = k.out[0];
    std::memcpy(arena + y.offset, from + y.offset, static_cast<size_t>(y.bytes));
    if (!cold) return;
    for (size_t i = 0; i < flush.size(); i += 64) flush[i] = static_cast<uint8_t>(flush[i] + 1);
    sink ^= flush[flush.size() / 2];
  };
  for (int r = 0; r < reps; ++r) {
    for (Item& it : items) {
      prepare(*it.k, arena_a);
      Clock::time_point t0 = Clock::now();
      if (!it.eval->Run(arena_a, ctx).ok()) return 3;
      it.t_eval.push_back(MsSince(t0));
      prepare(*it.k, arena_b);
      t0 = Clock::now();
      if (!it.gen->Run(arena_b, ctx).ok()) return 3;
      it.t_gen.push_back(MsSince(t0));
    }
  }
  int64_t mismatches = 0;
  double eval_ms = 0, gen_ms = 0;
  std::printf("{\"program\": \"%s\", \"cold\": %s, \"reps\": %d, \"kernels\": [\n", program.c_str(),
              cold ? "true" : "false", reps);
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    const plan::Array& out = it.k->out[0];
    const bool same = std::memcmp(arena_a + out.offset, arena_b + out.offset,
                                  static_cast<size_t>(out.bytes)) == 0;
    mismatches += !same;
    const double te = Median(it.t_eval), tg = Median(it.t_gen);
    eval_ms += te;
    gen_ms += tg;
    std::printf(
        "  {\"id\": %d, \"name\": \"%s\", \"elements\": %lld, \"ops\": %lld, "
        "\"eval_us\": %.2f, \"gen_us\": %.2f, \"bits_equal\": %s}%s\n",
        it.k->id(), it.k->name().c_str(), static_cast<long long>(out.elements),
        static_cast<long long>(it.ops), te * 1e3, tg * 1e3, same ? "true" : "false",
        i + 1 < items.size() ? "," : "");
  }
  std::printf(
      "], \"elementwise_kernels\": %lld, \"generated\": %zu, \"functions\": %lld, "
      "\"eval_ms\": %.3f, \"gen_ms\": %.3f, \"gen_over_eval\": %.3f, \"build_ms\": %.0f, "
      "\"mismatches\": %lld, \"isa\": \"%s\", \"sink\": %d}\n",
      static_cast<long long>(all_kernels), items.size(), static_cast<long long>(loops.functions()),
      eval_ms, gen_ms, eval_ms > 0 ? gen_ms / eval_ms : 0.0, build_ms,
      static_cast<long long>(mismatches), std::string(IsaName(isa)).c_str(), sink);
  return mismatches == 0 ? 0 : 1;
}

}  // namespace
}  // namespace detrain

int main(int argc, char** argv) {
  CLI::App app{"Elementwise kernels: the CPU evaluator next to generated loops"};
  std::string program;
  int reps = 15, only = -1;
  bool cold = false;
  app.add_option("PROGRAM", program, "A .dt program (or HLO / run spec)")->required();
  app.add_option("--reps", reps, "Runs of each kernel, each way (medians)")
      ->check(CLI::Range(1, 10000));
  app.add_flag("--cold", cold, "Evict the caches before each run (16 MiB written)");
  app.add_option("--only", only, "Only this kernel (by plan id)");
  CLI11_PARSE(app, argc, argv);
  return detrain::Run(program, reps, cold, only);
}
