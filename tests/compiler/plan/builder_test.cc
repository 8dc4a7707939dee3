// The plan builder: deterministic bytes (repeated builds, parse -> reserialize round trip), full
// coverage of the schedule, every buffer inside the arena and never overlapping a live one.
#include "compiler/plan/builder.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <map>

#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pipeline.h"
#include "compiler/plan/buffer_assignment.h"
#include "compiler/testing/random_module.h"
#include "pass_test_util.h"
#include "schemas/plan.pb.h"

namespace detrain::plan {
namespace {

std::string Reserialize(const std::string& bytes) {
  plan::v2::Plan plan;
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
std::string CheckPlan(const plan::v2::Plan& plan, size_t live_instructions) {
  if (static_cast<size_t>(plan.kernels_size()) != live_instructions) return "kernel count";
  for (int i = 0; i < plan.kernels_size(); ++i) {
    if (plan.kernels(i).id() != i) return "kernel ids out of order";
    if (plan.kernels(i).hlo().find(plan.kernels(i).name() + " = ") == std::string::npos)
      return "hlo line";
  }
  for (const auto& b : plan.buffers()) {
    if (b.offset() % plan.alignment() != 0) return "misaligned buffer";
    if (b.size() > 0 && b.offset() + b.size() > plan.arena_bytes())
      return "buffer outside the arena";
    if (b.defined_by() < 0 || b.defined_by() >= plan.kernels_size()) return "bad defining kernel";
  }
  for (const auto& x : plan.buffers()) {
    for (const auto& y : plan.buffers()) {
      if (x.id() >= y.id() || x.size() == 0 || y.size() == 0) continue;
      // A result and its donor (a donated parameter, or an updated operand: format 4) share one
      // slice and meet at one kernel, the donor's last reader and the result's writer.
      if (y.has_donor() && y.donor() == x.id()) {
        if (x.offset() != y.offset() || x.last_use() != y.defined_by())
          return "buffer " + std::to_string(y.id()) + " took over a donor that is not free";
        continue;
      }
      bool live = x.defined_by() <= y.last_use() && y.defined_by() <= x.last_use();
      bool overlap = x.offset() < y.offset() + y.size() && y.offset() < x.offset() + x.size();
      if (live && overlap)
        return "buffers " + std::to_string(x.id()) + " and " + std::to_string(y.id()) + " overlap";
    }
  }
  return "";
}

TEST(PlanBuilder, HandWrittenModule) {
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
  plan::v2::Plan plan;
  ASSERT_TRUE(plan.ParseFromString(bytes->bytes));
  EXPECT_EQ(plan.format_version(), kPlanFormatVersion);
  EXPECT_EQ(plan.module_sha256(), *ir::ModuleFingerprint(**module));
  ASSERT_EQ(plan.kernels_size(), 6);
  EXPECT_EQ(plan.kernels(1).hlo(), "exponential.0 = f32[4] exponential(x)");
  EXPECT_EQ(plan.kernels(4).reduction_order(), "pairwise-64");
  EXPECT_TRUE(plan.kernels(5).alias());
  EXPECT_TRUE(plan.kernels(0).alias());  // the parameter
  // Typed specs: the exponential as a one-op program of its input, the constant as its bytes,
  // the all-reduce with its groups and its combiner as a program, the reduce with its order.
  ASSERT_TRUE(plan.kernels(1).has_elementwise());
  const auto& program = plan.kernels(1).elementwise().program();
  ASSERT_EQ(program.ops_size(), 2);
  EXPECT_EQ(program.ops(0).kind(), plan::v2::ScalarOp::INPUT);
  EXPECT_EQ(program.ops(1).kind(), plan::v2::ScalarOp::UNARY);
  EXPECT_EQ(program.ops(1).op(), "exponential");
  EXPECT_EQ(program.result(), 1);
  ASSERT_TRUE(plan.kernels(2).has_all_reduce());
  EXPECT_EQ(plan.kernels(2).all_reduce().replica_groups(0).replicas_size(), 2);
  EXPECT_EQ(plan.kernels(2).all_reduce().combiner().hlo_computation(), "region.0");
  EXPECT_EQ(plan.kernels(2).all_reduce().combiner().program().ops(2).op(), "add");
  ASSERT_TRUE(plan.kernels(3).has_constant());
  EXPECT_EQ(plan.kernels(3).constant(), std::string("\0\0\0\x80", 4));  // -0.0f, little-endian
  ASSERT_TRUE(plan.kernels(4).has_reduce());
  EXPECT_EQ(plan.kernels(4).reduce().dimensions_size(), 1);
  EXPECT_EQ(plan.kernels(4).implementation(), "cpu.reduce.v1");
  EXPECT_TRUE(plan.replicated());
  ASSERT_EQ(plan.parameters_size(), 1);
  EXPECT_EQ(plan.parameters(0).name(), "x");
  EXPECT_EQ(plan.parameters(0).role(), plan::v2::INPUT);
  EXPECT_EQ(plan.outputs_size(), 2);
  EXPECT_EQ(CheckPlan(plan, 6), "");
  auto text = PlanToText(bytes->bytes);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("opcode: \"all-reduce\""), std::string::npos);
}

TEST(PlanBuilder, BytesAreDeterministicAndRoundTrip) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto module = testing::PassTargetedModule(seed, seed % 3 == 0);
    auto opt = passes::RunPipeline(*module, passes::kDefaultPipeline, {});
    ASSERT_TRUE(opt.ok()) << opt.status().message();
    auto a = BuildPlan(*opt->module);
    ASSERT_TRUE(a.ok()) << a.status().message();
    auto b = BuildPlan(*opt->module);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(a->bytes, b->bytes);
    EXPECT_EQ(Reserialize(a->bytes), a->bytes);
    // A reparsed copy of the optimized module gives the same plan: only the text matters.
    auto reparsed = ir::ParseAndVerify(*ir::PrintModule(*opt->module));
    ASSERT_TRUE(reparsed.ok());
    auto c = BuildPlan(**reparsed);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->bytes, a->bytes);
    plan::v2::Plan plan;
    ASSERT_TRUE(plan.ParseFromString(a->bytes));
    auto order = opt->module->entry()->PostOrder();
    EXPECT_EQ(CheckPlan(plan, order->size()), "");
    // Buffers are assigned once: the compile summary's numbers are the plan's (no loops here).
    EXPECT_EQ(plan.arena_bytes(), a->peak_bytes);
    EXPECT_EQ(plan.total_buffer_bytes(), a->total_bytes);
    EXPECT_GT(a->peak_bytes, 0);
    EXPECT_LE(a->peak_bytes, a->total_bytes);
  }
}

