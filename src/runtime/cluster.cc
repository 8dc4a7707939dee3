// See cluster.h. The control and string helpers, and the in-process cluster for tests.
#include "runtime/cluster.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>

#include "compiler/semantics/scalar.h"

namespace detrain::runtime {

Status SendControl(Cluster& c, int to, Control what, int64_t value) {
  const int64_t message[2] = {static_cast<int64_t>(what), value};
  return c.Send(to, Channel::kControl, message, sizeof(message));
}

Result<std::pair<Control, int64_t>> RecvControl(Cluster& c, int from) {
  int64_t message[2] = {0, 0};
  DETRAIN_RETURN_IF_ERROR(c.Recv(from, Channel::kControl, message, sizeof(message)));
  if (message[0] != static_cast<int64_t>(Control::kStop) &&
      message[0] != static_cast<int64_t>(Control::kRunStep)) {
    return Internal(c.Describe(from) + " sent an unknown control message " +
                    std::to_string(message[0]));
  }
  return std::make_pair(static_cast<Control>(message[0]), message[1]);
}

Status SendString(Cluster& c, int to, Channel channel, const std::string& s) {
  const int64_t size = static_cast<int64_t>(s.size());
  DETRAIN_RETURN_IF_ERROR(c.Send(to, channel, &size, sizeof(size)));
  return c.Send(to, channel, s.data(), size);
}

Result<std::string> RecvString(Cluster& c, int from, Channel channel, int64_t max_bytes) {
  int64_t size = 0;
  DETRAIN_RETURN_IF_ERROR(c.Recv(from, channel, &size, sizeof(size)));
  if (size < 0 || size > max_bytes) {
    return DataLoss(c.Describe(from) + " announced a message of " + std::to_string(size) +
                    " bytes (at most " + std::to_string(max_bytes) + " expected)");
  }
  std::string s(static_cast<size_t>(size), '\0');
  DETRAIN_RETURN_IF_ERROR(c.Recv(from, channel, s.data(), size));
  return s;
}

Result<std::vector<std::string>> GatherToRankZero(Cluster& c, const std::string& mine,
                                                  int64_t max_bytes) {
  std::vector<std::string> all;
  if (c.rank() != 0) {
    DETRAIN_RETURN_IF_ERROR(SendString(c, 0, Channel::kHandshake, mine));
    return all;
  }
  all.push_back(mine);
  for (int r = 1; r < c.size(); ++r) {
    DETRAIN_ASSIGN_OR_RETURN(std::string s, RecvString(c, r, Channel::kHandshake, max_bytes));
    all.push_back(std::move(s));
  }
  return all;
}

Result<std::string> BroadcastFromRankZero(Cluster& c, const std::string& value, int64_t max_bytes) {
  if (c.rank() != 0) return RecvString(c, 0, Channel::kHandshake, max_bytes);
  for (int r = 1; r < c.size(); ++r)
    DETRAIN_RETURN_IF_ERROR(SendString(c, r, Channel::kHandshake, value));
  return value;
}

namespace {

// Blocks of a fixed length with __restrict operands: at -O2 GCC's vectorizer (cost model "very
// cheap") vectorizes only loops that need no epilogue and no alias check (as
// runtime/cpu/isa_kernels.inc). Measured on 512K floats: 255 µs as one variable-length loop,
// 147 µs so.
constexpr int64_t kAddBlock = 256;

inline void AddBlock(const float* __restrict a, const float* __restrict b, float* __restrict sum) {
  for (int64_t j = 0; j < kAddBlock; ++j) sum[j] = a[j] + b[j];
}

inline bool AnyNan(const float* __restrict sum) {
  uint32_t nan = 0;
  for (int64_t j = 0; j < kAddBlock; ++j) nan |= sum[j] != sum[j] ? 1u : 0u;
  return nan != 0;
}

// out[i] = a[i] + b[i] under the NaN rule (semantics::ApplyBinary's bits); out may be a or b.
// Plain additions in blocks the compiler vectorizes, a NaN fixed up afterwards.
void AddWithNanRule(float* out, const float* a, const float* b, int64_t n) {
  alignas(64) float sum[kAddBlock];
  alignas(64) float a_tail[kAddBlock] = {}, b_tail[kAddBlock] = {};
  for (int64_t i = 0; i < n; i += kAddBlock) {
    const int64_t m = std::min(kAddBlock, n - i);
    const float* x = a + i;
    const float* y = b + i;
    if (m < kAddBlock) {  // the last, short block: padded with zeros, which add to no NaN
      std::memcpy(a_tail, x, static_cast<size_t>(m) * sizeof(float));
      std::memcpy(b_tail, y, static_cast<size_t>(m) * sizeof(float));
      x = a_tail;
      y = b_tail;
    }
    AddBlock(x, y, sum);
    if (AnyNan(sum)) {
      for (int64_t j = 0; j < m; ++j) {
        if (sum[j] != sum[j])
          sum[j] = semantics::ApplyBinary<float>(ir::BinaryOp::kAdd, x[j], y[j]);
      }
    }
    std::memcpy(out + i, sum, static_cast<size_t>(m) * sizeof(float));
  }
}

constexpr int64_t kFloat = sizeof(float);
constexpr int64_t kRecursiveDoublingFloats = 4096;  // 16 KiB

// P a power of two: recursive halving, then doubling. Round s = 1, 2, ..., P/2 pairs rank r with
// r ^ s; each keeps one half of its current range (the lower half for the rank with bit s clear),
// sends the other and adds the partner's copy of the half it keeps, the lower rank's partial on
// the left — which is level log2(s) + 1 of the pairwise tree, since both partners' partials cover
// aligned groups of s ranks. The sums then travel back the same way, ranges doubling.
Status HalvingDoubling(Cluster& c, float* data, int64_t n, std::vector<float>* scratch) {
  const int p = c.size(), r = c.rank();
  int64_t lo = 0, hi = n;
  std::vector<std::pair<int64_t, int64_t>> ranges;  // before each round, to walk back
  scratch->resize(static_cast<size_t>((n + 1) / 2));
  for (int s = 1; s < p; s *= 2) {
    ranges.emplace_back(lo, hi);
    const int partner = r ^ s;
    const int64_t mid = lo + (hi - lo) / 2;
    const bool lower = (r & s) == 0;
    const int64_t keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
    const int64_t give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
    float* theirs = scratch->data();
    DETRAIN_RETURN_IF_ERROR(c.SendRecv(partner, Channel::kData, data + give_lo,
                                       (give_hi - give_lo) * kFloat, partner, theirs,
                                       (keep_hi - keep_lo) * kFloat));
    float* mine = data + keep_lo;
    if (lower) {
      AddWithNanRule(mine, mine, theirs, keep_hi - keep_lo);
    } else {
      AddWithNanRule(mine, theirs, mine, keep_hi - keep_lo);
    }
    lo = keep_lo;
    hi = keep_hi;
  }
  for (int s = p / 2; s >= 1; s /= 2) {
    const auto [up_lo, up_hi] = ranges.back();
    ranges.pop_back();
    const int partner = r ^ s;
    // The partner holds the other half of [up_lo, up_hi) (either half may be empty).
    const bool lower = (r & s) == 0;
    const int64_t other_lo = lower ? hi : up_lo, other_hi = lower ? up_hi : lo;
    DETRAIN_RETURN_IF_ERROR(c.SendRecv(partner, Channel::kData, data + lo, (hi - lo) * kFloat,
                                       partner, data + other_lo, (other_hi - other_lo) * kFloat));
    lo = up_lo;
    hi = up_hi;
  }
  return Status::Ok();
}

// P a power of two and a short vector: recursive doubling, log2 P rounds in place of halving's
// 2 log2 P. Round s = 1, 2, ..., P/2 pairs rank r with r ^ s; both hold partials over aligned
// groups of s ranks and exchange them whole, and both add the lower group's on the left: level
// log2(s) + 1 of the pairwise tree, the same bits on both.
Status RecursiveDoubling(Cluster& c, float* data, int64_t n, std::vector<float>* scratch) {
  const int p = c.size(), r = c.rank();
  scratch->resize(static_cast<size_t>(n));
  float* theirs = scratch->data();
  for (int s = 1; s < p; s *= 2) {
    const int partner = r ^ s;
    DETRAIN_RETURN_IF_ERROR(
        c.SendRecv(partner, Channel::kData, data, n * kFloat, partner, theirs, n * kFloat));
    if ((r & s) == 0) {
      AddWithNanRule(data, data, theirs, n);
    } else {
      AddWithNanRule(data, theirs, data, n);
    }
  }
  return Status::Ok();
}

// Any P: reduce-scatter in P - 1 rounds (round k: to rank r + k, from rank r - k), rank q summing
// chunk q = [q n / P, (q + 1) n / P) over every rank's copy in the tree's order, then all-gather.
Status Ring(Cluster& c, float* data, int64_t n, std::vector<float>* scratch) {
  const int p = c.size(), r = c.rank();
  auto start = [&](int q) { return n * q / p; };
  const int64_t mine = start(r + 1) - start(r);
  // The P contributions to this rank's chunk, in rank order: its own in place, the others here.
  scratch->resize(static_cast<size_t>(mine) * static_cast<size_t>(p));
  std::vector<float*> part(static_cast<size_t>(p));
  for (int q = 0; q < p; ++q)
    part[static_cast<size_t>(q)] =
        scratch->data() + static_cast<size_t>(q) * static_cast<size_t>(mine);
  part[static_cast<size_t>(r)] = data + start(r);
  for (int k = 1; k < p; ++k) {
    const int to = (r + k) % p, from = (r - k + p) % p;
    DETRAIN_RETURN_IF_ERROR(c.SendRecv(to, Channel::kData, data + start(to),
                                       (start(to + 1) - start(to)) * kFloat, from,
                                       part[static_cast<size_t>(from)], mine * kFloat));
  }
  // The tree over the ranks, level by level (pairs at stride s); the root's sum is written to
  // this rank's own chunk.
  for (int s = 1; s < p; s *= 2) {
    for (int q = 0; q + s < p; q += 2 * s) {
      float* a = part[static_cast<size_t>(q)];
      float* out = q == 0 && 2 * s >= p ? data + start(r) : a;
      AddWithNanRule(out, a, part[static_cast<size_t>(q + s)], mine);
    }
  }
  for (int k = 1; k < p; ++k) {  // all-gather
    const int to = (r + k) % p, from = (r - k + p) % p;
    DETRAIN_RETURN_IF_ERROR(c.SendRecv(to, Channel::kData, data + start(r), mine * kFloat, from,
                                       data + start(from),
                                       (start(from + 1) - start(from)) * kFloat));
  }
  return Status::Ok();
}

}  // namespace

Status ExactAllReduceSum(Cluster& c, float* data, int64_t n, std::vector<float>* scratch) {
  const int p = c.size();
  // n × q below cannot overflow.
  if (n < 0 || n > (int64_t{1} << 56))
    return Internal("all-reduce of " + std::to_string(n) + " floats");
  if (p == 1 || n == 0) return Status::Ok();
  if ((p & (p - 1)) == 0) {
    // Up to 16 KiB, a round's latency costs more than its bytes (docs/benchmarks.md, issue 16).
    if (n <= kRecursiveDoublingFloats) return RecursiveDoubling(c, data, n, scratch);
    return HalvingDoubling(c, data, n, scratch);
  }
  return Ring(c, data, n, scratch);
}

namespace {

// The mailboxes of P in-process ranks: one FIFO per (from, to, channel).
class Mailboxes {
 public:
  void Put(int from, int to, Channel ch, std::string bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    boxes_[{from, to, static_cast<int>(ch)}].push_back(std::move(bytes));
    cv_.notify_all();
  }
  // Waits at most `timeout` for the next message; false on timeout.
  bool Take(int from, int to, Channel ch, double timeout, std::string* out) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& box = boxes_[{from, to, static_cast<int>(ch)}];
    if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout),
                      [&] { return !box.empty() || aborted_; })) {
      return false;
    }
    if (box.empty()) return false;  // aborted
    *out = std::move(box.front());
    box.pop_front();
    return true;
  }
  void Abort() {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::tuple<int, int, int>, std::deque<std::string>> boxes_;
  bool aborted_ = false;
};

