// `detrain prng`: re-derive JAX threefry keys and samples by hand (docs/prng.md).
//
//   detrain prng [--mode partitionable|original] key SEED          -> {"key":[hi,lo]}
//   detrain prng [--mode ...] split KEY N                           -> {"keys":[[hi,lo],...]}
//   detrain prng [--mode ...] fold-in KEY DATA                      -> {"key":[hi,lo]}
//   detrain prng [--mode ...] bits KEY --shape 5[,3..] [--width 32] -> {"bits":[...]}
//   detrain prng [--mode ...] uniform KEY --shape S [--min A --max B]
//                                                    -> {"values":[...],"hex":[...]}
//   detrain prng [--mode ...] normal KEY --shape S  -> {"values":[...],"hex":[...]}
//   detrain prng [--mode ...] bernoulli KEY --p P --shape S         -> {"values":[true,...]}
//   detrain prng [--mode ...] permutation KEY N                     -> {"values":[...]}
//   detrain prng [--mode ...] randint KEY --shape S --min A --max B -> {"values":[...]}
//
// A KEY is HI:LO, two uint32 words in decimal or 0x hex. Values are flattened row-major; floats
// are printed in the shortest form that reads back to the same float32, and "hex" gives their
// bit patterns. Arguments are parsed strictly; any bad one is exit code 2 with a message.
// Runs single-threaded; the output depends only on the arguments.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attest/prng/jax_random.h"
#include "cli/command.h"

namespace detrain::cli {
namespace {

using prng::Key;

// Largest number of values one invocation prints (the output is a single JSON line).
constexpr uint64_t kMaxValues = uint64_t{1} << 24;

struct PrngOptions {
  std::string mode = "partitionable";
  std::string key, seed, count, data, shape, min, max, p, dtype = "int32";
  int width = 32;
  bool has_min = false, has_max = false;
};

// An unsigned integer in decimal or 0x hex, at most `max`.
Result<uint64_t> ParseUnsigned(const std::string& text, uint64_t max, const std::string& what) {
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const char* begin = text.data() + (hex ? 2 : 0);
  const char* end = text.data() + text.size();
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(begin, end, value, hex ? 16 : 10);
  if (begin == end || ec != std::errc() || ptr != end || value > max) {
    return InvalidArgument("bad " + what + " '" + text + "': expected an integer in [0, " +
                           std::to_string(max) + "], decimal or 0x hex");
  }
  return value;
}

Result<Key> ParseKey(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    return InvalidArgument("bad key '" + text +
                           "': expected HI:LO, two uint32 words in decimal "
                           "or 0x hex (for example 0:42 or 0x12345678:0x9abcdef0)");
  }
  DETRAIN_ASSIGN_OR_RETURN(uint64_t hi,
                           ParseUnsigned(text.substr(0, colon), 0xFFFFFFFFu, "key word HI"));
  DETRAIN_ASSIGN_OR_RETURN(uint64_t lo,
                           ParseUnsigned(text.substr(colon + 1), 0xFFFFFFFFu, "key word LO"));
  return Key{static_cast<uint32_t>(hi), static_cast<uint32_t>(lo)};
}

// A seed as JAX takes it with x64 enabled: a signed int64 in decimal, or an unsigned 64-bit
// value in decimal or 0x hex (bit-cast, as np.uint64 seeds are).
Result<Key> ParseSeed(const std::string& text) {
  if (!text.empty() && text[0] == '-') {
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      return InvalidArgument("bad seed '" + text + "': expected an integer in [-2^63, 2^64 - 1]");
    }
    return prng::KeyFromSeed(value);
  }
  DETRAIN_ASSIGN_OR_RETURN(uint64_t value, ParseUnsigned(text, UINT64_MAX, "seed"));
  return prng::KeyFromUnsignedSeed(value);
}

Result<int64_t> ParseSigned(const std::string& text, const std::string& what) {
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return InvalidArgument("bad " + what + " '" + text + "': expected a decimal int64");
  }
  return value;
}