// Buffers are assigned once, by the builder: its peak and total are the entry's assignment, for
// any pipeline; on the examples, buffer reuse makes the peak smaller than the total.
TEST(PlanBuilder, ReportsTheEntrysBufferAssignment) {
  // (inline first: a plan has no `call`, and the generated module may hold one)
  for (const char* spec : {"inline,cse", "inline,fuse", passes::kDefaultPipeline}) {
    auto module = testing::PassTargetedModule(4, false);
    auto result = passes::RunPipeline(*module, spec, {});
    ASSERT_TRUE(result.ok()) << spec;
    auto a = AssignBuffers(*result->module);
    ASSERT_TRUE(a.ok());
    auto built = BuildPlan(*result->module);
    ASSERT_TRUE(built.ok()) << spec << ": " << built.status().message();
    EXPECT_EQ(built->peak_bytes, a->arena_bytes) << spec;
    EXPECT_EQ(built->total_bytes, a->total_bytes) << spec;
    EXPECT_GT(built->peak_bytes, 0) << spec;
  }
  for (const char* example : {"breast_cancer", "charlm"}) {
    std::string skip, error;
    auto module = testing::LowerExample(example, &skip, &error);
    ASSERT_NE(module, nullptr) << error;
    auto result = passes::RunPipeline(*module, passes::kDefaultPipeline, {});
    ASSERT_TRUE(result.ok()) << result.status().message();
    auto built = BuildPlan(*result->module);
    ASSERT_TRUE(built.ok()) << built.status().message();
    EXPECT_GT(built->peak_bytes, 0) << example;
    EXPECT_LT(built->peak_bytes, built->total_bytes) << example;
  }
}

