// Type rules of the layer library (docs/language.md §Layers). Every rule states the shapes it
// accepts in its error messages, so a user sees what was expected.
#include <algorithm>

#include "base/checked.h"
#include "frontend/builtins.h"

namespace detrain::frontend {
namespace {

using K = ArgKind;
using C = BuiltinCategory;

Status ExpectF32(const CallContext& c, size_t i, const char* what) {
  const Type& t = c.arg(i).type;
  if (t.dtype != DType::kF32) {
    return c.ErrorAt(i, std::string(what) + " must be f32, found " + t.ToString());
  }
  return Status::Ok();
}

// Resolves a possibly negative axis against a rank.
Result<int64_t> Axis(const CallContext& c, size_t i, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    return c.ErrorAt(
        i, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return a;
}

Result<Type> SameAsF32Input(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 0, "the input"));
  return c.arg(0).type;
}

Result<Type> SoftmaxRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 0, "the input"));
  const Type& x = c.arg(0).type;
  if (x.rank() == 0) return c.ErrorAt(0, "needs a tensor of rank >= 1, found " + x.ToString());
  DETRAIN_RETURN_IF_ERROR(Axis(c, 1, c.arg(1).i, x.rank()).status());
  return x;
}

Result<Type> CrossEntropyRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 0, "logits"));
  const Type& logits = c.arg(0).type;
  const Type& labels = c.arg(1).type;
  if (logits.rank() == 0)
    return c.ErrorAt(0, "logits need a class dimension, found " + logits.ToString());
  if (labels.dtype != DType::kS32) {
    return c.ErrorAt(1, "labels must be s32 class indices, found " + labels.ToString());
  }
  std::vector<DimValue> batch(logits.dims.begin(), logits.dims.end() - 1);
  if (labels.dims != batch) {
    return c.Error("labels " + labels.ToString() + " must have the shape of logits " +
                   logits.ToString() + " without its last (class) dimension");
  }
  return Type::Tensor(DType::kF32, batch);
}

Result<Type> BinaryCrossEntropyRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 0, "logits"));
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 1, "labels (0.0 or 1.0)"));
  if (c.arg(0).type.dims != c.arg(1).type.dims) {
    return c.Error("logits " + c.arg(0).type.ToString() + " and labels " +
                   c.arg(1).type.ToString() + " must have the same shape");
  }
  return c.arg(0).type;
}

Result<Type> MseRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 0, "predictions"));
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 1, "targets"));
  if (c.arg(0).type.dims != c.arg(1).type.dims) {
    return c.Error("predictions " + c.arg(0).type.ToString() + " and targets " +
                   c.arg(1).type.ToString() + " must have the same shape");
  }
  return Type::Scalar(DType::kF32);
}

Result<Type> ReduceRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 0, "the input"));
  const Type& x = c.arg(0).type;
  if (!c.arg(1).present) return Type::Scalar(DType::kF32);  // all axes
  std::vector<bool> drop(static_cast<size_t>(x.rank()), false);
  for (int64_t axis : c.arg(1).axes) {
    DETRAIN_ASSIGN_OR_RETURN(int64_t a, Axis(c, 1, axis, x.rank()));
    if (drop[static_cast<size_t>(a)])
      return c.ErrorAt(1, "axis " + std::to_string(axis) + " given twice");
    drop[static_cast<size_t>(a)] = true;
  }
  std::vector<DimValue> dims;
  for (size_t i = 0; i < drop.size(); ++i) {
    if (!drop[i]) dims.push_back(x.dims[i]);
  }
  return Type::Tensor(DType::kF32, dims);
}

Result<Type> DropoutRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 0, "the input"));
  double rate = c.arg(1).f;
  if (!(rate >= 0.0 && rate < 1.0)) {
    return c.ErrorAt(1, "rate must be in [0, 1), found " + c.arg(1).s);
  }
  return c.arg(0).type;
}

Result<Type> LayerNormRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 0, "the input"));
  const Type& x = c.arg(0).type;
  if (x.rank() == 0) return c.ErrorAt(0, "needs a tensor of rank >= 1");
  Type feature = Type::Tensor(DType::kF32, {x.dims.back()});
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!(c.arg(i).type == feature)) {
      return c.ErrorAt(i, std::string(i == 1 ? "scale" : "bias") + " must be " +
                              feature.ToString() + " (the last dimension of the input), found " +
                              c.arg(i).type.ToString());
    }
  }
  if (!(c.arg(3).f > 0)) return c.ErrorAt(3, "eps must be positive");
  return x;
}

