// Internal to run_config.cc and run_config_parse.cc: one table per enumeration of the run
// configuration, pairing each value with its spelling in the language and the JSON, so the
// writer and the parser cannot disagree. Thread safety: constant data.
#ifndef DETRAIN_FRONTEND_RUN_CONFIG_NAMES_H_
#define DETRAIN_FRONTEND_RUN_CONFIG_NAMES_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "frontend/run_config.h"

namespace detrain::frontend {

template <typename E>
using NameTable = std::pair<E, std::string_view>;

inline constexpr NameTable<InitializerKind> kInitializerNames[] = {
    {InitializerKind::kZeros, "zeros"},
    {InitializerKind::kOnes, "ones"},
    {InitializerKind::kGlorotUniform, "glorot_uniform"},
    {InitializerKind::kGlorotNormal, "glorot_normal"},
    {InitializerKind::kHeUniform, "he_uniform"},
    {InitializerKind::kHeNormal, "he_normal"},
    {InitializerKind::kLecunNormal, "lecun_normal"},
    {InitializerKind::kNormal, "normal"},
    {InitializerKind::kConstant, "constant"},
};

inline constexpr NameTable<DataSourceKind> kDataSourceNames[] = {{DataSourceKind::kCsv, "csv"},
                                                                 {DataSourceKind::kNpy, "npy"},
                                                                 {DataSourceKind::kNpz, "npz"},
                                                                 {DataSourceKind::kText, "text"}};

inline constexpr NameTable<ScheduleKind> kScheduleNames[] = {
    {ScheduleKind::kConstant, "constant"},
    {ScheduleKind::kLinear, "linear"},
    {ScheduleKind::kCosineDecay, "cosine_decay"},
    {ScheduleKind::kWarmupCosineDecay, "warmup_cosine_decay"},
};

inline constexpr NameTable<OptimizerKind> kOptimizerNames[] = {
    {OptimizerKind::kSgd, "sgd"},
    {OptimizerKind::kMomentum, "momentum"},
    {OptimizerKind::kAdam, "adam"},
    {OptimizerKind::kAdamW, "adamw"},
    {OptimizerKind::kInProgram, "in-program"},
};

inline constexpr NameTable<PrngMode> kPrngModeNames[] = {
    {PrngMode::kPartitionable, "partitionable"}, {PrngMode::kOriginal, "original"}};

inline constexpr NameTable<Metric> kMetricNames[] = {{Metric::kAccuracy, "accuracy"},
                                                     {Metric::kLoss, "loss"}};

template <typename E, size_t N>
std::string_view NameOf(const NameTable<E> (&table)[N], E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "unknown";
}

template <typename E, size_t N>
std::optional<E> ValueOf(const NameTable<E> (&table)[N], std::string_view name) {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  return std::nullopt;
}

// "a, b or c", for error messages.
template <typename E, size_t N>
std::string NameList(const NameTable<E> (&table)[N]) {
  std::string s;
  for (size_t i = 0; i < N; ++i) {
    s += i == 0 ? "" : i + 1 == N ? " or " : ", ";
    s += table[i].second;
  }
  return s;
}

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_RUN_CONFIG_NAMES_H_
