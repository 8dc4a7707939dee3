// Layer expansions: one function per layer, in a table keyed by the builtin's name. The math
// follows the reference each layer names (JAX, Flax, optax); docs/language.md lists them.
#include <cmath>
#include <cstring>

#include "frontend/lower_internal.h"

namespace detrain::frontend {
namespace {

using ir::ElementType;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

struct L {
  LowerCtx& ctx;
  const CheckedCall& call;
  const std::vector<Instruction*>& args;
  const Shape& result;
  Emitter& e() { return ctx.e(); }
  ir::Builder& b() { return ctx.b(); }
  Instruction* x() { return args[0]; }
  Instruction* Full(const Shape& s, double v) { return e().Full(s, v); }
  Instruction* Like(Instruction* t, double v) { return e().Full(t->shape, v); }
  Instruction* Bin(Opcode op, Instruction* a, Instruction* c) { return b().Binary(op, a, c); }
  Instruction* Un(Opcode op, Instruction* a) { return b().Unary(op, a); }
  int64_t Axis(size_t i, int64_t rank) {
    int64_t a = call.args[i].i;
    return a < 0 ? a + rank : a;
  }
};

using LayerFn = Result<Instruction*> (*)(L&);

Instruction* ReduceKeep(L& l, Instruction* x, Opcode op, int64_t axis) {
  Instruction* r = l.e().Reduce(x, op, {axis});
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x->shape.rank(); ++d)
    if (d != axis) dims.push_back(d);
  return l.e().BroadcastInDims(r, x->shape, dims);
}

// x - max(x, axis): the shift jax.nn.softmax and optax apply for stability (exact per element).
Instruction* Shifted(L& l, Instruction* x, int64_t axis) {
  return l.Bin(Opcode::kSubtract, x, ReduceKeep(l, x, Opcode::kMaximum, axis));
}

Result<Instruction*> Relu(L& l) { return l.Bin(Opcode::kMaximum, l.x(), l.Like(l.x(), 0)); }
Result<Instruction*> Tanh(L& l) { return l.Un(Opcode::kTanh, l.x()); }
Result<Instruction*> Sigmoid(L& l) { return l.Un(Opcode::kLogistic, l.x()); }
Result<Instruction*> Exp(L& l) { return l.Un(Opcode::kExp, l.x()); }
Result<Instruction*> Log(L& l) { return l.Un(Opcode::kLog, l.x()); }
Result<Instruction*> Sqrt(L& l) { return l.Un(Opcode::kSqrt, l.x()); }
Result<Instruction*> Rsqrt(L& l) { return l.Un(Opcode::kRsqrt, l.x()); }
Result<Instruction*> Abs(L& l) { return l.Un(Opcode::kAbs, l.x()); }
Result<Instruction*> Sin(L& l) { return l.Un(Opcode::kSin, l.x()); }
Result<Instruction*> Cos(L& l) { return l.Un(Opcode::kCos, l.x()); }

// jax.nn.gelu(approximate=True): x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
Result<Instruction*> Gelu(L& l) {
  Instruction* x = l.x();
  Instruction* x3 = l.Bin(Opcode::kMultiply, l.Bin(Opcode::kMultiply, x, x), x);
  Instruction* inner = l.Bin(Opcode::kAdd, x, l.Bin(Opcode::kMultiply, l.Like(x, 0.044715f), x3));
  const float kSqrt2OverPi = 0.7978845608028654f;
  Instruction* t = l.Un(Opcode::kTanh, l.Bin(Opcode::kMultiply, l.Like(x, kSqrt2OverPi), inner));
  Instruction* cdf = l.Bin(Opcode::kMultiply, l.Like(x, 0.5), l.Bin(Opcode::kAdd, l.Like(x, 1), t));
  return l.Bin(Opcode::kMultiply, x, cdf);
}

Result<Instruction*> Softmax(L& l) {
  int64_t axis = l.Axis(1, l.x()->shape.rank());
  Instruction* ex = l.Un(Opcode::kExp, Shifted(l, l.x(), axis));
  return l.Bin(Opcode::kDivide, ex, ReduceKeep(l, ex, Opcode::kAdd, axis));
}

Result<Instruction*> LogSoftmax(L& l) {
  int64_t axis = l.Axis(1, l.x()->shape.rank());
  Instruction* s = Shifted(l, l.x(), axis);
  Instruction* lse = l.Un(Opcode::kLog, ReduceKeep(l, l.Un(Opcode::kExp, s), Opcode::kAdd, axis));
  return l.Bin(Opcode::kSubtract, s, lse);
}

// x[..., labels[...]] via a one-hot select; the sum has one non-zero term, so it is exact.
Instruction* TakeLabel(L& l, Instruction* x, Instruction* labels) {
  int64_t k = x->shape.rank() - 1;
  Shape ids(ElementType::kS32, x->shape.dims());
  std::vector<int64_t> batch_dims;
  for (int64_t d = 0; d < k; ++d) batch_dims.push_back(d);
  Instruction* hot = l.b().Compare(
      l.b().Iota(ids, k), l.e().BroadcastInDims(labels, ids, batch_dims), ir::Direction::kEq);
  return l.e().ReduceSum(l.b().Select(hot, x, l.Like(x, 0)), {k});
}

// optax.softmax_cross_entropy_with_integer_labels: log(sum(exp(z - max))) - (z - max)[label].
Result<Instruction*> SoftmaxCrossEntropy(L& l) {
  int64_t k = l.x()->shape.rank() - 1;
  Instruction* s = Shifted(l, l.x(), k);
  Instruction* lse = l.Un(Opcode::kLog, l.e().ReduceSum(l.Un(Opcode::kExp, s), {k}));
  return l.Bin(Opcode::kSubtract, lse, TakeLabel(l, s, l.args[1]));
}

// log_sigmoid(x) = -softplus(-x) = -(max(-x, 0) + log1p(exp(-|x|))).
Instruction* LogSigmoid(L& l, Instruction* x) {
  Instruction* nx = l.Un(Opcode::kNegate, x);
  Instruction* sp =
      l.Bin(Opcode::kAdd, l.Bin(Opcode::kMaximum, nx, l.Like(x, 0)),
            l.Un(Opcode::kLog1p, l.Un(Opcode::kExp, l.Un(Opcode::kNegate, l.Un(Opcode::kAbs, x)))));
  return l.Un(Opcode::kNegate, sp);
}

// optax.sigmoid_binary_cross_entropy: -labels * log_sigmoid(x) - (1 - labels) * log_sigmoid(-x).
Result<Instruction*> SigmoidBce(L& l) {
  Instruction* x = l.x();
  Instruction* y = l.args[1];
  Instruction* a = l.Bin(Opcode::kMultiply, l.Un(Opcode::kNegate, y), LogSigmoid(l, x));
  Instruction* c = l.Bin(Opcode::kMultiply, l.Bin(Opcode::kSubtract, l.Like(y, 1), y),
                         LogSigmoid(l, l.Un(Opcode::kNegate, x)));
  return l.Bin(Opcode::kSubtract, a, c);
}

std::vector<int64_t> AllDims(const Shape& s) {
  std::vector<int64_t> d;
  for (int64_t i = 0; i < s.rank(); ++i) d.push_back(i);
  return d;
}

Result<Instruction*> Mse(L& l) {
  Instruction* d = l.Bin(Opcode::kSubtract, l.x(), l.args[1]);
  return l.e().ReduceMean(l.Bin(Opcode::kMultiply, d, d), AllDims(d->shape));
}

std::vector<int64_t> ReduceAxes(L& l) {
  const ArgValue& a = l.call.args[1];
  if (!a.present) return AllDims(l.x()->shape);
  std::vector<int64_t> axes;
  for (int64_t ax : a.axes) axes.push_back(ax < 0 ? ax + l.x()->shape.rank() : ax);
  std::sort(axes.begin(), axes.end());
  return axes;
}

Result<Instruction*> Mean(L& l) { return l.e().ReduceMean(l.x(), ReduceAxes(l)); }
Result<Instruction*> Sum(L& l) { return l.e().ReduceSum(l.x(), ReduceAxes(l)); }

// Flax nn.Dropout: keep = 1 - rate; mask = bernoulli(key, keep, shape) = uniform < keep;
// select(mask, x / keep, 0). rate == 0 is the identity.
Result<Instruction*> Dropout(L& l) {
  double rate = l.call.args[1].f;
  if (rate == 0 || l.ctx.options().deterministic) return l.x();
  float keep =
      static_cast<float>(1.0 - rate);  // Python computes 1 - rate in double; JAX casts to f32
  bool partitionable = l.ctx.options().prng == PrngMode::kPartitionable;
  Instruction* u = l.e().Uniform01(l.args[2], l.x()->shape.dims(), partitionable);
  Instruction* mask = l.b().Compare(u, l.Like(u, keep), ir::Direction::kLt);
  return l.b().Select(mask, l.Bin(Opcode::kDivide, l.x(), l.Like(l.x(), keep)), l.Like(l.x(), 0));
}

// Flax nn.LayerNorm over the last axis: mean, var = mean((x - mean)^2), (x - mean) * rsqrt(var +
// eps)
// * scale + bias.
Result<Instruction*> LayerNorm(L& l) {
  Instruction* x = l.x();
  int64_t last = x->shape.rank() - 1;
  std::vector<int64_t> keep;
  for (int64_t d = 0; d < last; ++d) keep.push_back(d);
  Instruction* mean = l.e().BroadcastInDims(l.e().ReduceMean(x, {last}), x->shape, keep);
  Instruction* c = l.Bin(Opcode::kSubtract, x, mean);
  Instruction* var = l.e().ReduceMean(l.Bin(Opcode::kMultiply, c, c), {last});
  Instruction* inv = l.Un(
      Opcode::kRsqrt, l.Bin(Opcode::kAdd, var, l.Like(var, static_cast<float>(l.call.args[3].f))));
  Instruction* y = l.Bin(Opcode::kMultiply, c, l.e().BroadcastInDims(inv, x->shape, keep));
  y = l.Bin(Opcode::kMultiply, y, l.e().BroadcastInDims(l.args[1], x->shape, {last}));
  return l.Bin(Opcode::kAdd, y, l.e().BroadcastInDims(l.args[2], x->shape, {last}));
}

// XLA SAME padding: total = max((out - 1) * stride + window - in, 0), lo = total / 2.
ir::WindowDim Window(int64_t in, int64_t window, int64_t stride, bool same) {
  ir::WindowDim w;
  w.size = window;
  w.stride = stride;
  if (same) {
    // As the checker's WindowOut, in an order that cannot overflow: (out - 1) * stride < in.
    int64_t out = in == 0 ? 0 : (in - 1) / stride + 1;
    int64_t total = std::max<int64_t>((out - 1) * stride - in + window, 0);
    w.pad_lo = total / 2;
    w.pad_hi = total - w.pad_lo;
  }
  return w;
}

Result<Instruction*> Conv2d(L& l) {
  Instruction* x = l.x();
  Instruction* k = l.args[1];
  int64_t stride = l.call.args[2].i;
  bool same = l.call.args[3].s == "SAME";
  std::vector<ir::WindowDim> win = {Window(x->shape.dim(1), k->shape.dim(0), stride, same),
                                    Window(x->shape.dim(2), k->shape.dim(1), stride, same)};
  return l.b().Convolution(x, k, "b01f_01io->b01f", win);
}

Result<Instruction*> Pool(L& l, bool is_max) {
  Instruction* x = l.x();
  int64_t window = l.call.args[1].i;
  int64_t stride = l.call.args[2].present ? l.call.args[2].i : window;
  bool same = l.call.args[3].s == "SAME";
  std::vector<ir::WindowDim> win(4);
  win[1] = Window(x->shape.dim(1), window, stride, same);
  win[2] = Window(x->shape.dim(2), window, stride, same);
  Opcode op = is_max ? Opcode::kMaximum : Opcode::kAdd;
  Instruction* init = l.Full(Shape::Scalar(ElementType::kF32), is_max ? -INFINITY : 0.0);
  Instruction* r = l.b().ReduceWindow(x, init, win, l.e().Combiner(op, ElementType::kF32));
  if (is_max) return r;
  return l.Bin(Opcode::kDivide, r,
               l.Like(r, static_cast<double>(window) * static_cast<double>(window)));
}
Result<Instruction*> MaxPool(L& l) { return Pool(l, true); }
Result<Instruction*> AvgPool(L& l) { return Pool(l, false); }

Result<Instruction*> Reshape(L& l) { return l.b().Reshape(l.x(), l.result.dims()); }

// jnp.take(table, ids, axis=0) as a gather of rows.
Result<Instruction*> Embedding(L& l) {
  Instruction* table = l.x();
  Instruction* ids = l.args[1];
  ir::GatherDims g;
  int64_t r = ids->shape.rank();
  g.offset_dims = {r};
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.index_vector_dim = r;
  g.slice_sizes = {1, table->shape.dim(1)};
  return l.b().Gather(table, ids, g);
}

// Multi-head self-attention (as flax.linen.MultiHeadDotProductAttention with a causal mask):
// q, k, v = x @ wq, x @ wk, x @ wv split into heads; softmax(q k^T / sqrt(dh) masked) v; @ wo.
Result<Instruction*> Attention(L& l) {
  Instruction* x = l.x();
  int64_t batch = x->shape.dim(0), t = x->shape.dim(1), d = x->shape.dim(2);
  int64_t heads = l.call.args[5].i, dh = d / heads;
  ir::DotDims proj;
  proj.lhs_contracting = {2};
  proj.rhs_contracting = {0};
  auto split = [&](Instruction* w) {
    Instruction* y = l.b().Dot(x, w, proj);                                         // [B,T,D]
    return l.b().Transpose(l.b().Reshape(y, {batch, t, heads, dh}), {0, 2, 1, 3});  // [B,H,T,dh]
  };
  Instruction* q = split(l.args[1]);
  Instruction* k = split(l.args[2]);
  Instruction* v = split(l.args[3]);
  ir::DotDims qk;
  qk.lhs_batch = qk.rhs_batch = {0, 1};
  qk.lhs_contracting = qk.rhs_contracting = {3};
  Instruction* scores = l.b().Dot(q, k, qk);  // [B,H,T,T]
  scores = l.Bin(Opcode::kDivide, scores, l.Like(scores, std::sqrt(static_cast<float>(dh))));
  if (l.call.args[6].b) {
    Shape ids(ElementType::kS32, scores->shape.dims());
    Instruction* allowed =
        l.b().Compare(l.b().Iota(ids, 2), l.b().Iota(ids, 3), ir::Direction::kGe);
    scores = l.b().Select(allowed, scores, l.Like(scores, -INFINITY));
  }
  Instruction* ex = l.Un(Opcode::kExp, Shifted(l, scores, 3));
  Instruction* probs = l.Bin(Opcode::kDivide, ex, ReduceKeep(l, ex, Opcode::kAdd, 3));
  ir::DotDims pv;
  pv.lhs_batch = pv.rhs_batch = {0, 1};
  pv.lhs_contracting = {3};
  pv.rhs_contracting = {2};
  Instruction* o = l.b().Dot(probs, v, pv);  // [B,H,T,dh]
  o = l.b().Reshape(l.b().Transpose(o, {0, 2, 1, 3}), {batch, t, d});
  return l.b().Dot(o, l.args[4], proj);
}

Result<Instruction*> Accuracy(L& l) { return l.e().Accuracy(l.x(), l.args[1]); }

Result<Instruction*> FoldIn(L& l) {
  return l.e().FoldIn(l.x(), l.e().ScalarU32(static_cast<uint32_t>(l.call.args[1].i)));
}

struct LayerEntry {
  const char* name;
  LayerFn fn;
};

constexpr LayerEntry kLayers[] = {
    {"relu", Relu},
    {"gelu", Gelu},
    {"tanh", Tanh},
    {"sigmoid", Sigmoid},
    {"exp", Exp},
    {"log", Log},
    {"sqrt", Sqrt},
    {"rsqrt", Rsqrt},
    {"abs", Abs},
    {"sin", Sin},
    {"cos", Cos},
    {"softmax", Softmax},
    {"log_softmax", LogSoftmax},
    {"softmax_cross_entropy", SoftmaxCrossEntropy},
    {"sigmoid_binary_cross_entropy", SigmoidBce},
    {"mse", Mse},
    {"mean", Mean},
    {"sum", Sum},
    {"dropout", Dropout},
    {"layer_norm", LayerNorm},
    {"conv2d", Conv2d},
    {"max_pool", MaxPool},
    {"avg_pool", AvgPool},
    {"reshape", Reshape},
    {"flatten", Reshape},
    {"embedding", Embedding},
    {"attention", Attention},
    {"accuracy", Accuracy},
    {"fold_in", FoldIn},
};

}  // namespace

Result<Instruction*> LowerLayer(LowerCtx& ctx, const Expr& e, const CheckedCall& call,
                                const std::vector<Instruction*>& args, const Shape& result) {
  for (const LayerEntry& entry : kLayers) {
    if (std::strcmp(entry.name, call.builtin->name) == 0) {
      L l{ctx, call, args, result};
      return entry.fn(l);
    }
  }
  return Internal(std::string("no lowering for layer '") + call.builtin->name + "'");
}

}  // namespace detrain::frontend
