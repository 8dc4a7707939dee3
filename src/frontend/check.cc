// Program-level checks: parameters, functions, the data source, settings, the loss and metrics.
// See check.h and docs/language.md.
#include "frontend/check.h"

#include "base/budget.h"
#include "base/checked.h"
#include "frontend/check_internal.h"
#include "frontend/number.h"

namespace detrain::frontend {

Result<Type> Checker::ResolveType(const TypeExpr& t, bool allow_symbols) {
  if (t.is_key) return Type::Key();
  Type r;
  if (!ParseDType(t.dtype, &r.dtype)) {
    return src_.Error(t.range,
                      "unknown element type '" + t.dtype + "' (expected f32, s32 or pred)");
  }
  for (const Dim& d : t.dims) {
    if (!d.symbol.empty()) {
      if (!allow_symbols) {
        return src_.Error(d.range,
                          "parameter shapes must be static, found the name '" + d.symbol + "'");
      }
      r.dims.push_back(DimValue::Sym(d.symbol));
    } else {
      r.dims.push_back(DimValue::Of(d.size));
    }
  }
  std::vector<int64_t> sizes;
  for (const Dim& d : t.dims) {
    if (d.symbol.empty()) sizes.push_back(d.size);
  }
  Result<int64_t> n = CheckedElementCount(sizes, r.ToString());
  if (!n.ok()) return src_.Error(t.range, n.status().message());
  return r;
}

Status Checker::CheckParams() {
  nlohmann::json params = nlohmann::json::array();
  for (const ParamDecl& p : prog_.params) {
    if (globals_.count(p.name))
      return src_.Error(p.name_range, "parameter '" + p.name + "' is declared twice");
    DETRAIN_ASSIGN_OR_RETURN(Type t, ResolveType(p.type, false));
    if (t.kind != ValueKind::kTensor || t.dtype != DType::kF32) {
      return src_.Error(p.type.range, "parameters must be f32 tensors, found " + t.ToString());
    }
    const BuiltinDef* init;
    DETRAIN_ASSIGN_OR_RETURN(std::vector<ArgValue> args,
                             BindConfig(*p.init, BuiltinCategory::kInitializer, &init));
    std::string name(init->name);
    bool fan_based = name.find("glorot") == 0 || name.find("he_") == 0 || name.find("lecun") == 0;
    if (fan_based && t.rank() < 2) {
      return src_.Error(p.init->range,
                        name +
                            " needs a parameter of rank >= 2 (it uses fan-in and fan-out), "
                            "found " +
                            t.ToString() + "; use zeros, ones or normal");
    }
    // Parameters are allocated at init: one too large for the memory budget is refused here,
    // where it can be named, rather than by the allocator.
    std::vector<int64_t> sizes;
    for (const DimValue& d : t.dims) sizes.push_back(d.size);
    int64_t bytes = ByteSize(CheckedElementCount(sizes).value(), 4);  // ResolveType checked it
    std::string what = "parameter '" + p.name + "' " + t.ToString();
    Status fits = CheckDeclaredTensorBytes(bytes, what);
    if (fits.ok() && !CheckedAdd(param_bytes_, bytes, &param_bytes_)) param_bytes_ = INT64_MAX;
    if (fits.ok()) fits = CheckDeclaredTotalBytes(param_bytes_, what + " with those before it");
    if (!fits.ok()) return src_.Error(p.name_range, fits.message());
    globals_[p.name] = t;
    out_.params.emplace_back(p.name, t);
    params.push_back({{"name", p.name}, {"type", t.ToString()}, {"init", ConfigJson(*init, args)}});
  }
  config_["params"] = params;
  return Status::Ok();
}

Status Checker::CheckFunction(const FuncDecl& f) {
  if (funcs_.count(f.name))
    return src_.Error(f.name_range, "function '" + f.name + "' is defined twice");
  if (globals_.count(f.name))
    return src_.Error(f.name_range, "'" + f.name + "' is already a parameter");
  locals_.clear();
  for (const FuncArg& a : f.args) {
    if (locals_.count(a.name))
      return src_.Error(a.range, "argument '" + a.name + "' is declared twice");
    DETRAIN_ASSIGN_OR_RETURN(Type t, ResolveType(a.type, true));
    locals_[a.name] = t;
  }
  DETRAIN_ASSIGN_OR_RETURN(Type declared, ResolveType(f.result, true));
  if (f.body.empty() || !f.body.back().is_return) {
    return src_.Error(f.range, "function '" + f.name + "' must end with a return statement");
  }
  for (size_t i = 0; i < f.body.size(); ++i) {
    const Stmt& s = f.body[i];
    if (s.is_return && i + 1 != f.body.size()) {
      return src_.Error(f.body[i + 1].target_range, "statement after return");
    }
    DETRAIN_ASSIGN_OR_RETURN(Type t, TypeOf(*s.value));
    DETRAIN_ASSIGN_OR_RETURN(int depth, InlinedDepth(*s.value));
    inlined_depth_[&f] = std::max(inlined_depth_[&f], depth);
    if (t.kind == ValueKind::kLiteral) {
      return src_.Error(s.value->range, "a constant alone is not a tensor; combine it with one");
    }
    if (!s.is_return) {
      if (globals_.count(s.target)) {
        return src_.Error(s.target_range, "cannot assign to parameter '" + s.target + "'");
      }
      locals_[s.target] = t;
    } else if (!(t == declared)) {
      return src_.Error(s.value->range, f.name + " returns " + t.ToString() +
                                            " but is declared -> " + declared.ToString());
    }
  }
  funcs_[f.name] = &f;
  locals_.clear();
  return Status::Ok();
}

Status Checker::CheckData() {
  if (prog_.data.empty()) {
    return src_.Error(
        {static_cast<uint32_t>(src_.text().size()), static_cast<uint32_t>(src_.text().size())},
        "missing a data source (data NAME = csv(...), npy(...), npz(...) or text(...))");
  }
  if (prog_.data.size() > 1) {
    return src_.Error(prog_.data[1].name_range,
                      "only one data source is supported; split it with validation = F");
  }
  const DataDecl& d = prog_.data[0];
  const BuiltinDef* def;
  DETRAIN_ASSIGN_OR_RETURN(std::vector<ArgValue> args,
                           BindConfig(*d.source, BuiltinCategory::kData, &def));
  out_.data = &d;
  nlohmann::json j = ConfigJson(*def, args);
  j["as"] = d.name;
  // The configuration omits csv's header at its default (run_config.h), as it omits columns.
  if (j.contains("header") && j["header"] == false) j.erase("header");
  config_["data"] = j;
  return Status::Ok();
}

Status Checker::CheckSettings() {
  const Setting* optimizer = nullptr;
  const Setting* train = nullptr;
  const Setting* metrics = nullptr;
  for (const Setting& s : prog_.settings) {
    const Setting** slot = s.keyword == "optimizer" ? &optimizer
                           : s.keyword == "train"   ? &train
                                                    : &metrics;
    if (*slot != nullptr) return src_.Error(s.keyword_range, "'" + s.keyword + "' is given twice");
    *slot = &s;
  }
  SourceRange eof{static_cast<uint32_t>(src_.text().size()),
                  static_cast<uint32_t>(src_.text().size())};
  if (optimizer == nullptr)
    return src_.Error(eof, "missing 'optimizer = ...' (one of: " +
                               BuiltinNames(BuiltinCategory::kOptimizer) + ")");
  if (train == nullptr) return src_.Error(eof, "missing 'train(steps = N, batch = N, ...)'");
  const BuiltinDef* def;
  DETRAIN_ASSIGN_OR_RETURN(std::vector<ArgValue> opt,
                           BindConfig(*optimizer->value, BuiltinCategory::kOptimizer, &def));
  config_["optimizer"] = ConfigJson(*def, opt);
  DETRAIN_ASSIGN_OR_RETURN(std::vector<ArgValue> tr,
                           BindConfig(*train->value, BuiltinCategory::kTrain, &def));
  nlohmann::json tj = ConfigJson(*def, tr);
  tj.erase("name");
  config_["train"] = tj;
  if (metrics != nullptr) {
    if (metrics->value->kind != ExprKind::kList) {
      return src_.Error(metrics->value->range, "expected a list of metrics such as [accuracy]");
    }
    for (const auto& m : metrics->value->operands) {
      if (m->kind != ExprKind::kName || (m->text != "accuracy" && m->text != "loss")) {
        return src_.Error(m->range, "unknown metric '" + Abbreviate(src_.Slice(m->range)) +
                                        "' (expected accuracy or loss)");
      }
      metrics_.push_back(m->text);
    }
  }
  config_["metrics"] = metrics_;
  return Status::Ok();
}

// A batch input holds `batch` rows (the whole batch, in the step that splits it into shards):
// its size must fit, and fit the memory budget, before the driver reads any data.
Status Checker::CheckBatchInput(const FuncArg& a) {
  std::vector<int64_t> sizes = {config_["train"]["batch"].get<int64_t>()};
  for (size_t d = 1; d < a.type.dims.size(); ++d) {
    if (a.type.dims[d].symbol.empty()) sizes.push_back(a.type.dims[d].size);
  }
  std::string what = "the batch input '" + a.name + "' " + std::string(src_.Slice(a.type.range)) +
                     " with " + a.type.dims[0].symbol + " = " + std::to_string(sizes[0]);
  Result<int64_t> n = CheckedElementCount(sizes, what);
  if (!n.ok()) return src_.Error(a.type.range, n.status().message());
  Status fits = CheckDeclaredTensorBytes(ByteSize(*n, 4), what);
  if (!fits.ok()) return src_.Error(a.type.range, fits.message());
  return Status::Ok();
}

Status Checker::CheckLossAndMetrics() {
  auto it = funcs_.find("loss");
  SourceRange eof{static_cast<uint32_t>(src_.text().size()),
                  static_cast<uint32_t>(src_.text().size())};
  if (it == funcs_.end()) {
    return src_.Error(eof,
                      "missing 'def loss(...) -> f32[] { ... }': the function training minimizes");
  }
  const FuncDecl& loss = *it->second;
  out_.loss = &loss;
  if (!loss.result.is_key && (loss.result.dtype != "f32" || !loss.result.dims.empty())) {
    return src_.Error(loss.result.range, "loss must return a scalar f32[]");
  }
  std::string batch_symbol;
  size_t inputs = 0;
  for (size_t i = 0; i < loss.args.size(); ++i) {
    const FuncArg& a = loss.args[i];
    if (a.type.is_key) {
      if (i + 1 != loss.args.size())
        return src_.Error(a.range, "the key must be the last argument of loss");
      continue;
    }
    if (a.type.dims.empty() || a.type.dims[0].symbol.empty()) {
      return src_.Error(a.type.range,
                        "batch inputs of loss need a named first dimension, as in f32[B, 30]");
    }
    if (batch_symbol.empty()) batch_symbol = a.type.dims[0].symbol;
    if (a.type.dims[0].symbol != batch_symbol) {
      return src_.Error(a.type.dims[0].range,
                        "all batch inputs must share the batch dimension '" + batch_symbol + "'");
    }
    DETRAIN_RETURN_IF_ERROR(CheckBatchInput(a));
    ++inputs;
  }
  if (inputs < 2)
    return src_.Error(loss.name_range, "loss needs the batch inputs: features and labels");
  config_["batch_dim"] = batch_symbol;
  for (const std::string& m : metrics_) {
    if (m != "accuracy") continue;
    auto p = funcs_.find("predict");
    if (p == funcs_.end()) {
      return src_.Error(eof,
                        "the accuracy metric needs 'def predict(features...) -> f32[B, classes]'");
    }
    out_.predict = p->second;
  }
  return Status::Ok();
}

Result<CheckedProgram> Checker::Run() {
  config_["format"] = kRunConfigFormat;
  DETRAIN_RETURN_IF_ERROR(CheckParams());
  for (const FuncDecl& f : prog_.funcs) DETRAIN_RETURN_IF_ERROR(CheckFunction(f));
  DETRAIN_RETURN_IF_ERROR(CheckData());
  DETRAIN_RETURN_IF_ERROR(CheckSettings());
  DETRAIN_RETURN_IF_ERROR(CheckLossAndMetrics());
  // The built-in rules enforce what the parser checks, so this is not expected to fail; if a rule
  // and the parser ever disagree, the message names the field.
  Result<RunConfig> config = ParseRunConfig(config_);
  if (!config.ok()) return InvalidArgument(src_.name() + ": " + config.status().message());
  out_.config = std::move(*config);
  return std::move(out_);
}

Result<CheckedProgram> Check(const SourceFile& source, const Program& program) {
  return Checker(source, program).Run();
}

}  // namespace detrain::frontend
