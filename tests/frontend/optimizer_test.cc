// Optimizers and schedules against optax (tests/frontend/testdata/optax_vectors.json, made by
// tools/optax_vectors.py with real optax): 20 updates from fixed parameters with fixed gradients,
// the update built as IR and run on the reference interpreter. optax evaluates in f32 with XLA's
// pow, cos and reduction orders, so agreement is to a tolerance, not bit for bit; the measured
// maximum differences are printed and documented in docs/optimizers.md.
#include "frontend/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/interp/interpreter.h"
#include "runtime/train/learning_rate.h"
#include "ulp.h"

namespace detrain::frontend {
namespace {

using ir::ElementType;
using ir::Literal;
using ir::Shape;
using runtime::CosPi;  // the schedules are evaluated by the runtime (runtime/train/learning_rate.h)
using runtime::LearningRateAt;

nlohmann::json Vectors() {
  std::ifstream f(std::string(DETRAIN_SOURCE_DIR) + "/tests/frontend/testdata/optax_vectors.json");
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

Literal F32(const nlohmann::json& bits, std::vector<int64_t> dims) {
  Literal l(Shape(ElementType::kF32, std::move(dims)));
  for (size_t i = 0; i < bits.size(); ++i)
    l.Set<float>(static_cast<int64_t>(i), FromBits(bits[i].get<uint32_t>()));
  return l;
}

// One update as a module: (w, b, gw, gb, state..., count, lr) -> tuple(w', b', state'..., count').
std::unique_ptr<ir::Module> UpdateModule(const OptimizerConfig& opt, int slots) {
  auto m = std::make_unique<ir::Module>("update");
  ir::Builder b(m.get(), "update");
  Emitter e(m.get(), &b);
  OptimizerIo in;
  int64_t n = 0;
  Shape ws(ElementType::kF32, {4, 3}), bs(ElementType::kF32, {3});
  in.params = {b.Parameter(n++, ws, "w"), b.Parameter(n++, bs, "b")};
  in.grads = {b.Parameter(n++, ws, "gw"), b.Parameter(n++, bs, "gb")};
  in.state.resize(2);
  for (int s = 0; s < slots; ++s) {
    in.state[0].push_back(b.Parameter(n++, ws, "sw" + std::to_string(s)));
    in.state[1].push_back(b.Parameter(n++, bs, "sb" + std::to_string(s)));
  }
  in.count = b.Parameter(n++, Shape::Scalar(ElementType::kS32), "count");
  in.learning_rate = b.Parameter(n++, Shape::Scalar(ElementType::kF32), "lr");
  Result<OptimizerIo> out = EmitOptimizerUpdate(e, opt, in);
  EXPECT_TRUE(out.ok()) << out.status().message();
  std::vector<ir::Instruction*> roots = out->params;
  for (int s = 0; s < slots; ++s) {
    roots.push_back(out->state[0][static_cast<size_t>(s)]);
    roots.push_back(out->state[1][static_cast<size_t>(s)]);
  }
  roots.push_back(out->count);
  Result<ir::Computation*> c = b.Build(b.Tuple(roots));
  EXPECT_TRUE(c.ok()) << c.status().message();
  m->set_entry(*c);
  return m;
}

TEST(OptimizerTest, MatchesOptaxOverTwentySteps) {
  nlohmann::json v = Vectors();
  for (const auto& c : v["cases"]) {
    Result<OptimizerConfig> parsed = ParseOptimizerConfig(c["optimizer"]);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    const OptimizerConfig& opt = *parsed;
    int slots = OptimizerSlots(opt.kind);
    auto m = UpdateModule(opt, slots);
    Literal w = F32(v["initial"]["w"], {4, 3}), b = F32(v["initial"]["b"], {3});
    std::vector<Literal> state;
    for (int s = 0; s < 2 * slots; ++s)
      state.emplace_back(Shape(ElementType::kF32,
                               s % 2 == 0 ? std::vector<int64_t>{4, 3} : std::vector<int64_t>{3}));
    int64_t worst = 0;
    for (int t = 0; t < 20; ++t) {
      std::vector<Literal> args = {w, b, F32(v["gradients"][t]["w"], {4, 3}),
                                   F32(v["gradients"][t]["b"], {3})};
      for (const Literal& s : state) args.push_back(s);
      args.push_back(Literal::Scalar<int32_t>(ElementType::kS32, t));
      args.push_back(
          Literal::Scalar<float>(ElementType::kF32, LearningRateAt(opt.learning_rate, t)));
      Result<Literal> r = interp::Evaluate(*m, args);
      ASSERT_TRUE(r.ok()) << r.status().message();
      const auto& outs = r->tuple_elements();
      w = outs[0];
      b = outs[1];
      for (int s = 0; s < 2 * slots; ++s)
        state[static_cast<size_t>(s)] = outs[static_cast<size_t>(2 + s)];
      EXPECT_EQ(outs.back().Get<int32_t>(0), t + 1);
      Literal ew = F32(c["steps"][t]["w"], {4, 3}), eb = F32(c["steps"][t]["b"], {3});
      for (int64_t i = 0; i < 12; ++i)
        worst = std::max(worst, testing::UlpDistance(w.Get<float>(i), ew.Get<float>(i)));
      for (int64_t i = 0; i < 3; ++i)
        worst = std::max(worst, testing::UlpDistance(b.Get<float>(i), eb.Get<float>(i)));
    }
    std::cout << "[ optax ] " << c["optimizer"].dump() << ": max " << worst
              << " ulp after 20 steps\n";
    EXPECT_LE(worst, 64) << c["optimizer"].dump();
  }
}

TEST(OptimizerTest, SchedulesMatchOptax) {
  nlohmann::json v = Vectors();
  for (const auto& s : v["schedules"]) {
    int64_t worst = 0;
    Result<ScheduleConfig> schedule = ParseScheduleConfig(s["schedule"]);
    ASSERT_TRUE(schedule.ok()) << schedule.status().message();
    for (int t = 0; t < 25; ++t) {
      float ours = LearningRateAt(*schedule, t);
      float theirs = FromBits(s["values"][t].get<uint32_t>());
      worst = std::max(worst, testing::UlpDistance(ours, theirs));
    }
    std::cout << "[ optax ] " << s["schedule"].dump() << ": max " << worst << " ulp\n";
    EXPECT_LE(worst, 16) << s["schedule"].dump();
  }
}

TEST(OptimizerTest, CosPiIsAccurate) {
  for (int i = 0; i <= 1000; ++i) {
    double x = i / 1000.0;
    EXPECT_NEAR(CosPi(x), std::cos(M_PI * x), 4e-16) << x;
  }
  EXPECT_EQ(CosPi(0.0), 1.0);
  EXPECT_EQ(CosPi(1.0), -1.0);
  EXPECT_EQ(CosPi(0.5), 0.0);
}

TEST(OptimizerTest, UnknownScheduleIsAnError) {
  Result<ScheduleConfig> s = ParseScheduleConfig({{"name", "exponential"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "run config: learning_rate.name: unknown 'exponential' (expected constant, linear, "
            "cosine_decay or warmup_cosine_decay)");
}

}  // namespace
}  // namespace detrain::frontend
