// Rules of the configuration built-ins: initializers, optimizers, learning-rate schedules, data
// sources and train(...). They check ranges; the values themselves are collected into the
// hashed run configuration by the checker (frontend/check.cc).
#include <cmath>

#include "frontend/builtins.h"

namespace detrain::frontend {
namespace {

using K = ArgKind;
using C = BuiltinCategory;

Result<Type> NoCheck(const CallContext&) { return Type::Literal(); }

Status Positive(const CallContext& c, size_t i) {
  const ArgValue& a = c.arg(i);
  if (a.present && !(a.f > 0 && std::isfinite(a.f))) {
    return c.ErrorAt(i, "must be a positive number, found " + a.s);
  }
  return Status::Ok();
}

Status InUnitInterval(const CallContext& c, size_t i, bool closed_right) {
  double v = c.arg(i).f;
  if (!(v >= 0 && (closed_right ? v <= 1 : v < 1))) {
    return c.ErrorAt(
        i, std::string("must be in [0, 1") + (closed_right ? "]" : ")") + ", found " + c.arg(i).s);
  }
  return Status::Ok();
}

Status AtLeast(const CallContext& c, size_t i, int64_t min) {
  if (c.arg(i).present && c.arg(i).i < min) {
    return c.ErrorAt(i,
                     "must be >= " + std::to_string(min) + ", found " + std::to_string(c.arg(i).i));
  }
  return Status::Ok();
}

Result<Type> StddevRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(Positive(c, 0));
  return Type::Literal();
}

Result<Type> MomentumRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(InUnitInterval(c, 1, false));
  return Type::Literal();
}

Result<Type> AdamRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(InUnitInterval(c, 1, false));  // b1
  DETRAIN_RETURN_IF_ERROR(InUnitInterval(c, 2, false));  // b2
  if (!(c.arg(3).f >= 0)) return c.ErrorAt(3, "eps must be >= 0, found " + c.arg(3).s);
  if (c.args.size() == 6 && !(c.arg(4).f >= 0)) {  // adamw
    return c.ErrorAt(4, "weight_decay must be >= 0, found " + c.arg(4).s);
  }
  return Type::Literal();
}

Result<Type> ClipRule(const CallContext& c, size_t i) {
  if (c.arg(i).present && !(c.arg(i).f > 0)) {
    return c.ErrorAt(i, "clip_norm must be positive, found " + c.arg(i).s);
  }
  return Type::Literal();
}

// A constant learning rate must be positive; a schedule checks its own values.
Status LearningRate(const CallContext& c) {
  const ArgValue& lr = c.arg(0);
  if (lr.expr != nullptr && lr.expr->kind == ExprKind::kCall) return Status::Ok();
  if (!(lr.f > 0 && std::isfinite(lr.f))) {
    return c.ErrorAt(0, "learning_rate must be positive, found " + lr.s);
  }
  return Status::Ok();
}

Result<Type> SgdRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(LearningRate(c));
  return ClipRule(c, 1);
}
Result<Type> MomentumClipRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(LearningRate(c));
  DETRAIN_RETURN_IF_ERROR(MomentumRule(c).status());
  return ClipRule(c, 3);
}
Result<Type> AdamClipRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(LearningRate(c));
  DETRAIN_RETURN_IF_ERROR(AdamRule(c).status());
  return ClipRule(c, c.args.size() - 1);
}

Status NonNegative(const CallContext& c, size_t i) {
  if (c.arg(i).present && !(c.arg(i).f >= 0 && std::isfinite(c.arg(i).f))) {
    return c.ErrorAt(i, "must be >= 0, found " + c.arg(i).s);
  }
  return Status::Ok();
}

Result<Type> ConstantScheduleRule(const CallContext& c) {
  if (!(c.arg(0).f > 0 && std::isfinite(c.arg(0).f))) {
    return c.ErrorAt(0, "learning rate must be positive, found " + c.arg(0).s);
  }
  return Type::Literal();
}

Result<Type> LinearScheduleRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(NonNegative(c, 0));
  DETRAIN_RETURN_IF_ERROR(NonNegative(c, 1));
  DETRAIN_RETURN_IF_ERROR(AtLeast(c, 2, 1));
  return Type::Literal();
}

Result<Type> CosineRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(NonNegative(c, 0));
  DETRAIN_RETURN_IF_ERROR(AtLeast(c, 1, 1));
  DETRAIN_RETURN_IF_ERROR(InUnitInterval(c, 2, true));
  return Type::Literal();
}

