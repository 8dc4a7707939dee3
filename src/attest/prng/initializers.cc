// jax.nn.initializers in float32 (see initializers.h for the formulas). The fan arithmetic is
// done in double because JAX computes it with Python floats before rounding to float32 once.
// Thread-safe and deterministic as the samplers it calls.
#include "attest/prng/initializers.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace detrain::prng {
namespace {

// Stddev of a standard normal truncated to (-2, 2), as the float32 constant JAX divides by.
const float kTruncatedStddev = static_cast<float>(0.87962566103423978);

Result<double> Denominator(FanMode mode, std::span<const int64_t> shape) {
  if (shape.size() < 2) {
    return InvalidArgument("variance scaling needs a weight shape of rank >= 2, got rank " +
                           std::to_string(shape.size()));
  }
  int64_t size = 1;
  for (int64_t d : shape) {
    if (d <= 0) return InvalidArgument("variance scaling needs positive dimensions");
    size *= d;
  }
  const int64_t in_size = shape[shape.size() - 2];
  const int64_t out_size = shape[shape.size() - 1];
  // Python: receptive_field_size = prod(shape) / in_size / out_size / batch_size (batch = 1).
  const double receptive =
      static_cast<double>(size) / static_cast<double>(in_size) / static_cast<double>(out_size);
  const double fan_in = static_cast<double>(in_size) * receptive;
  const double fan_out = static_cast<double>(out_size) * receptive;
  switch (mode) {
    case FanMode::kFanIn:
      return fan_in;
    case FanMode::kFanOut:
      return fan_out;
    case FanMode::kFanAvg:
      return (fan_in + fan_out) / 2;
  }
  return Internal("unknown fan mode");
}

void Scale(std::span<float> out, float factor) {
  for (float& v : out) v = v * factor;
}

}  // namespace

Status VarianceScaling(Key key, double scale, FanMode mode, Distribution distribution,
                       std::span<const int64_t> shape, std::span<float> out,
                       const Options& options) {
  DETRAIN_ASSIGN_OR_RETURN(const double denominator, Denominator(mode, shape));
  uint64_t size = 1;
  for (int64_t d : shape) size *= static_cast<uint64_t>(d);
  if (size != out.size()) {
    return InvalidArgument("initializer output has " + std::to_string(out.size()) +
                           " elements but the shape has " + std::to_string(size));
  }
  const float variance = static_cast<float>(scale / denominator);
  switch (distribution) {
    case Distribution::kTruncatedNormal: {
      const float stddev = std::sqrt(variance) / kTruncatedStddev;
      DETRAIN_RETURN_IF_ERROR(TruncatedNormal(key, -2.0f, 2.0f, out, options));
      Scale(out, stddev);
      return Status::Ok();
    }
    case Distribution::kNormal:
      DETRAIN_RETURN_IF_ERROR(Normal(key, out, options));
      Scale(out, std::sqrt(variance));
      return Status::Ok();
    case Distribution::kUniform:
      DETRAIN_RETURN_IF_ERROR(Uniform(key, -1.0f, 1.0f, out, options));
      Scale(out, std::sqrt(3.0f * variance));
      return Status::Ok();
  }
  return Internal("unknown distribution");
}

Status NormalInit(Key key, double stddev, std::span<float> out, const Options& options) {
  DETRAIN_RETURN_IF_ERROR(Normal(key, out, options));
  Scale(out, static_cast<float>(stddev));
  return Status::Ok();
}

Status InitializeNamed(std::string_view name, Key key, std::span<const int64_t> shape,
                       std::span<float> out, const Options& options) {
  struct Entry {
    std::string_view name;
    double scale;
    FanMode mode;
    Distribution distribution;
  };
  static constexpr Entry kTable[] = {
      {"glorot_uniform", 1.0, FanMode::kFanAvg, Distribution::kUniform},
      {"glorot_normal", 1.0, FanMode::kFanAvg, Distribution::kTruncatedNormal},
      {"he_uniform", 2.0, FanMode::kFanIn, Distribution::kUniform},
      {"he_normal", 2.0, FanMode::kFanIn, Distribution::kTruncatedNormal},
      {"lecun_uniform", 1.0, FanMode::kFanIn, Distribution::kUniform},
      {"lecun_normal", 1.0, FanMode::kFanIn, Distribution::kTruncatedNormal},
  };
  if (name == "zeros" || name == "ones") {
    std::fill(out.begin(), out.end(), name == "zeros" ? 0.0f : 1.0f);
    return Status::Ok();
  }
  for (const Entry& e : kTable) {
    if (e.name == name)
      return VarianceScaling(key, e.scale, e.mode, e.distribution, shape, out, options);
  }
  return InvalidArgument("unknown initializer '" + std::string(name) +
                         "' (expected glorot_uniform, glorot_normal, he_uniform, he_normal, "
                         "lecun_uniform, lecun_normal, zeros or ones)");
}

}  // namespace detrain::prng