TEST(PlanBuilder, DotInCanonicalForm) {
  auto module = ir::ParseAndVerify(R"(HloModule m
ENTRY main {
  a = f32[2,3,5] parameter(0)
  b = f32[2,7,3] parameter(1)
  ROOT d = f32[2,5,7] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={2}
})");
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto bytes = BuildPlan(**module);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  plan::v2::Plan plan;
  ASSERT_TRUE(plan.ParseFromString(bytes->bytes));
  const auto& dot = plan.kernels(2).dot();
  EXPECT_EQ(dot.batch(), 2);
  EXPECT_EQ(dot.m(), 5);
  EXPECT_EQ(dot.n(), 7);
  EXPECT_EQ(dot.k(), 3);
  EXPECT_EQ(std::vector<int64_t>(dot.lhs_permutation().begin(), dot.lhs_permutation().end()),
            (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(std::vector<int64_t>(dot.rhs_permutation().begin(), dot.rhs_permutation().end()),
            (std::vector<int64_t>{0, 2, 1}));
}

TEST(PlanBuilder, ShardRangesFollowTheBatchSlices) {
  auto module = ir::ParseAndVerify(R"(HloModule m
ENTRY main {
  w = f32[3] parameter(0)
  x = f32[4,3] parameter(1)
  s0 = f32[2,3] slice(x), slice={[0:2], [0:3]}
  s1 = f32[2,3] slice(x), slice={[2:4], [0:3]}
  z = f32[] constant(0)
  r0 = f32[3] reduce(s0, z), dimensions={0}, to_apply=add
  r1 = f32[3] reduce(s1, z), dimensions={0}, to_apply=add
  m0 = f32[3] multiply(r0, w)
  m1 = f32[3] multiply(r1, w)
  ROOT t = f32[3] add(m0, m1)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
})");
  ASSERT_TRUE(module.ok()) << module.status().message();
  EntrySignature sig{{ParamRole::kParameter, ParamRole::kBatch}, 2};
  auto bytes = BuildPlan(**module, sig);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  plan::v2::Plan plan;
  ASSERT_TRUE(plan.ParseFromString(bytes->bytes));
  EXPECT_EQ(plan.shards(), 2);
  EXPECT_EQ(plan.parameters(1).role(), plan::v2::BATCH);
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;
  for (const auto& k : plan.kernels()) ranges[k.name()] = {k.shard_lo(), k.shard_hi()};
  EXPECT_EQ(ranges.at("w"), std::make_pair(int64_t{0}, int64_t{0}));  // depends on no shard
  int shard0 = 0, shard1 = 0, both = 0;
  for (const auto& [name, r] : ranges) {
    shard0 += r == std::make_pair(int64_t{0}, int64_t{1});
    shard1 += r == std::make_pair(int64_t{1}, int64_t{2});
    both += r == std::make_pair(int64_t{0}, int64_t{2});
  }
  EXPECT_EQ(shard0, 3);  // slice, reduce, multiply of shard 0
  EXPECT_EQ(shard1, 3);
  EXPECT_EQ(both, 1);  // the add of the two shards' values
  EXPECT_EQ(ranges.at("x"),
            std::make_pair(int64_t{0}, int64_t{0}));  // a parameter: placed by its users
  // A signature of the wrong length is refused.
  EXPECT_FALSE(BuildPlan(**module, EntrySignature{{ParamRole::kBatch}, 2}).ok());
}

TEST(PlanBuilder, RejectsGarbage) {
  EXPECT_FALSE(PlanToText(std::string("\xff\xff\xff\xff", 4)).ok());
}

}  // namespace
}  // namespace detrain::plan