// Output size of a window along one dimension (XLA SAME/VALID padding).
Result<int64_t> WindowOut(const CallContext& c, int64_t in, int64_t window, int64_t stride,
                          const std::string& padding, size_t pad_arg) {
  // ceil(in / stride), written so that a huge stride cannot overflow.
  if (padding == "SAME") return in == 0 ? 0 : (in - 1) / stride + 1;
  if (padding == "VALID") {
    if (in < window)
      return c.Error("window " + std::to_string(window) + " is larger than the input size " +
                     std::to_string(in));
    return (in - window) / stride + 1;
  }
  return c.ErrorAt(pad_arg, "padding must be \"SAME\" or \"VALID\", found \"" + padding + "\"");
}

Result<Type> Conv2dRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 0, "the input"));
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 1, "the kernel"));
  const Type& x = c.arg(0).type;
  const Type& w = c.arg(1).type;
  if (x.rank() != 4) return c.ErrorAt(0, "input must be NHWC f32[N,H,W,C], found " + x.ToString());
  if (w.rank() != 4) return c.ErrorAt(1, "kernel must be f32[KH,KW,C,O], found " + w.ToString());
  if (!(x.dims[3] == w.dims[2])) {
    return c.Error("input channels " + x.dims[3].ToString() + " and kernel input channels " +
                   w.dims[2].ToString() + " differ");
  }
  int64_t stride = c.arg(2).i;
  if (stride < 1) return c.ErrorAt(2, "stride must be >= 1");
  std::vector<DimValue> out = {x.dims[0]};
  for (int d : {1, 2}) {
    if (x.dims[d].is_symbol() || w.dims[d - 1].is_symbol())
      return c.Error("spatial dimensions must be static");
    DETRAIN_ASSIGN_OR_RETURN(
        int64_t n, WindowOut(c, x.dims[d].size, w.dims[d - 1].size, stride, c.arg(3).s, 3));
    out.push_back(DimValue::Of(n));
  }
  out.push_back(w.dims[3]);
  return Type::Tensor(DType::kF32, out);
}

Result<Type> PoolRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 0, "the input"));
  const Type& x = c.arg(0).type;
  if (x.rank() != 4) return c.ErrorAt(0, "input must be NHWC f32[N,H,W,C], found " + x.ToString());
  int64_t window = c.arg(1).i;
  int64_t stride = c.arg(2).present ? c.arg(2).i : window;
  if (window < 1) return c.ErrorAt(1, "window must be >= 1");
  if (stride < 1) return c.ErrorAt(2, "stride must be >= 1");
  std::vector<DimValue> out = {x.dims[0]};
  for (int d : {1, 2}) {
    if (x.dims[d].is_symbol()) return c.Error("spatial dimensions must be static");
    if (window > x.dims[d].size) {
      // Also with SAME padding: such a window would mostly cover padding, and each output
      // element would reduce window * window values.
      return c.ErrorAt(1, "window " + std::to_string(window) + " is larger than the input size " +
                              std::to_string(x.dims[d].size));
    }
    DETRAIN_ASSIGN_OR_RETURN(int64_t n,
                             WindowOut(c, x.dims[d].size, window, stride, c.arg(3).s, 3));
    out.push_back(DimValue::Of(n));
  }
  out.push_back(x.dims[3]);
  return Type::Tensor(DType::kF32, out);
}

// Splits dims into the product of static sizes and the sorted list of symbols; false when the
// product overflows (CheckedElementCount's limit).
bool Factor(const std::vector<DimValue>& dims, int64_t* product,
            std::vector<std::string>* symbols) {
  std::vector<int64_t> sizes;
  for (const auto& d : dims) {
    if (d.is_symbol())
      symbols->push_back(d.symbol);
    else
      sizes.push_back(d.size);
  }
  std::sort(symbols->begin(), symbols->end());
  Result<int64_t> n = CheckedElementCount(sizes);
  if (!n.ok()) return false;
  *product = *n;
  return true;
}