Result<float> ParseFloat(const std::string& text, const std::string& what) {
  float value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() ||
      !std::isfinite(value)) {
    return InvalidArgument("bad " + what + " '" + text + "': expected a finite number");
  }
  return value;  // rounded to nearest float32, as JAX converts a Python float
}

// "5", "5,3", "2,3,4"; "" is the scalar shape (). Returns the element count.
Result<uint64_t> ParseShape(const std::string& text) {
  uint64_t size = 1;
  size_t start = 0;
  while (!text.empty() && start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    DETRAIN_ASSIGN_OR_RETURN(uint64_t dim, ParseUnsigned(text.substr(start, comma - start),
                                                         kMaxValues, "shape dimension"));
    size *= dim;
    if (size > kMaxValues) break;
    start = comma + 1;
  }
  if (size > kMaxValues) {
    return InvalidArgument("shape '" + text + "' has more than " + std::to_string(kMaxValues) +
                           " elements, too many to print");
  }
  return size;
}

nlohmann::json KeyJson(Key k) { return nlohmann::json::array({k.hi, k.lo}); }

// {"values":[...],"hex":[...]} with each float in its shortest round-trip spelling (non-finite
// values, which JSON cannot hold, are null; their hex says what they are).
std::string FloatsJson(const std::vector<float>& values) {
  std::string v = "{\"values\":[", h = "],\"hex\":[";
  char buf[64];
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) v += ",", h += ",";
    if (std::isfinite(values[i])) {
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, values[i]);
      v.append(buf, end);
    } else {
      v += "null";
    }
    uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    std::snprintf(buf, sizeof buf, "\"0x%08x\"", bits);
    h += buf;
  }
  return v + h + "]}";
}

Result<std::string> RunSampler(const std::string& sub, const PrngOptions& o,
                               const prng::Options& po) {
  DETRAIN_ASSIGN_OR_RETURN(Key key, ParseKey(o.key));
  DETRAIN_ASSIGN_OR_RETURN(uint64_t n, ParseShape(o.shape));
  if (sub == "bits") {
    std::vector<uint64_t> wide(n);
    nlohmann::json bits = nlohmann::json::array();
    if (o.width == 64) {
      DETRAIN_RETURN_IF_ERROR(prng::Bits64(key, wide, po));
      for (uint64_t v : wide) bits.push_back(v);
    } else if (o.width == 32) {
      std::vector<uint32_t> v(n);
      DETRAIN_RETURN_IF_ERROR(prng::Bits32(key, v, po));
      for (uint32_t x : v) bits.push_back(x);
    } else if (o.width == 16) {
      std::vector<uint16_t> v(n);
      DETRAIN_RETURN_IF_ERROR(prng::Bits16(key, v, po));
      for (uint16_t x : v) bits.push_back(x);
    } else {
      std::vector<uint8_t> v(n);
      DETRAIN_RETURN_IF_ERROR(prng::Bits8(key, v, po));
      for (uint8_t x : v) bits.push_back(x);
    }
    return nlohmann::json{{"bits", bits}}.dump();
  }
  std::vector<float> f(n);
  if (sub == "uniform") {
    DETRAIN_ASSIGN_OR_RETURN(float lo,
                             o.has_min ? ParseFloat(o.min, "--min") : Result<float>(0.0f));
    DETRAIN_ASSIGN_OR_RETURN(float hi,
                             o.has_max ? ParseFloat(o.max, "--max") : Result<float>(1.0f));
    DETRAIN_RETURN_IF_ERROR(prng::Uniform(key, lo, hi, f, po));
    return FloatsJson(f);
  }
  if (sub == "normal") {
    DETRAIN_RETURN_IF_ERROR(prng::Normal(key, f, po));
    return FloatsJson(f);
  }
  if (sub == "bernoulli") {
    DETRAIN_ASSIGN_OR_RETURN(float p, ParseFloat(o.p, "--p"));
    if (p < 0.0f || p > 1.0f) return InvalidArgument("--p must be a probability in [0, 1]");
    std::vector<uint8_t> b(n);
    DETRAIN_RETURN_IF_ERROR(prng::Bernoulli(key, p, b, po));
    nlohmann::json values = nlohmann::json::array();
    for (uint8_t x : b) values.push_back(x != 0);
    return nlohmann::json{{"values", values}}.dump();
  }
  // randint
  DETRAIN_ASSIGN_OR_RETURN(int64_t lo, ParseSigned(o.min, "--min"));
  DETRAIN_ASSIGN_OR_RETURN(int64_t hi, ParseSigned(o.max, "--max"));
  nlohmann::json values = nlohmann::json::array();
  if (o.dtype == "int64") {
    std::vector<int64_t> v(n);
    DETRAIN_RETURN_IF_ERROR(prng::RandInt64(key, lo, hi, v, po));
    for (int64_t x : v) values.push_back(x);
  } else {
    std::vector<int32_t> v(n);
    DETRAIN_RETURN_IF_ERROR(prng::RandInt32(key, lo, hi, v, po));
    for (int32_t x : v) values.push_back(x);
  }
  return nlohmann::json{{"values", values}}.dump();
}

