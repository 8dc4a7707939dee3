// Every layer of the language against JAX (tests/frontend/testdata/layer_vectors.json, made by
// tools/jax_layer_vectors.py from jax.nn, jax.lax, jax.random and optax): each case's .dt function
// is checked, lowered to IR and run on the reference interpreter. Integer results and the
// dropout masks must match bit for bit; float results within a few ulps (XLA's summation orders
// and transcendental functions differ from detrain's canonical, correctly rounded ones). The
// largest difference per case is printed; docs/language.md records them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/interp/interpreter.h"
#include "frontend/check.h"
#include "frontend/lower.h"
#include "frontend/parser.h"
#include "ulp.h"

namespace detrain::frontend {
namespace {

using ir::ElementType;
using ir::Literal;

nlohmann::json Vectors() {
  std::ifstream f(std::string(DETRAIN_SOURCE_DIR) + "/tests/frontend/testdata/layer_vectors.json");
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

Literal Decode(const nlohmann::json& v) {
  std::vector<int64_t> dims = v["shape"].get<std::vector<int64_t>>();
  if (v["dtype"] == "f32") {
    Literal l(ir::Shape(ElementType::kF32, dims));
    for (size_t i = 0; i < v["bits"].size(); ++i)
      l.Set<uint32_t>(static_cast<int64_t>(i), v["bits"][i].get<uint32_t>());
    return l;
  }
  ElementType t = v["dtype"] == "s32" ? ElementType::kS32 : ElementType::kU32;
  Literal l(ir::Shape(t, dims));
  for (size_t i = 0; i < v["values"].size(); ++i)
    l.Set<uint32_t>(static_cast<int64_t>(i), static_cast<uint32_t>(v["values"][i].get<int64_t>()));
  return l;
}

// The largest ulp distance allowed per case: 0 where the computation is exact or uses only
// correctly rounded operations in the same order as JAX; small where XLA sums in another order
// or uses its own transcendental functions.
// Measured causes of the non-zero ones: XLA's CPU backend fuses a*b+c into one fma
// (broadcast_arith) and rewrites x / constant as x * (1 / constant) (dropout's x / keep; the
// masks themselves are identical, checked below); XLA's tanh/logistic/exp are not correctly
// rounded; layer_norm's rsqrt and reductions differ in order.
int64_t Allowed(const std::string& name) {
  if (name == "relu" || name == "reshape_flatten" || name == "embedding" || name == "max_pool" ||
      name == "accuracy" || name == "matmul" || name.rfind("conv2d", 0) == 0) {
    return 0;
  }
  if (name.rfind("dropout", 0) == 0 || name == "broadcast_arith") return 1;
  return 16;
}

TEST(LayersTest, MatchJax) {
  nlohmann::json v = Vectors();
  for (const auto& c : v["cases"]) {
    const std::string name = c["name"];
    std::string text =
        "data d = csv(\"unused.csv\")\n" + c["program"].get<std::string>() +
        "def loss(x: f32[B, 2], y: s32[B]) -> f32[] { return mean(softmax_cross_entropy(x, y)) }\n"
        "optimizer = sgd(learning_rate = 0.1)\ntrain(steps = 1, batch = 8)\n";
    SourceFile src(name + ".dt", text);
    Result<Program> program = Parse(src);
    ASSERT_TRUE(program.ok()) << program.status().message();
    Result<CheckedProgram> checked = Check(src, *program);
    ASSERT_TRUE(checked.ok()) << checked.status().message();
    const FuncDecl* f = nullptr;
    for (const FuncDecl& fd : program->funcs) {
      if (fd.name == "f") f = &fd;
    }
    ir::Module m(name);
    Result<ir::Computation*> comp = LowerFunction(*checked, *f, {}, &m, "f");
    ASSERT_TRUE(comp.ok()) << name << ": " << comp.status().message();
    std::vector<Literal> args;
    for (const FuncArg& a : f->args) args.push_back(Decode(c["inputs"][a.name]));
    Result<Literal> out = interp::Evaluate(m, args);
    ASSERT_TRUE(out.ok()) << name << ": " << out.status().message();
    Literal want = Decode(c["output"]);
    ASSERT_EQ(out->shape(), want.shape()) << name;
    int64_t worst = 0, equal = 0;
    for (int64_t i = 0; i < want.element_count(); ++i) {
      if (name.rfind("dropout", 0) == 0) {  // the same elements dropped: the random bits agree
        EXPECT_EQ(out->Get<float>(i) == 0.0f, want.Get<float>(i) == 0.0f)
            << name << " element " << i;
      }
      int64_t d = testing::UlpDistance(out->Get<float>(i), want.Get<float>(i));
      worst = std::max(worst, d);
      equal += d == 0;
    }
    std::cout << "[ jax ] " << name << ": max " << worst << " ulp, " << equal << "/"
              << want.element_count() << " bit-identical\n";
    EXPECT_LE(worst, Allowed(name)) << name;
  }
}

}  // namespace
}  // namespace detrain::frontend
