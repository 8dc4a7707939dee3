// The CPU device's view placement (runtime/cpu/plan_views.h) beyond the kernel cases' bits: the
// placement keeps what the executor reads from the plan's own offsets (a result carried in place
// of a parameter whose block the plan gave it) and never overlaps two values that are live at once.
#include "runtime/cpu/plan_views.h"

#include <gtest/gtest.h>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/plan/reader.h"
#include "kernel_cases.h"
#include "runtime/executor.h"
#include "runtime_test_util.h"

namespace detrain::runtime {
namespace {

// p is read once, early; r, a result of p's size, is made after that read, so the plan's first fit
// gives r p's block (no donation: these plans have no training state). x's shard slices and the
// concatenate that reads them are views.
constexpr char kCarried[] = R"(HloModule m
ENTRY main {
  p = f32[4,16] parameter(0)
  x = f32[8,16] parameter(1)
  q = f32[4,16] exponential(p)
  a0 = f32[4,16] slice(x), slice={[0:4], [0:16]}
  a1 = f32[4,16] slice(x), slice={[4:8], [0:16]}
  e0 = f32[4,16] multiply(a0, q)
  e1 = f32[4,16] negate(a1)
  cat = f32[8,16] concatenate(e0, e1), dimensions={0}
  c = f32[8,16] multiply(cat, cat)
  s = f32[4,16] slice(c), slice={[4:8], [0:16]}
  r = f32[4,16] add(s, e0)
  ROOT t = (f32[4,16]) tuple(r)
})";

std::string PlanOf(const std::string& hlo) {
  auto module = ir::ParseAndVerify(hlo);
  EXPECT_TRUE(module.ok()) << module.status().message();
  auto plan = OptimizedPlan(**module);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return *plan;
}

TEST(PlanViews, ACarriedResultStaysWhereThePlanPutIt) {
  const std::string bytes = PlanOf(kCarried);
  auto plan = plan::ReadPlan(bytes);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const plan::Array& p = plan->buffer(plan->proto().parameters(0).buffers(0));
  const plan::Array& r = plan->buffer(plan->proto().outputs(0));
  ASSERT_EQ(p.offset, r.offset) << "the case needs the plan to give r p's block";
  ASSERT_FALSE(plan->proto().buffers(r.id).has_donor());
  int64_t views = 0;
  auto placed = cpu::PlaceViews(*plan, &views);
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  ASSERT_NE(*placed, nullptr);
  EXPECT_GT(views, 0);
  EXPECT_EQ((*placed)->buffer(p.id).offset, (*placed)->buffer(r.id).offset);

  // Run it as a trainer runs its state: r carried into p, left where it lies, four times.
  auto module = ir::ParseAndVerify(kCarried);
  ASSERT_TRUE(module.ok());
  std::vector<ir::Literal> args = {Varied({4, 16}), Varied({8, 16})};
  for (Isa isa : SupportedIsas()) {
    SCOPED_TRACE(IsaName(isa));
    ExecutorOptions options;
    options.isa = isa;
    options.threads = 2;
    auto executor = Executor::Create(bytes, options);
    ASSERT_TRUE(executor.ok()) << executor.status().message();
    EXPECT_EQ((*executor)->stats().views, views);
    ASSERT_TRUE((*executor)->SetCarry({0, -1}).ok());
    std::vector<ir::Literal> want = args;
    for (int step = 0; step < 4; ++step) {
      auto expected = interp::Evaluate(**module, want);
      ASSERT_TRUE(expected.ok()) << expected.status().message();
      const ir::Literal* first = step == 0 ? &args[0] : nullptr;
      ASSERT_TRUE((*executor)->RunKeep({first, &args[1]}).ok());
      ir::Literal got;
      ASSERT_TRUE((*executor)->ReadResult(0, &got).ok());
      want[0] = FlattenLiteral(*expected)[0];
      ExpectSameBits({want[0]}, {got});
    }
    EXPECT_EQ((*executor)->resident_arguments(), 3) << "r was not read in place";
  }
}

// No two buffers that are live at the same schedule position overlap in the placed arena unless
// they belong to one array and its views (joined by the slices, reshapes and concatenates that
// would have copied between them).
TEST(PlanViews, LiveBuffersMeetOnlyAsViews) {
  const std::string bytes = PlanOf(kCarried);
  auto plan = plan::ReadPlan(bytes);
  ASSERT_TRUE(plan.ok());
  int64_t views = 0;
  auto placed = cpu::PlaceViews(*plan, &views);
  ASSERT_TRUE(placed.ok() && *placed != nullptr);
  const plan::v2::Plan& proto = (*placed)->proto();
  const int32_t end = proto.kernels_size();
  std::vector<int32_t> component(static_cast<size_t>(proto.buffers_size()));
  for (size_t i = 0; i < component.size(); ++i) component[i] = static_cast<int32_t>(i);
  auto find = [&](int32_t x) {
    while (component[static_cast<size_t>(x)] != x) x = component[static_cast<size_t>(x)];
    return x;
  };
  for (const plan::v2::Kernel& k : proto.kernels()) {
    if (!(k.has_slice() || k.has_copy() || k.has_concatenate()) || k.outputs_size() != 1) continue;
    for (const auto& op : k.operands()) {
      for (int32_t x : op.buffers()) component[static_cast<size_t>(find(x))] = find(k.outputs(0));
    }
  }
  int met = 0;
  for (const plan::v2::Buffer& a : proto.buffers()) {
    for (const plan::v2::Buffer& b : proto.buffers()) {
      if (a.id() >= b.id() || a.size() == 0 || b.size() == 0) continue;
      const int32_t a1 = a.is_output() ? end : a.last_use();
      const int32_t b1 = b.is_output() ? end : b.last_use();
      const bool at_once = a.defined_by() <= b1 && b.defined_by() <= a1;
      const bool overlap = a.offset() < b.offset() + b.size() && b.offset() < a.offset() + a.size();
      if (!at_once || !overlap) continue;
      EXPECT_EQ(find(a.id()), find(b.id()))
          << "buffers " << a.id() << " and " << b.id() << " overlap while both are live";
      ++met;
    }
  }
  EXPECT_GT(met, 0) << "no view shares its array's bytes";
}

}  // namespace
}  // namespace detrain::runtime
