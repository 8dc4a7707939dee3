// The weight initializers of jax.nn.initializers, by JAX's formulas, in float32.
//
// variance_scaling(scale, mode, distribution) with the default axes (in_axis = -2,
// out_axis = -1, no batch axis): receptive = prod(shape) / fan_in_dim / fan_out_dim,
// fan_in = shape[-2] * receptive, fan_out = shape[-1] * receptive (in float64, as Python does);
// variance = float32(scale / denominator). Then
//   truncated_normal: truncated_normal(key, -2, 2) * (sqrt(variance) / 0.87962566103423978f)
//   normal:           normal(key) * sqrt(variance)
//   uniform:          uniform(key, -1, 1) * sqrt(3 * variance)
// all in float32. The named initializers are:
//   glorot_uniform (1, fan_avg, uniform)   glorot_normal (1, fan_avg, truncated_normal)
//   he_uniform     (2, fan_in, uniform)    he_normal     (2, fan_in, truncated_normal)
//   lecun_uniform  (1, fan_in, uniform)    lecun_normal  (1, fan_in, truncated_normal)
// plus normal(stddev) = normal(key) * float32(stddev), zeros and ones.
//
// Thread safety and determinism: as jax_random.h (identical bits for any pool size or Isa).
#ifndef DETRAIN_ATTEST_PRNG_INITIALIZERS_H_
#define DETRAIN_ATTEST_PRNG_INITIALIZERS_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "attest/prng/jax_random.h"

namespace detrain::prng {

enum class FanMode { kFanIn, kFanOut, kFanAvg };
enum class Distribution { kTruncatedNormal, kNormal, kUniform };

// jax.nn.initializers.variance_scaling(scale, mode, distribution)(key, shape, float32).
// shape needs rank >= 2 and no zero dimension; out.size() must equal prod(shape).
Status VarianceScaling(Key key, double scale, FanMode mode, Distribution distribution,
                       std::span<const int64_t> shape, std::span<float> out,
                       const Options& options);

// The named initializers. `name` is one of glorot_uniform, glorot_normal, he_uniform,
// he_normal, lecun_uniform, lecun_normal, zeros, ones (normal takes a stddev: NormalInit).
Status InitializeNamed(std::string_view name, Key key, std::span<const int64_t> shape,
                       std::span<float> out, const Options& options);

// jax.nn.initializers.normal(stddev)(key, shape, float32).
Status NormalInit(Key key, double stddev, std::span<float> out, const Options& options);

}  // namespace detrain::prng

#endif  // DETRAIN_ATTEST_PRNG_INITIALIZERS_H_
