// `detrain math FUNCTION X...` (and `detrain math pow X Y [X Y ...]`): evaluates detrain's
// correctly rounded float32 functions (src/base/math/crmath.h, docs/math.md) so that an auditor
// can check any value by hand. Each X is a decimal (parsed correctly rounded and locale-free with
// std::from_chars) or a bit pattern `0x` + 8 hex digits. Prints one JSON object:
//   {"function": "exp", "results": [{"input": "0x3f800000", "output": "0x402df854",
//                                    "value": "2.7182817"}]}
// (for pow "input" is ["0x...", "0x..."]); "value" is the shortest decimal that round-trips.
// Every argument is checked before anything is printed. Stateless: deterministic output.
#include <charconv>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/math/crmath.h"
#include "cli/command.h"

namespace detrain::cli {
namespace {

struct MathOptions {
  std::string function;
  std::vector<std::string> args;
};

struct UnaryFn {
  const char* name;
  float (*fn)(float);
};

constexpr UnaryFn kUnary[] = {
    {"exp", crmath::Exp},     {"expm1", crmath::Expm1},       {"exp2", crmath::Exp2},
    {"log", crmath::Log},     {"log1p", crmath::Log1p},       {"log2", crmath::Log2},
    {"tanh", crmath::Tanh},   {"logistic", crmath::Logistic}, {"erf", crmath::Erf},
    {"rsqrt", crmath::Rsqrt}, {"erfinv", crmath::Erfinv},     {"sin", crmath::Sin},
    {"cos", crmath::Cos}};

std::string FunctionList() {
  std::string s;
  for (const UnaryFn& f : kUnary) s += std::string(f.name) + ", ";
  return s + "pow";
}

uint32_t Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

std::string Hex(float x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", Bits(x));
  return buf;
}

std::string Shortest(float x) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, res.ptr);
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// A float32 from a decimal ("1.5", "-2e-3", "inf", "nan") or a bit pattern ("0x3fc00000").
Result<float> ParseFloat(const std::string& s) {
  const std::string hint =
      " (give a decimal such as 1.5 or -2e-3, or a float32 bit pattern "
      "such as 0x3fc00000)";
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    bool ok = s.size() == 10;
    for (size_t i = 2; ok && i < s.size(); ++i) ok = IsHexDigit(s[i]);
    if (!ok) {
      return InvalidArgument("'" + s +
                             "' is not a bit pattern: expected 0x and exactly 8 hex "
                             "digits" +
                             hint);
    }
    uint32_t u = 0;
    std::from_chars(s.data() + 2, s.data() + s.size(), u, 16);
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
  }
  float x = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), x, std::chars_format::general);
  if (res.ec == std::errc::result_out_of_range) {
    return InvalidArgument("'" + s +
                           "' is outside the float32 range (its magnitude rounds to "
                           "0 or overflows); give 0, inf or a bit pattern instead");
  }
  if (res.ec != std::errc() || res.ptr != s.data() + s.size() || s.empty()) {
    return InvalidArgument("'" + s + "' is not a float32" + hint);
  }
  return x;
}

Result<nlohmann::json> Evaluate(const MathOptions& opts) {
  std::vector<float> xs;
  for (const std::string& a : opts.args) {
    DETRAIN_ASSIGN_OR_RETURN(float x, ParseFloat(a));
    xs.push_back(x);
  }
  nlohmann::json results = nlohmann::json::array();
  if (opts.function == "pow") {
    if (xs.size() % 2 != 0) {
      return InvalidArgument("pow takes pairs X Y (x^y); got " + std::to_string(xs.size()) +
                             " numbers, the last one ('" + opts.args.back() + "') has no Y");
    }
    for (size_t i = 0; i < xs.size(); i += 2) {
      float r = crmath::Pow(xs[i], xs[i + 1]);
      results.push_back(
          {{"input", {Hex(xs[i]), Hex(xs[i + 1])}}, {"output", Hex(r)}, {"value", Shortest(r)}});
    }
  } else {
    const UnaryFn* fn = nullptr;
    for (const UnaryFn& f : kUnary) {
      if (opts.function == f.name) fn = &f;
    }
    if (fn == nullptr) {
      return InvalidArgument("unknown function '" + opts.function + "' (expected one of " +
                             FunctionList() + ")");
    }
    for (float x : xs) {
      float r = fn->fn(x);
      results.push_back({{"input", Hex(x)}, {"output", Hex(r)}, {"value", Shortest(r)}});
    }
  }
  nlohmann::json out;
  out["function"] = opts.function;
  out["results"] = std::move(results);
  return out;
}

int RunMath(const MathOptions& opts) {
  Result<nlohmann::json> j = Evaluate(opts);
  if (!j.ok()) return ReportError("math", j.status());
  std::cout << j->dump() << "\n";
  return kExitOk;
}

}  // namespace

void RegisterMathCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<MathOptions>();
  CLI::App* cmd = app.add_subcommand(
      "math", "Evaluate detrain's correctly rounded float32 functions (to check values by hand)");
  cmd->add_option("FUNCTION", opts->function, "One of: " + FunctionList())->required();
  cmd->add_option("X", opts->args,
                  "Inputs: decimals (1.5, -2e-3, inf, nan) or bit patterns (0x3fc00000); for "
                  "pow, pairs X Y")
      ->required();
  cmd->footer(
      "Prints {\"function\": F, \"results\": [{\"input\": \"0x...\", \"output\": \"0x...\", "
      "\"value\": \"...\"}]};\nfor pow, \"input\" is [x, y]. Negative decimals may need `--` "
      "first: detrain math exp -- -1.5\nAlgorithms and verification: docs/math.md.");
  cmd->callback([opts, exit_code] { *exit_code = RunMath(*opts); });
}

}  // namespace detrain::cli
