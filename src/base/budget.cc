// See budget.h.
#include "base/budget.h"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdio>

#include "base/checked.h"

namespace detrain {
namespace {

std::atomic<int64_t> g_tensor_bytes{0};  // 0: not set, use the default
std::atomic<int64_t> g_total_bytes{0};
thread_local DeferDeclaredSizes* t_deferred = nullptr;  // this thread's innermost scope

int64_t PhysicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  int64_t bytes = 0;
  if (pages <= 0 || page <= 0 || !CheckedMul(pages, page, &bytes)) return int64_t{16} << 30;
  return bytes;
}

Status OverBudget(int64_t bytes, int64_t limit, std::string_view what, std::string_view which) {
  return ResourceExhausted(std::string(what) + " needs " + FormatBytes(bytes) + ", more than the " +
                           std::string(which) + " memory budget of " + FormatBytes(limit) +
                           " (raise it with --max-memory SIZE, e.g. --max-memory 64G)");
}

}  // namespace

MemoryBudget DefaultMemoryBudget() {
  // Read once: the checks run per instruction, and sysconf is a system call.
  static const int64_t limit = [] {
    int64_t l = PhysicalMemoryBytes() / 4 * 3;
    return l < (int64_t{1} << 30) ? int64_t{1} << 30 : l;
  }();
  return {limit, limit};
}

MemoryBudget CurrentMemoryBudget() {
  MemoryBudget b = DefaultMemoryBudget();
  int64_t tensor = g_tensor_bytes.load(std::memory_order_relaxed);
  int64_t total = g_total_bytes.load(std::memory_order_relaxed);
  if (tensor > 0) b.max_tensor_bytes = tensor;
  if (total > 0) b.max_total_bytes = total;
  return b;
}

void SetMemoryBudget(const MemoryBudget& budget) {
  g_tensor_bytes.store(budget.max_tensor_bytes, std::memory_order_relaxed);
  g_total_bytes.store(budget.max_total_bytes, std::memory_order_relaxed);
}

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 6) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

Result<int64_t> ParseByteSize(std::string_view text) {
  auto bad = [&] {
    return InvalidArgument(
        "expected a size in bytes with an optional K, M, G or T suffix "
        "(e.g. 64G), got '" +
        std::string(text) + "'");
  };
  if (text.empty()) return bad();
  int shift = 0;
  switch (text.back()) {
    case 'K':
    case 'k':
      shift = 10;
      break;
    case 'M':
    case 'm':
      shift = 20;
      break;
    case 'G':
    case 'g':
      shift = 30;
      break;
    case 'T':
    case 't':
      shift = 40;
      break;
    default:
      break;
  }
  std::string_view digits = shift ? text.substr(0, text.size() - 1) : text;
  int64_t v = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || r.ec != std::errc() || r.ptr != digits.data() + digits.size() || v <= 0) {
    return bad();
  }
  int64_t bytes = 0;
  if (!CheckedMul(v, int64_t{1} << shift, &bytes)) return bad();
  return bytes;
}

Status CheckTensorBytes(int64_t bytes, std::string_view what) {
  int64_t limit = CurrentMemoryBudget().max_tensor_bytes;
  if (bytes > limit) return OverBudget(bytes, limit, what, "one-tensor");
  return Status::Ok();
}

Status CheckTotalBytes(int64_t bytes, std::string_view what) {
  int64_t limit = CurrentMemoryBudget().max_total_bytes;
  if (bytes > limit) return OverBudget(bytes, limit, what, "total");
  return Status::Ok();
}

Status DeferDeclaredSizes::Postpone(Status s) {
  if (s.ok() || t_deferred == nullptr) return s;
  if (t_deferred->excess_.ok()) t_deferred->excess_ = std::move(s);
  return Status::Ok();
}

Status CheckDeclaredTensorBytes(int64_t bytes, std::string_view what) {
  return DeferDeclaredSizes::Postpone(CheckTensorBytes(bytes, what));
}

Status CheckDeclaredTotalBytes(int64_t bytes, std::string_view what) {
  return DeferDeclaredSizes::Postpone(CheckTotalBytes(bytes, what));
}

DeferDeclaredSizes::DeferDeclaredSizes() : outer_(t_deferred) { t_deferred = this; }
DeferDeclaredSizes::~DeferDeclaredSizes() { t_deferred = outer_; }

}  // namespace detrain