Result<Type> ReshapeRule(const CallContext& c) {
  const Type& x = c.arg(0).type;
  std::vector<DimValue> dims = c.arg(1).dims;
  int64_t in_product, out_product;
  std::vector<std::string> in_syms, out_syms;
  if (!Factor(x.dims, &in_product, &in_syms)) return c.ErrorAt(0, "element count overflows");
  size_t inferred = dims.size();
  std::vector<DimValue> known;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].size == -2) {  // -1 written by the user: infer
      if (inferred != dims.size()) return c.ErrorAt(1, "at most one dimension may be -1");
      inferred = i;
    } else {
      known.push_back(dims[i]);
    }
  }
  if (!Factor(known, &out_product, &out_syms)) {
    return c.ErrorAt(1, "the new shape's element count overflows (more than 2^62)");
  }
  if (in_syms != out_syms) {
    return c.ErrorAt(1, "the new shape must keep the same dimension names as " + x.ToString());
  }
  if (inferred != dims.size()) {
    if (out_product == 0 || in_product % out_product != 0) {
      return c.ErrorAt(1, "cannot infer the -1 dimension of a reshape of " + x.ToString());
    }
    dims[inferred] = DimValue::Of(in_product / out_product);
    out_product = in_product;
  }
  if (in_product != out_product) {
    return c.ErrorAt(1, "cannot reshape " + x.ToString() + " (" + std::to_string(in_product) +
                            " elements per name) to " + std::to_string(out_product) + " elements");
  }
  return Type::Tensor(x.dtype, dims);
}

Result<Type> FlattenRule(const CallContext& c) {
  const Type& x = c.arg(0).type;
  if (x.rank() < 1) return c.ErrorAt(0, "needs rank >= 1");
  int64_t n = 1;
  for (size_t i = 1; i < x.dims.size(); ++i) {
    if (x.dims[i].is_symbol()) return c.ErrorAt(0, "only the first dimension may be a name");
    if (!CheckedMul(n, x.dims[i].size, &n)) return c.ErrorAt(0, "element count overflows");
  }
  return Type::Tensor(x.dtype, {x.dims[0], DimValue::Of(n)});
}

Result<Type> EmbeddingRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 0, "the table"));
  const Type& table = c.arg(0).type;
  const Type& ids = c.arg(1).type;
  if (table.rank() != 2) return c.ErrorAt(0, "table must be f32[V,D], found " + table.ToString());
  if (ids.dtype != DType::kS32) return c.ErrorAt(1, "ids must be s32, found " + ids.ToString());
  std::vector<DimValue> out = ids.dims;
  out.push_back(table.dims[1]);
  return Type::Tensor(DType::kF32, out);
}

Result<Type> AttentionRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(ExpectF32(c, 0, "the input"));
  const Type& x = c.arg(0).type;
  if (x.rank() != 3 || x.dims[2].is_symbol()) {
    return c.ErrorAt(0, "input must be f32[B,T,D] with a static D, found " + x.ToString());
  }
  Type square = Type::Tensor(DType::kF32, {x.dims[2], x.dims[2]});
  for (size_t i = 1; i <= 4; ++i) {
    if (!(c.arg(i).type == square)) {
      return c.ErrorAt(
          i, "projection must be " + square.ToString() + ", found " + c.arg(i).type.ToString());
    }
  }
  int64_t heads = c.arg(5).i;
  if (heads < 1 || x.dims[2].size % heads != 0) {
    return c.ErrorAt(5, "heads must divide the model dimension " + x.dims[2].ToString());
  }
  return x;
}

Result<Type> FoldInRule(const CallContext& c) {
  if (c.arg(1).i < 0 || c.arg(1).i > 0xFFFFFFFFll) return c.ErrorAt(1, "data must be in [0, 2^32)");
  return Type::Key();
}

Result<Type> AccuracyRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(CrossEntropyRule(c).status());
  return Type::Scalar(DType::kF32);
}

}  // namespace

