// Buffer assignment: every buffer lies inside the arena, no two buffers live at the same time
// overlap, reuse happens, and the numbers of a hand-checked module.
#include "compiler/plan/buffer_assignment.h"

#include <gtest/gtest.h>

#include "compiler/ir/verifier.h"
#include "compiler/passes/pipeline.h"
#include "compiler/testing/random_module.h"

namespace detrain::plan {
namespace {

// Checks the placement invariants; returns a description of the first violation.
std::string CheckAssignment(const BufferAssignment& a) {
  for (const LogicalBuffer& b : a.buffers) {
    if (b.offset % kBufferAlignment != 0) return "buffer " + std::to_string(b.id) + " misaligned";
    if (b.size > 0 && (b.offset < 0 || b.offset + b.size > a.arena_bytes)) {
      return "buffer " + std::to_string(b.id) + " outside the arena";
    }
  }
  for (const LogicalBuffer& x : a.buffers) {
    for (const LogicalBuffer& y : a.buffers) {
      if (x.id >= y.id || x.size == 0 || y.size == 0) continue;
      bool live_together = x.defined_at <= y.last_use && y.defined_at <= x.last_use;
      bool overlap = x.offset < y.offset + y.size && y.offset < x.offset + x.size;
      if (live_together && overlap) {
        return "buffers " + std::to_string(x.id) + " and " + std::to_string(y.id) +
               " overlap while live";
      }
    }
  }
  return "";
}

TEST(BufferAssignment, ChainReusesBuffers) {
  auto module = ir::ParseAndVerify(R"(HloModule m
ENTRY main {
  p = f32[256] parameter(0)
  a = f32[256] exponential(p)
  b = f32[256] negate(a)
  c = f32[256] tanh(b)
  ROOT d = f32[256] add(c, p)
})");
  ASSERT_TRUE(module.ok());
  auto a = AssignBuffers(**module);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(CheckAssignment(*a), "");
  ASSERT_EQ(a->buffers.size(), 5u);
  EXPECT_EQ(a->total_bytes, 5 * 1024);
  // p lives throughout; at most two of a, b, c, d are live at once: p + 2 buffers.
  EXPECT_EQ(a->arena_bytes, 3 * 1024);
  EXPECT_TRUE(a->buffers.back().is_output);
}

TEST(BufferAssignment, TupleAndGetTupleElementAlias) {
  auto module = ir::ParseAndVerify(R"(HloModule m
ENTRY main {
  p = f32[3] parameter(0)
  n = f32[3] negate(p)
  t = (f32[3], f32[3]) tuple(p, n)
  g = f32[3] get-tuple-element(t), index=1
  ROOT r = (f32[3], f32[3]) tuple(g, p)
})");
  ASSERT_TRUE(module.ok());
  auto a = AssignBuffers(**module);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->buffers.size(), 2u);  // p and n; tuples and get-tuple-element alias them
  EXPECT_TRUE(a->buffers[0].is_output && a->buffers[1].is_output);
  EXPECT_EQ(CheckAssignment(*a), "");
}

TEST(BufferAssignment, RandomModulesArePlacedValidly) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    auto module = testing::PassTargetedModule(seed, seed % 2 == 0);
    auto opt = passes::RunPipeline(*module, passes::kDefaultPipeline, {});
    ASSERT_TRUE(opt.ok());
    auto a = AssignBuffers(*opt->module);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(CheckAssignment(*a), "") << "seed " << seed;
    EXPECT_LE(a->arena_bytes, a->total_bytes);
  }
}

}  // namespace
}  // namespace detrain::plan
