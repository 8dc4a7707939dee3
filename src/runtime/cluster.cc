// See cluster.h. The control and string helpers, and the in-process cluster for tests.
#include "runtime/cluster.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>

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