Result<std::string> RunPrng(const std::string& sub, const PrngOptions& o) {
  DETRAIN_ASSIGN_OR_RETURN(prng::Mode mode, prng::ParseMode(o.mode));
  prng::Options po;
  po.mode = mode;
  if (sub == "key") {
    DETRAIN_ASSIGN_OR_RETURN(Key key, ParseSeed(o.seed));
    return nlohmann::json{{"key", KeyJson(key)}}.dump();
  }
  if (sub == "split") {
    DETRAIN_ASSIGN_OR_RETURN(Key key, ParseKey(o.key));
    DETRAIN_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned(o.count, kMaxValues, "N"));
    DETRAIN_ASSIGN_OR_RETURN(auto keys, prng::Split(key, n, mode));
    nlohmann::json all = nlohmann::json::array();
    for (Key k : keys) all.push_back(KeyJson(k));
    return nlohmann::json{{"keys", all}}.dump();
  }
  if (sub == "fold-in") {
    DETRAIN_ASSIGN_OR_RETURN(Key key, ParseKey(o.key));
    DETRAIN_ASSIGN_OR_RETURN(uint64_t data, ParseUnsigned(o.data, 0xFFFFFFFFu, "DATA"));
    return nlohmann::json{{"key", KeyJson(prng::FoldIn(key, static_cast<uint32_t>(data)))}}.dump();
  }
  if (sub == "permutation") {
    DETRAIN_ASSIGN_OR_RETURN(Key key, ParseKey(o.key));
    DETRAIN_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned(o.count, kMaxValues, "N"));
    DETRAIN_ASSIGN_OR_RETURN(auto values, prng::Permutation(key, static_cast<int64_t>(n), po));
    return nlohmann::json{{"values", values}}.dump();
  }
  return RunSampler(sub, o, po);
}

// Adds subcommand `name` of `prng` whose callback runs RunPrng; with a KEY positional when
// `takes_key`, and a required --shape when `takes_shape`.
CLI::App* AddSub(CLI::App* prng, const std::shared_ptr<PrngOptions>& o, int* exit_code,
                 const char* name, const char* help, bool takes_key, bool takes_shape) {
  CLI::App* sub = prng->add_subcommand(name, help);
  sub->callback([o, exit_code, name = std::string(name)] {
    Result<std::string> out = RunPrng(name, *o);
    if (!out.ok()) {
      *exit_code = ReportError("prng " + name, out.status());
      return;
    }
    std::cout << *out << "\n";
    *exit_code = kExitOk;
  });
  if (takes_key) {
    sub->add_option("KEY", o->key, "Key HI:LO (uint32 words, decimal or 0x hex)")->required();
  }
  if (takes_shape) {
    sub->add_option("--shape", o->shape, "Shape, comma-separated (5 or 2,3; \"\" for a scalar)")
        ->required();
  }
  return sub;
}