Result<Type> WarmupCosineRule(const CallContext& c) {
  for (size_t i : {size_t{0}, size_t{1}, size_t{4}}) DETRAIN_RETURN_IF_ERROR(NonNegative(c, i));
  DETRAIN_RETURN_IF_ERROR(AtLeast(c, 2, 0));
  DETRAIN_RETURN_IF_ERROR(AtLeast(c, 3, 1));
  if (c.arg(2).i >= c.arg(3).i)
    return c.ErrorAt(2, "warmup_steps must be smaller than decay_steps");
  return Type::Literal();
}

Result<Type> CsvRule(const CallContext& c) {
  // 0 path, 1 label, 2 skip_rows, 3 standardize, 4 validation, 5 header, 6 columns
  DETRAIN_RETURN_IF_ERROR(AtLeast(c, 2, 0));             // skip_rows
  DETRAIN_RETURN_IF_ERROR(InUnitInterval(c, 4, false));  // validation
  if (c.arg(0).s.empty()) return c.ErrorAt(0, "the path must not be empty");
  const ArgValue& columns = c.arg(6);
  std::optional<ColumnProblem> p =
      CheckCsvColumns(c.arg(5).b, c.arg(1).columns[0], columns.columns, columns.present);
  if (!p.has_value()) return Type::Literal();
  if (p->entry == ColumnProblem::kLabelEntry) return c.ErrorAt(1, p->message);
  if (p->entry == ColumnProblem::kListEntry) return c.ErrorAt(6, p->message);
  const Expr& item = *columns.expr->operands[static_cast<size_t>(p->entry)];
  return c.source->Error(item.range, std::string(c.callee) + ": " + p->message);
}

Result<Type> NpyRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(InUnitInterval(c, 3, false));
  return Type::Literal();
}

Result<Type> NpzRule(const CallContext& c) {
  // 0 path, 1 features, 2 labels, 3 standardize, 4 validation
  if (c.arg(0).s.empty()) return c.ErrorAt(0, "the path must not be empty");
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (c.arg(i).s.empty()) return c.ErrorAt(i, "an array name must not be empty");
  }
  DETRAIN_RETURN_IF_ERROR(InUnitInterval(c, 4, false));
  return Type::Literal();
}

Result<Type> TextRule(const CallContext& c) {
  DETRAIN_RETURN_IF_ERROR(AtLeast(c, 1, 1));
  DETRAIN_RETURN_IF_ERROR(InUnitInterval(c, 2, false));
  return Type::Literal();
}

Result<Type> TrainRule(const CallContext& c) {
  // 0 steps, 1 epochs, 2 batch, 3 shards, 4 seed, 5 checkpoint_every, 6 eval_every, 7 prng
  if (c.arg(0).present == c.arg(1).present) {
    return c.Error("give exactly one of steps = N or epochs = N");
  }
  // The limits are run_config.h's, the same for every form of the configuration.
  static constexpr const char* kFields[] = {"steps", "epochs",           "batch",     "shards",
                                            "seed",  "checkpoint_every", "eval_every"};
  for (size_t i = 0; i < 7; ++i) {
    if (i < 2 && !c.arg(i).present) continue;  // the others have valid defaults
    if (std::string why = TrainFieldProblem(kFields[i], c.arg(i).i); !why.empty()) {
      return c.ErrorAt(i, std::string(kFields[i]) + " " + why);
    }
  }
  const int64_t shards = c.arg(3).i;
  if (c.arg(2).i % shards != 0) {
    return c.ErrorAt(2, "batch " + std::to_string(c.arg(2).i) + " is not divisible by shards " +
                            std::to_string(shards));
  }
  if (c.arg(7).s != "partitionable" && c.arg(7).s != "original") {
    return c.ErrorAt(
        7, "prng must be \"partitionable\" or \"original\", found \"" + c.arg(7).s + "\"");
  }
  return Type::Literal();
}

}  // namespace