class LocalCluster final : public Cluster {
 public:
  LocalCluster(std::shared_ptr<Mailboxes> boxes, int rank, int size, double timeout)
      : boxes_(std::move(boxes)), rank_(rank), size_(size), timeout_(timeout) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string Describe(int r) const override {
    return "rank " + std::to_string(r) + " (host local)";
  }
  std::string host() const override { return "local"; }
  Status Send(int to, Channel ch, const void* data, int64_t bytes) override {
    if (to < 0 || to >= size_ || to == rank_ || bytes < 0)
      return Internal("cluster: bad send to rank " + std::to_string(to));
    boxes_->Put(rank_, to, ch,
                std::string(static_cast<const char*>(data), static_cast<size_t>(bytes)));
    return Status::Ok();
  }
  Status Recv(int from, Channel ch, void* data, int64_t bytes) override {
    if (from < 0 || from >= size_ || from == rank_ || bytes < 0)
      return Internal("cluster: bad receive from rank " + std::to_string(from));
    std::string message;
    if (!boxes_->Take(from, rank_, ch, timeout_, &message)) {
      return FailedPrecondition(Describe(from) + " sent nothing for " +
                                std::to_string(static_cast<int>(timeout_)) +
                                " s (it died, hangs, or the run was aborted)");
    }
    if (static_cast<int64_t>(message.size()) != bytes) {
      return Internal(Describe(from) + " sent " + std::to_string(message.size()) + " bytes where " +
                      std::to_string(bytes) + " were expected");
    }
    if (bytes > 0) std::memcpy(data, message.data(), static_cast<size_t>(bytes));
    return Status::Ok();
  }
  void Abort(int) override { boxes_->Abort(); }

 private:
  std::shared_ptr<Mailboxes> boxes_;
  int rank_, size_;
  double timeout_;
};

}  // namespace

std::vector<std::shared_ptr<Cluster>> MakeLocalClusters(int ranks, double timeout_seconds) {
  auto boxes = std::make_shared<Mailboxes>();
  std::vector<std::shared_ptr<Cluster>> out;
  for (int r = 0; r < ranks; ++r)
    out.push_back(std::make_shared<LocalCluster>(boxes, r, ranks, timeout_seconds));
  return out;
}

}  // namespace detrain::runtime