void AddKeySubcommands(CLI::App* prng, const std::shared_ptr<PrngOptions>& o, int* exit_code) {
  AddSub(prng, o, exit_code, "key", "jax.random.key(SEED) -> {\"key\":[hi,lo]}", false, false)
      ->add_option("SEED", o->seed, "64-bit seed (decimal, may be negative, or 0x hex)")
      ->required();
  AddSub(prng, o, exit_code, "split", "split(KEY, N) -> {\"keys\":[[hi,lo],...]}", true, false)
      ->add_option("N", o->count, "Number of keys")
      ->required();
  AddSub(prng, o, exit_code, "fold-in", "fold_in(KEY, DATA) -> {\"key\":[hi,lo]}", true, false)
      ->add_option("DATA", o->data, "uint32 data (decimal or 0x hex)")
      ->required();
  AddSub(prng, o, exit_code, "permutation", "permutation(KEY, N) -> {\"values\":[...]}", true,
         false)
      ->add_option("N", o->count, "Permute 0..N-1")
      ->required();
}

void AddSamplerSubcommands(CLI::App* prng, const std::shared_ptr<PrngOptions>& o, int* exit_code) {
  AddSub(prng, o, exit_code, "bits", "bits(KEY, shape, uint{8,16,32,64}) -> {\"bits\":[...]}", true,
         true)
      ->add_option("--width", o->width, "Bit width: 8, 16, 32 (default) or 64")
      ->check(CLI::IsMember({8, 16, 32, 64}));
  CLI::App* uniform =
      AddSub(prng, o, exit_code, "uniform",
             "uniform(KEY, shape, float32, min, max) -> values and hex", true, true);
  uniform->add_option("--min", o->min, "minval (default 0)")->each([o](const std::string&) {
    o->has_min = true;
  });
  uniform->add_option("--max", o->max, "maxval (default 1)")->each([o](const std::string&) {
    o->has_max = true;
  });
  AddSub(prng, o, exit_code, "normal", "normal(KEY, shape, float32) -> values and hex", true, true);
  AddSub(prng, o, exit_code, "bernoulli", "bernoulli(KEY, p, shape) -> {\"values\":[true,...]}",
         true, true)
      ->add_option("--p", o->p, "Probability of true, float32 in [0, 1]")
      ->required();
  CLI::App* randint = AddSub(prng, o, exit_code, "randint",
                             "randint(KEY, shape, min, max) -> {\"values\":[...]}", true, true);
  randint->add_option("--min", o->min, "minval (inclusive)")->required();
  randint->add_option("--max", o->max, "maxval (exclusive)")->required();
  randint->add_option("--dtype", o->dtype, "int32 (default) or int64")
      ->check(CLI::IsMember({"int32", "int64"}));
}

}  // namespace

void RegisterPrngCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<PrngOptions>();
  CLI::App* cmd = app.add_subcommand(
      "prng", "Re-derive JAX threefry keys and random values (one JSON object on stdout)");
  cmd->add_option("--mode", o->mode, "jax_threefry_partitionable setting (default partitionable)")
      ->check(CLI::IsMember({"partitionable", "original"}));
  cmd->require_subcommand(1);
  cmd->fallthrough();  // --mode may also follow the subcommand
  cmd->footer(
      "A KEY is HI:LO (two uint32 words, decimal or 0x hex). Seeds are 64-bit, as JAX "
      "with x64 enabled.\nFloats are float32, printed to round-trip, with bit patterns "
      "in \"hex\". See docs/prng.md.");
  AddKeySubcommands(cmd, o, exit_code);
  AddSamplerSubcommands(cmd, o, exit_code);
}

}  // namespace detrain::cli
