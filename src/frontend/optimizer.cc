// See optimizer.h. Each step is commented with the optax expression it mirrors.
#include "frontend/optimizer.h"

namespace detrain::frontend {

using ir::ElementType;
using ir::Instruction;
using ir::Opcode;

namespace {

// A Python float hyperparameter meeting an f32 array is rounded to f32 (JAX weak typing).
Instruction* Hyper(Emitter& e, Instruction* like, double v) {
  return e.Full(like->shape, static_cast<float>(v));
}

Instruction* Mul(Emitter& e, Instruction* a, Instruction* b) {
  return e.b().Binary(Opcode::kMultiply, a, b);
}
Instruction* Add(Emitter& e, Instruction* a, Instruction* b) {
  return e.b().Binary(Opcode::kAdd, a, b);
}
Instruction* Div(Emitter& e, Instruction* a, Instruction* b) {
  return e.b().Binary(Opcode::kDivide, a, b);
}
Instruction* Sub(Emitter& e, Instruction* a, Instruction* b) {
  return e.b().Binary(Opcode::kSubtract, a, b);
}

// optax.clip_by_global_norm: g_norm = sqrt(0 + sum(g0^2) + sum(g1^2) + ...);
// select(g_norm < max_norm, g, (g / g_norm) * max_norm).
std::vector<Instruction*> ClipByGlobalNorm(Emitter& e, const std::vector<Instruction*>& grads,
                                           double max_norm) {
  Instruction* sq = nullptr;
  for (Instruction* g : grads) {
    std::vector<int64_t> all;
    for (int64_t d = 0; d < g->shape.rank(); ++d) all.push_back(d);
    Instruction* s = e.ReduceSum(Mul(e, g, g), all);
    sq = sq == nullptr ? s : Add(e, sq, s);
  }
  Instruction* norm = e.b().Unary(Opcode::kSqrt, sq);
  Instruction* max = e.ScalarF32(static_cast<float>(max_norm));
  Instruction* trigger = e.b().Compare(norm, max, ir::Direction::kLt);
  std::vector<Instruction*> out;
  for (Instruction* g : grads) {
    Instruction* scaled = Mul(e, Div(e, g, e.BroadcastInDims(norm, g->shape, {})),
                              e.BroadcastInDims(max, g->shape, {}));
    out.push_back(e.b().Select(
        e.BroadcastInDims(trigger, ir::Shape(ElementType::kPred, g->shape.dims()), {}), g, scaled));
  }
  return out;
}

}  // namespace

Result<OptimizerIo> EmitOptimizerUpdate(Emitter& e, const OptimizerConfig& opt,
                                        const OptimizerIo& in) {
  const bool adam = opt.kind == OptimizerKind::kAdam || opt.kind == OptimizerKind::kAdamW;
  if (in.params.size() != in.grads.size() || in.state.size() != in.params.size()) {
    return Internal("optimizer update: parameter, gradient and state counts differ");
  }
  std::vector<Instruction*> grads = in.grads;
  if (opt.clip_norm.has_value()) grads = ClipByGlobalNorm(e, grads, *opt.clip_norm);
  OptimizerIo out;
  Instruction* one = e.Full(ir::Shape::Scalar(ElementType::kS32), 1);
  out.count = e.b().Binary(Opcode::kAdd, in.count,
                           one);  // numerics.safe_increment (no overflow at our step counts)
  Instruction* neg_lr = e.b().Unary(Opcode::kNegate, in.learning_rate);
  // Bias corrections of adam: 1 - b^count_inc, in f32.
  Instruction* bc1 = nullptr;
  Instruction* bc2 = nullptr;
  if (adam) {
    Instruction* c = e.b().Convert(out.count, ElementType::kF32);
    auto correction = [&](double b) {
      Instruction* pw = e.b().Binary(Opcode::kPower, e.ScalarF32(static_cast<float>(b)), c);
      return Sub(e, e.ScalarF32(1.0f), pw);
    };
    bc1 = correction(opt.b1);
    bc2 = correction(opt.b2);
  }
  for (size_t i = 0; i < in.params.size(); ++i) {
    Instruction* p = in.params[i];
    Instruction* g = grads[i];
    Instruction* u;
    std::vector<Instruction*> st;
    if (opt.kind == OptimizerKind::kSgd) {
      u = g;
    } else if (opt.kind == OptimizerKind::kMomentum) {
      // optax.trace: new_trace = g + decay * trace; nesterov: g + decay * new_trace.
      double m = opt.momentum;
      Instruction* trace = Add(e, g, Mul(e, Hyper(e, g, m), in.state[i][0]));
      u = opt.nesterov ? Add(e, g, Mul(e, Hyper(e, g, m), trace)) : trace;
      st = {trace};
    } else {
      // optax.scale_by_adam: mu = (1 - b1) * g + b1 * mu; nu = (1 - b2) * g^2 + b2 * nu;
      // u = (mu / bc1) / (sqrt(nu / bc2 + eps_root) + eps), eps_root = 0.
      double b1 = opt.b1, b2 = opt.b2, eps = opt.eps;
      Instruction* mu =
          Add(e, Mul(e, Hyper(e, g, 1.0 - b1), g), Mul(e, Hyper(e, g, b1), in.state[i][0]));
      Instruction* nu = Add(e, Mul(e, Hyper(e, g, 1.0 - b2), Mul(e, g, g)),
                            Mul(e, Hyper(e, g, b2), in.state[i][1]));
      Instruction* mu_hat = Div(e, mu, e.BroadcastInDims(bc1, g->shape, {}));
      Instruction* nu_hat = Div(e, nu, e.BroadcastInDims(bc2, g->shape, {}));
      u = Div(e, mu_hat, Add(e, e.b().Unary(Opcode::kSqrt, nu_hat), Hyper(e, g, eps)));
      if (opt.kind == OptimizerKind::kAdamW) {
        // optax.add_decayed_weights: u + weight_decay * p.
        u = Add(e, u, Mul(e, Hyper(e, p, opt.weight_decay), p));
      }
      st = {mu, nu};
    }
    // optax.scale_by_learning_rate: u * (-lr); apply_updates: p + u.
    Instruction* step = Mul(e, e.BroadcastInDims(neg_lr, u->shape, {}), u);
    out.params.push_back(Add(e, p, step));
    out.state.push_back(std::move(st));
  }
  return out;
}

}  // namespace detrain::frontend