void AppendConfigBuiltins(std::vector<BuiltinDef>* t) {
  for (const char* name : {"zeros", "ones", "glorot_uniform", "glorot_normal", "he_uniform",
                           "he_normal", "lecun_normal"}) {
    t->push_back({name, C::kInitializer, {}, NoCheck, "jax.nn.initializers"});
  }
  t->push_back({"normal",
                C::kInitializer,
                {{"stddev", K::kFloat, "0.01"}},
                StddevRule,
                "jax.nn.initializers.normal"});
  t->push_back({"constant",
                C::kInitializer,
                {{"value", K::kFloat, nullptr}},
                NoCheck,
                "every element = value"});

  t->push_back({"sgd",
                C::kOptimizer,
                {{"learning_rate", K::kSchedule, nullptr}, {"clip_norm", K::kFloat, "none"}},
                SgdRule,
                "optax.sgd"});
  t->push_back({"momentum",
                C::kOptimizer,
                {{"learning_rate", K::kSchedule, nullptr},
                 {"momentum", K::kFloat, "0.9"},
                 {"nesterov", K::kBool, "false"},
                 {"clip_norm", K::kFloat, "none"}},
                MomentumClipRule,
                "optax.sgd with momentum"});
  t->push_back({"adam",
                C::kOptimizer,
                {{"learning_rate", K::kSchedule, nullptr},
                 {"b1", K::kFloat, "0.9"},
                 {"b2", K::kFloat, "0.999"},
                 {"eps", K::kFloat, "1e-8"},
                 {"clip_norm", K::kFloat, "none"}},
                AdamClipRule,
                "optax.adam"});
  t->push_back({"adamw",
                C::kOptimizer,
                {{"learning_rate", K::kSchedule, nullptr},
                 {"b1", K::kFloat, "0.9"},
                 {"b2", K::kFloat, "0.999"},
                 {"eps", K::kFloat, "1e-8"},
                 {"weight_decay", K::kFloat, "1e-4"},
                 {"clip_norm", K::kFloat, "none"}},
                AdamClipRule,
                "optax.adamw"});

  t->push_back({"constant",
                C::kSchedule,
                {{"value", K::kFloat, nullptr}},
                ConstantScheduleRule,
                "optax.constant_schedule"});
  t->push_back(
      {"linear",
       C::kSchedule,
       {{"init", K::kFloat, nullptr}, {"end", K::kFloat, nullptr}, {"steps", K::kInt, nullptr}},
       LinearScheduleRule,
       "optax.linear_schedule"});
  t->push_back(
      {"cosine_decay",
       C::kSchedule,
       {{"init", K::kFloat, nullptr}, {"decay_steps", K::kInt, nullptr}, {"alpha", K::kFloat, "0"}},
       CosineRule,
       "optax.cosine_decay_schedule"});
  t->push_back({"warmup_cosine_decay",
                C::kSchedule,
                {{"init", K::kFloat, nullptr},
                 {"peak", K::kFloat, nullptr},
                 {"warmup_steps", K::kInt, nullptr},
                 {"decay_steps", K::kInt, nullptr},
                 {"end", K::kFloat, "0"}},
                WarmupCosineRule,
                "optax.warmup_cosine_decay_schedule"});

  t->push_back({"csv",
                C::kData,
                {{"path", K::kString, nullptr},
                 {"label", K::kColumn, "-1"},
                 {"skip_rows", K::kInt, "0"},
                 {"standardize", K::kBool, "false"},
                 {"validation", K::kFloat, "0"},
                 {"header", K::kBool, "false"},
                 {"columns", K::kColumns, "none"}},
                CsvRule,
                "numeric CSV file: one example per row, one label column"});
  t->push_back({"npy",
                C::kData,
                {{"features", K::kString, nullptr},
                 {"labels", K::kString, nullptr},
                 {"standardize", K::kBool, "false"},
                 {"validation", K::kFloat, "0"}},
                NpyRule,
                "features and labels as .npy files"});
  t->push_back({"npz",
                C::kData,
                {{"path", K::kString, nullptr},
                 {"features", K::kString, "\"x\""},
                 {"labels", K::kString, "\"y\""},
                 {"standardize", K::kBool, "false"},
                 {"validation", K::kFloat, "0"}},
                NpzRule,
                "features and labels as two arrays of one .npz archive (numpy.savez)"});

  t->push_back(
      {"text",
       C::kData,
       {{"path", K::kString, nullptr}, {"context", K::kInt, "32"}, {"validation", K::kFloat, "0"}},
       TextRule,
       "a byte-level corpus cut into sequences of context bytes (inputs) and the next bytes "
       "(labels)"});
  t->push_back({"train",
                C::kTrain,
                {{"steps", K::kInt, "none"},
                 {"epochs", K::kInt, "none"},
                 {"batch", K::kInt, nullptr},
                 {"shards", K::kInt, "8"},
                 {"seed", K::kInt, "0"},
                 {"checkpoint_every", K::kInt, "0"},
                 {"eval_every", K::kInt, "0"},
                 {"prng", K::kString, "\"partitionable\""}},
                TrainRule,
                "the training loop"});
}

}  // namespace detrain::frontend
