// The CPU plan: deterministic bytes (repeated builds, parse -> reserialize round trip), full
// coverage of the schedule, every buffer inside the arena and never overlapping a live one.
#include <gtest/gtest.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "compiler/codegen/cpu/plan.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pipeline.h"
#include "compiler/testing/random_module.h"
#include "schemas/cpu_plan.pb.h"

namespace detrain::codegen::cpu {
namespace {

std::string Reserialize(const std::string& bytes) {
  plan::v1::Plan plan;
  EXPECT_TRUE(plan.ParseFromString(bytes));
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  {
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    EXPECT_TRUE(plan.SerializeToCodedStream(&coded));
  }
  return out;
}

// Checks coverage and placement; returns the first violation.
std::string CheckPlan(const plan::v1::Plan& plan, size_t live_instructions) {
  if (static_cast<size_t>(plan.kernels_size()) != live_instructions) return "kernel count";
  for (int i = 0; i < plan.kernels_size(); ++i) {
    if (plan.kernels(i).id() != i) return "kernel ids out of order";
    if (plan.kernels(i).hlo().find(plan.kernels(i).name() + " = ") == std::string::npos) return "hlo line";
  }
  for (const auto& b : plan.buffers()) {
    if (b.offset() % plan.alignment() != 0) return "misaligned buffer";
    if (b.size() > 0 && b.offset() + b.size() > plan.arena_bytes()) return "buffer outside the arena";
    if (b.defined_by() < 0 || b.defined_by() >= plan.kernels_size()) return "bad defining kernel";
  }
  for (const auto& x : plan.buffers()) {
    for (const auto& y : plan.buffers()) {
      if (x.id() >= y.id() || x.size() == 0 || y.size() == 0) continue;
      bool live = x.defined_by() <= y.last_use() && y.defined_by() <= x.last_use();
      bool overlap = x.offset() < y.offset() + y.size() && y.offset() < x.offset() + x.size();
      if (live && overlap) return "buffers " + std::to_string(x.id()) + " and " + std::to_string(y.id()) + " overlap";
    }
  }
  return "";
}

TEST(CpuPlan, HandWrittenModule) {
  auto module = ir::ParseAndVerify(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4] parameter(0)
  e = f32[4] exponential(x)
  r = f32[4] all-reduce(e), replica_groups={{0,1}}, to_apply=add
  z = f32[] constant(-0)
  s = f32[] reduce(r, z), dimensions={0}, to_apply=add
  ROOT t = (f32[4], f32[]) tuple(r, s)
})");
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto bytes = BuildPlan(**module);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  plan::v1::Plan plan;
  ASSERT_TRUE(plan.ParseFromString(*bytes));
  EXPECT_EQ(plan.format_version(), 1u);
  EXPECT_EQ(plan.module_sha256(), *ir::ModuleFingerprint(**module));
  ASSERT_EQ(plan.kernels_size(), 6);
  EXPECT_EQ(plan.kernels(1).hlo(), "exponential.0 = f32[4] exponential(x)");
  EXPECT_EQ(plan.kernels(4).reduction_order(), "pairwise-64");
  EXPECT_TRUE(plan.kernels(5).alias_only());
  ASSERT_EQ(plan.collectives_size(), 1);
  EXPECT_EQ(plan.collectives(0).kernel(), 2);
  EXPECT_EQ(plan.collectives(0).combiner(), "region.0");
  EXPECT_EQ(plan.collectives(0).replica_groups(0).replicas_size(), 2);
  ASSERT_EQ(plan.computations_size(), 1);
  EXPECT_EQ(plan.computations(0).name(), "region.0");
  EXPECT_EQ(plan.outputs_size(), 2);
  EXPECT_EQ(CheckPlan(plan, 6), "");
  auto text = PlanToText(*bytes);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("opcode: \"all-reduce\""), std::string::npos);
}

TEST(CpuPlan, BytesAreDeterministicAndRoundTrip) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto module = testing::PassTargetedModule(seed, seed % 3 == 0);
    auto opt = passes::RunPipeline(*module, passes::kDefaultPipeline, {});
    ASSERT_TRUE(opt.ok()) << opt.status().message();
    auto a = BuildPlan(*opt->module);
    ASSERT_TRUE(a.ok()) << a.status().message();
    auto b = BuildPlan(*opt->module);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(*a, *b);
    EXPECT_EQ(Reserialize(*a), *a);
    // A reparsed copy of the optimized module gives the same plan: only the text matters.
    auto reparsed = ir::ParseAndVerify(*ir::PrintModule(*opt->module));
    ASSERT_TRUE(reparsed.ok());
    auto c = BuildPlan(**reparsed);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(*c, *a);
    plan::v1::Plan plan;
    ASSERT_TRUE(plan.ParseFromString(*a));
    auto order = opt->module->entry()->PostOrder();
    EXPECT_EQ(CheckPlan(plan, order->size()), "");
    EXPECT_EQ(plan.arena_bytes(), opt->peak_bytes);
  }
}

TEST(CpuPlan, RejectsGarbage) {
  EXPECT_FALSE(PlanToText(std::string("\xff\xff\xff\xff", 4)).ok());
}

}  // namespace
}  // namespace detrain::codegen::cpu
