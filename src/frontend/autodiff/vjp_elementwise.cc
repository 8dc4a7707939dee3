// VJP rules of the elementwise ops. Each mirrors JAX's JVP rule (jax/_src/lax/lax.py,
// special.py) transposed in the cotangent g; the formula is in each rule's comment, with x, y
// the operands (a, b for binary ops) and y the forward result where JAX reuses it.
//
// Thread safety: appends to the computation being built; one thread.
#include <cmath>

#include "frontend/autodiff/vjp.h"

namespace detrain::frontend::autodiff {

using ir::Instruction;
using ir::Opcode;

// abs_p: select(x >= 0, g, -g) — so abs'(0) = 1, as JAX.
VjpResult VjpAbs(VjpArgs& a) {
  Instruction* ge = a.b().Compare(a.x(0), Like(a, a.x(0), 0), ir::Direction::kGe);
  return PerOperand(a, {a.b().Select(ge, a.g(), Un(a, Opcode::kNegate, a.g()))});
}

// neg_p (linear): -g.
VjpResult VjpNegate(VjpArgs& a) { return PerOperand(a, {Un(a, Opcode::kNegate, a.g())}); }

// exp_p: g * y.
VjpResult VjpExp(VjpArgs& a) { return PerOperand(a, {Bin(a, Opcode::kMultiply, a.g(), a.y())}); }

// expm1_p: g * (y + 1).
VjpResult VjpExpm1(VjpArgs& a) {
  Instruction* d = Bin(a, Opcode::kAdd, a.y(), Like(a, a.y(), 1));
  return PerOperand(a, {Bin(a, Opcode::kMultiply, a.g(), d)});
}

// log_p: g / x.
VjpResult VjpLog(VjpArgs& a) { return PerOperand(a, {Bin(a, Opcode::kDivide, a.g(), a.x(0))}); }

// log1p_p: g / (x + 1).
VjpResult VjpLog1p(VjpArgs& a) {
  Instruction* d = Bin(a, Opcode::kAdd, a.x(0), Like(a, a.x(0), 1));
  return PerOperand(a, {Bin(a, Opcode::kDivide, a.g(), d)});
}

// tanh_p: JVP (t + t*y) * (1 - y); transposed: u = g * (1 - y), then u + u * y.
VjpResult VjpTanh(VjpArgs& a) {
  Instruction* u =
      Bin(a, Opcode::kMultiply, a.g(), Bin(a, Opcode::kSubtract, Like(a, a.y(), 1), a.y()));
  return PerOperand(a, {Bin(a, Opcode::kAdd, u, Bin(a, Opcode::kMultiply, u, a.y()))});
}

// logistic_p: g * (y * (1 - y)).
VjpResult VjpLogistic(VjpArgs& a) {
  Instruction* d =
      Bin(a, Opcode::kMultiply, a.y(), Bin(a, Opcode::kSubtract, Like(a, a.y(), 1), a.y()));
  return PerOperand(a, {Bin(a, Opcode::kMultiply, a.g(), d)});
}

// sqrt_p: g * (0.5 / y).
VjpResult VjpSqrt(VjpArgs& a) {
  Instruction* d = Bin(a, Opcode::kDivide, Like(a, a.y(), 0.5), a.y());
  return PerOperand(a, {Bin(a, Opcode::kMultiply, a.g(), d)});
}

// rsqrt_p: g * (-0.5 * (y / x)).
VjpResult VjpRsqrt(VjpArgs& a) {
  Instruction* d =
      Bin(a, Opcode::kMultiply, Like(a, a.y(), -0.5), Bin(a, Opcode::kDivide, a.y(), a.x(0)));
  return PerOperand(a, {Bin(a, Opcode::kMultiply, a.g(), d)});
}

// erf_p: (2 / sqrt(pi)) * (g * exp(-(x * x))).
VjpResult VjpErf(VjpArgs& a) {
  Instruction* x = a.x(0);
  Instruction* e = Un(a, Opcode::kExp, Un(a, Opcode::kNegate, Bin(a, Opcode::kMultiply, x, x)));
  const float k2OverSqrtPi = static_cast<float>(2.0 / std::sqrt(M_PI));
  return PerOperand(a, {Bin(a, Opcode::kMultiply, Like(a, x, k2OverSqrtPi),
                            Bin(a, Opcode::kMultiply, a.g(), e))});
}

// sin_p: g * cos(x) (JAX's jvp mul(g, cos(x)), transposed).
VjpResult VjpSin(VjpArgs& a) {
  return PerOperand(a, {Bin(a, Opcode::kMultiply, a.g(), Un(a, Opcode::kCos, a.x(0)))});
}

// cos_p: -g * sin(x) (JAX's jvp neg(mul(g, sin(x))), transposed: the negation moves to g).
VjpResult VjpCos(VjpArgs& a) {
  Instruction* s = Un(a, Opcode::kSin, a.x(0));
  return PerOperand(a, {Bin(a, Opcode::kMultiply, Un(a, Opcode::kNegate, a.g()), s)});
}

// add_p (linear): g, g.
VjpResult VjpAdd(VjpArgs& a) { return PerOperand(a, {a.g(), a.g()}); }

// sub_p (linear): g, -g.
VjpResult VjpSubtract(VjpArgs& a) {
  return PerOperand(a, {a.g(), a.active[1] ? Un(a, Opcode::kNegate, a.g()) : nullptr});
}

// mul_p: g * b, a * g.
VjpResult VjpMultiply(VjpArgs& a) {
  return PerOperand(a, {a.active[0] ? Bin(a, Opcode::kMultiply, a.g(), a.x(1)) : nullptr,
                        a.active[1] ? Bin(a, Opcode::kMultiply, a.x(0), a.g()) : nullptr});
}

// div_p: g / b; (-g * a) * b^-2 with integer_pow(b, -2) = 1 / (b * b).
VjpResult VjpDivide(VjpArgs& a) {
  Instruction* da = a.active[0] ? Bin(a, Opcode::kDivide, a.g(), a.x(1)) : nullptr;
  Instruction* db = nullptr;
  if (a.active[1]) {
    Instruction* b = a.x(1);
    Instruction* inv_sq = Bin(a, Opcode::kDivide, Like(a, b, 1), Bin(a, Opcode::kMultiply, b, b));
    db = Bin(a, Opcode::kMultiply, Bin(a, Opcode::kMultiply, Un(a, Opcode::kNegate, a.g()), a.x(0)),
             inv_sq);
  }
  return PerOperand(a, {da, db});
}

// rem_p: g; -g * (sign(a / b) * floor(|a / b|)).
VjpResult VjpRemainder(VjpArgs& a) {
  Instruction* db = nullptr;
  if (a.active[1]) {
    Instruction* q = Bin(a, Opcode::kDivide, a.x(0), a.x(1));
    Instruction* trunc = Bin(a, Opcode::kMultiply, Un(a, Opcode::kSign, q),
                             Un(a, Opcode::kFloor, Un(a, Opcode::kAbs, q)));
    db = Bin(a, Opcode::kMultiply, Un(a, Opcode::kNegate, a.g()), trunc);
  }
  return PerOperand(a, {a.g(), db});
}

namespace {

// JAX's _balanced_eq(x, z, y): (x == z ? 1 : 0) / (y == z ? 2 : 1) — the share of the
// cotangent that operand x of max/min gets; on a tie each operand gets half.
Instruction* BalancedEq(VjpArgs& a, Instruction* x, Instruction* z, Instruction* y) {
  Instruction* num =
      a.b().Select(a.b().Compare(x, z, ir::Direction::kEq), Like(a, z, 1), Like(a, z, 0));
  Instruction* den =
      a.b().Select(a.b().Compare(y, z, ir::Direction::kEq), Like(a, z, 2), Like(a, z, 1));
  return Bin(a, Opcode::kDivide, num, den);
}

// max_p / min_p: g * balanced_eq(a, y, b), g * balanced_eq(b, y, a).
VjpResult MinMax(VjpArgs& a) {
  Instruction* da = a.active[0]
                        ? Bin(a, Opcode::kMultiply, a.g(), BalancedEq(a, a.x(0), a.y(), a.x(1)))
                        : nullptr;
  Instruction* db = a.active[1]
                        ? Bin(a, Opcode::kMultiply, a.g(), BalancedEq(a, a.x(1), a.y(), a.x(0)))
                        : nullptr;
  return PerOperand(a, {da, db});
}

}  // namespace

VjpResult VjpMaximum(VjpArgs& a) { return MinMax(a); }
VjpResult VjpMinimum(VjpArgs& a) { return MinMax(a); }

// pow_p (float exponent): g * (b * a^(b - 1)); g * (log(a == 0 ? 1 : a) * y).
VjpResult VjpPower(VjpArgs& a) {
  Instruction* x = a.x(0);
  Instruction* p = a.x(1);
  Instruction* da = nullptr;
  Instruction* db = nullptr;
  if (a.active[0]) {
    Instruction* pm1 = Bin(a, Opcode::kSubtract, p, Like(a, p, 1));
    da = Bin(a, Opcode::kMultiply, a.g(),
             Bin(a, Opcode::kMultiply, p, Bin(a, Opcode::kPower, x, pm1)));
  }
  if (a.active[1]) {
    Instruction* is_zero = a.b().Compare(x, Like(a, x, 0), ir::Direction::kEq);
    Instruction* safe = a.b().Select(is_zero, Like(a, x, 1), x);
    db = Bin(a, Opcode::kMultiply, a.g(),
             Bin(a, Opcode::kMultiply, Un(a, Opcode::kLog, safe), a.y()));
  }
  return PerOperand(a, {da, db});
}

// select_n_p transpose: on_true gets select(p, g, 0), on_false gets select(p, 0, g).
VjpResult VjpSelect(VjpArgs& a) {
  Instruction* p = a.x(0);
  Instruction* zero = Like(a, a.g(), 0);
  return PerOperand(a, {nullptr, a.active[1] ? a.b().Select(p, a.g(), zero) : nullptr,
                        a.active[2] ? a.b().Select(p, zero, a.g()) : nullptr});
}

namespace {

// Sums an x-shaped cotangent down to a scalar bound's shape (clamp allows scalar lo/hi).
Instruction* ToBoundShape(VjpArgs& a, Instruction* ct, Instruction* bound) {
  if (bound->shape == ct->shape) return ct;
  std::vector<int64_t> all;
  for (int64_t d = 0; d < ct->shape.rank(); ++d) all.push_back(d);
  return a.e.ReduceSum(ct, all);
}

}  // namespace

// clamp_p(lo, x, hi): lo gets select(lo > x & lo < hi, g, 0); x gets select(x > lo & x < hi,
// g, 0); hi gets select(hi < x, g, 0). Scalar bounds sum their cotangent.
VjpResult VjpClamp(VjpArgs& a) {
  Instruction* x = a.x(1);
  Instruction* lo = a.e.BroadcastInDims(a.x(0), x->shape, {});
  Instruction* hi = a.e.BroadcastInDims(a.x(2), x->shape, {});
  Instruction* zero = Like(a, x, 0);
  auto both = [&](Instruction* p, Instruction* q) { return Bin(a, Opcode::kAnd, p, q); };
  std::vector<Instruction*> out(3, nullptr);
  if (a.active[0]) {
    Instruction* p =
        both(a.b().Compare(lo, x, ir::Direction::kGt), a.b().Compare(lo, hi, ir::Direction::kLt));
    out[0] = ToBoundShape(a, a.b().Select(p, a.g(), zero), a.x(0));
  }
  if (a.active[1]) {
    Instruction* p =
        both(a.b().Compare(x, lo, ir::Direction::kGt), a.b().Compare(x, hi, ir::Direction::kLt));
    out[1] = a.b().Select(p, a.g(), zero);
  }
  if (a.active[2]) {
    out[2] = ToBoundShape(a, a.b().Select(a.b().Compare(hi, x, ir::Direction::kLt), a.g(), zero),
                          a.x(2));
  }
  return PerOperand(a, out);
}

// convert_element_type: f32 -> f32 passes g through. (An integer or pred operand is never
// active, and a non-f32 result never has a cotangent.)
VjpResult VjpConvert(VjpArgs& a) { return PerOperand(a, {a.g()}); }

}  // namespace detrain::frontend::autodiff