void AppendLayerBuiltins(std::vector<BuiltinDef>* t) {
  for (const char* name :
       {"relu", "gelu", "tanh", "sigmoid", "exp", "log", "sqrt", "rsqrt", "abs", "sin", "cos"}) {
    t->push_back({name, C::kLayer, {{"x", K::kTensor, nullptr}}, SameAsF32Input, "elementwise"});
  }
  t->push_back({"softmax",
                C::kLayer,
                {{"x", K::kTensor, nullptr}, {"axis", K::kInt, "-1"}},
                SoftmaxRule,
                "softmax along an axis"});
  t->push_back({"log_softmax",
                C::kLayer,
                {{"x", K::kTensor, nullptr}, {"axis", K::kInt, "-1"}},
                SoftmaxRule,
                "log of softmax, computed stably"});
  t->push_back({"softmax_cross_entropy",
                C::kLayer,
                {{"logits", K::kTensor, nullptr}, {"labels", K::kTensor, nullptr}},
                CrossEntropyRule,
                "per-example cross-entropy with integer labels"});
  t->push_back({"sigmoid_binary_cross_entropy",
                C::kLayer,
                {{"logits", K::kTensor, nullptr}, {"labels", K::kTensor, nullptr}},
                BinaryCrossEntropyRule,
                "elementwise binary cross-entropy on logits"});
  t->push_back({"mse",
                C::kLayer,
                {{"predictions", K::kTensor, nullptr}, {"targets", K::kTensor, nullptr}},
                MseRule,
                "mean squared error over all elements"});
  t->push_back({"mean",
                C::kLayer,
                {{"x", K::kTensor, nullptr}, {"axis", K::kAxes, "none"}},
                ReduceRule,
                "mean over axes (all by default)"});
  t->push_back({"sum",
                C::kLayer,
                {{"x", K::kTensor, nullptr}, {"axis", K::kAxes, "none"}},
                ReduceRule,
                "sum over axes (all by default)"});
  t->push_back(
      {"dropout",
       C::kLayer,
       {{"x", K::kTensor, nullptr}, {"rate", K::kFloat, nullptr}, {"key", K::kKey, nullptr}},
       DropoutRule,
       "zero with probability rate, scale the rest by 1/(1-rate)"});
  t->push_back({"layer_norm",
                C::kLayer,
                {{"x", K::kTensor, nullptr},
                 {"scale", K::kTensor, nullptr},
                 {"bias", K::kTensor, nullptr},
                 {"eps", K::kFloat, "1e-5"}},
                LayerNormRule,
                "normalize over the last dimension"});
  t->push_back({"conv2d",
                C::kLayer,
                {{"x", K::kTensor, nullptr},
                 {"kernel", K::kTensor, nullptr},
                 {"stride", K::kInt, "1"},
                 {"padding", K::kString, "\"SAME\""}},
                Conv2dRule,
                "2-D convolution, NHWC input, HWIO kernel"});
  for (const char* name : {"max_pool", "avg_pool"}) {
    t->push_back({name,
                  C::kLayer,
                  {{"x", K::kTensor, nullptr},
                   {"window", K::kInt, "2"},
                   {"stride", K::kInt, "none"},
                   {"padding", K::kString, "\"VALID\""}},
                  PoolRule,
                  "2-D pooling over H and W of NHWC"});
  }
  t->push_back({"reshape",
                C::kLayer,
                {{"x", K::kTensor, nullptr}, {"shape", K::kDims, nullptr}},
                ReshapeRule,
                "new shape, same elements in row-major order"});
  t->push_back({"flatten",
                C::kLayer,
                {{"x", K::kTensor, nullptr}},
                FlattenRule,
                "collapse all but the first dimension"});
  t->push_back({"embedding",
                C::kLayer,
                {{"table", K::kTensor, nullptr}, {"ids", K::kTensor, nullptr}},
                EmbeddingRule,
                "rows of a table, by integer id"});
  t->push_back({"attention",
                C::kLayer,
                {{"x", K::kTensor, nullptr},
                 {"wq", K::kTensor, nullptr},
                 {"wk", K::kTensor, nullptr},
                 {"wv", K::kTensor, nullptr},
                 {"wo", K::kTensor, nullptr},
                 {"heads", K::kInt, nullptr},
                 {"causal", K::kBool, "true"}},
                AttentionRule,
                "multi-head self-attention"});
  t->push_back({"fold_in",
                C::kLayer,
                {{"key", K::kKey, nullptr}, {"data", K::kInt, nullptr}},
                FoldInRule,
                "a new key: jax.random.fold_in(key, data)"});
  t->push_back({"accuracy",
                C::kLayer,
                {{"logits", K::kTensor, nullptr}, {"labels", K::kTensor, nullptr}},
                AccuracyRule,
                "fraction of argmax(logits) equal to labels"});
}

}  // namespace detrain::frontend
