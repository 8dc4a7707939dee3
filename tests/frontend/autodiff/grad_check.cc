// See grad_check.h.
#include "grad_check.h"

#include <gtest/gtest.h>

#include <cmath>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/verifier.h"
#include "frontend/autodiff/autodiff.h"

namespace detrain::testing {

namespace {

double Unit(std::mt19937& rng) { return static_cast<double>(rng() >> 8) * 0x1p-24; }

std::vector<int64_t> AllDims(const ir::Shape& s) {
  std::vector<int64_t> d;
  for (int64_t i = 0; i < s.rank(); ++i) d.push_back(i);
  return d;
}

}  // namespace

ir::Literal Uniform(std::vector<int64_t> dims, double lo, double hi, uint32_t seed) {
  ir::Literal lit(ir::Shape(ir::ElementType::kF32, std::move(dims)));
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < lit.element_count(); ++i)
    lit.Set<float>(i, static_cast<float>(lo + (hi - lo) * Unit(rng)));
  return lit;
}

ir::Literal SignedAwayFromZero(std::vector<int64_t> dims, double lo, double hi, uint32_t seed) {
  ir::Literal lit = Uniform(std::move(dims), lo, hi, seed);
  std::mt19937 rng(seed ^ 0x9e3779b9u);
  for (int64_t i = 0; i < lit.element_count(); ++i) {
    if (rng() & 1) lit.Set<float>(i, -lit.Get<float>(i));
  }
  return lit;
}

ir::Literal F32(std::vector<int64_t> dims, const std::vector<float>& values) {
  return ir::Literal::FromVector<float>(ir::ElementType::kF32, std::move(dims), values);
}

ir::Literal S32(std::vector<int64_t> dims, const std::vector<int32_t>& values) {
  return ir::Literal::FromVector<int32_t>(ir::ElementType::kS32, std::move(dims), values);
}

GradCase MakeCase(std::vector<ir::Literal> args, const BodyFn& body, uint32_t seed) {
  GradCase c;
  c.module = std::make_unique<ir::Module>("grad_case");
  ir::Builder b(c.module.get(), "f");
  frontend::Emitter e(c.module.get(), &b);
  std::vector<ir::Instruction*> params;
  for (size_t i = 0; i < args.size(); ++i)
    params.push_back(b.Parameter(static_cast<int64_t>(i), args[i].shape()));
  ir::Instruction* y = body(e, params);
  ir::Instruction* w = b.Constant(Uniform(y->shape.dims(), 0.5, 1.5, seed));
  ir::Instruction* loss = e.ReduceSum(b.Multiply(y, w), AllDims(y->shape));
  auto f = b.Build(loss);
  EXPECT_TRUE(f.ok()) << f.status().message();
  c.f = f.ok() ? *f : nullptr;
  c.module->set_entry(c.f);
  c.args = std::move(args);
  return c;
}

ir::Literal Eval(ir::Module& m, ir::Computation* c, const std::vector<ir::Literal>& args) {
  ir::Computation* saved = m.entry();
  m.set_entry(c);
  auto r = interp::Evaluate(m, args);
  m.set_entry(saved);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ir::Literal();
}

GradResult ValueAndGradOf(GradCase& c, const std::vector<int64_t>& wrt) {
  GradResult out;
  auto g = frontend::ValueAndGrad(c.module.get(), *c.f, wrt, "value_and_grad");
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return out;
  ir::Computation* saved = c.module->entry();
  c.module->set_entry(*g);
  Status v = ir::VerifyModule(*c.module);
  c.module->set_entry(saved);
  EXPECT_TRUE(v.ok()) << v.message();
  if (!v.ok()) return out;
  ir::Literal t = Eval(*c.module, *g, c.args);
  if (t.tuple_elements().size() != wrt.size() + 1) {
    ADD_FAILURE() << "ValueAndGrad returned " << t.shape().ToString();
    return out;
  }
  out.value = t.tuple_elements()[0];
  out.grads.assign(t.tuple_elements().begin() + 1, t.tuple_elements().end());
  return out;
}

int CheckGradients(GradCase& c, const CheckOptions& options) {
  std::vector<int64_t> wrt = options.wrt;
  const double h = options.h;
  if (wrt.empty()) {
    for (size_t i = 0; i < c.args.size(); ++i) {
      if (c.args[i].shape().type() == ir::ElementType::kF32) wrt.push_back(static_cast<int64_t>(i));
    }
  }
  GradResult r = ValueAndGradOf(c, wrt);
  if (r.grads.size() != wrt.size()) return 1;
  ir::Literal value = Eval(*c.module, c.f, c.args);
  EXPECT_TRUE(r.value.BitwiseEqual(value)) << r.value.ToString() << " vs " << value.ToString();
  int mismatches = 0;
  for (size_t k = 0; k < wrt.size(); ++k) {
    size_t p = static_cast<size_t>(wrt[k]);
    const ir::Literal& grad = r.grads[k];
    EXPECT_EQ(grad.shape(), c.args[p].shape());
    int64_t n = c.args[p].element_count();
    int64_t m = options.max_checked;
    int64_t step = m > 0 && n > m ? (n + m - 1) / m : 1;
    for (int64_t i = 0; i < n; i += step) {
      std::vector<ir::Literal> args = c.args;
      float x = c.args[p].Get<float>(i);
      float xp = static_cast<float>(x + h), xm = static_cast<float>(x - h);
      args[p].Set<float>(i, xp);
      double fp = Eval(*c.module, c.f, args).Get<float>(0);
      args[p].Set<float>(i, xm);
      double fm = Eval(*c.module, c.f, args).Get<float>(0);
      double fd = (fp - fm) / (static_cast<double>(xp) - static_cast<double>(xm));
      double ad = options.scale * grad.Get<float>(i);
      if (!(std::fabs(ad - fd) <= options.atol + kRtol * std::fabs(fd))) {
        ++mismatches;
        if (!options.quiet)
          ADD_FAILURE() << "d f / d p" << p << "[" << i << "]: autodiff " << ad
                        << ", central difference " << fd;
      }
    }
  }
  return mismatches;
}

}  // namespace detrain::testing
