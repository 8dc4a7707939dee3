// Key lineage recording, JSON Lines serialization and replay (format: schemas/key-lineage.md).
// Recording is single-threaded (lineage.h); serialization and replay are pure functions.
#include "attest/prng/lineage.h"

#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

namespace detrain::prng {

using Json = nlohmann::json;

namespace {
std::string Words(Key k) { return "[" + std::to_string(k.hi) + "," + std::to_string(k.lo) + "]"; }
}  // namespace

std::string_view LineageOpName(LineageOp op) {
  switch (op) {
    case LineageOp::kSeed:
      return "seed";
    case LineageOp::kSplit:
      return "split";
    case LineageOp::kFoldIn:
      return "fold_in";
  }
  return "unknown";
}

// ---- Recording ----------------------------------------------------------------------------
Status KeyLineage::CheckId(uint64_t id) const {
  if (id < nodes_.size()) return Status::Ok();
  return InvalidArgument("key lineage has no node " + std::to_string(id) + " (it has " +
                         std::to_string(nodes_.size()) + " nodes)");
}

uint64_t KeyLineage::Seed(int64_t seed) {
  LineageNode node;
  node.id = nodes_.size();
  node.op = LineageOp::kSeed;
  node.argument = seed;
  node.key = KeyFromSeed(seed);
  nodes_.push_back(node);
  return node.id;
}

Result<std::vector<uint64_t>> KeyLineage::Split(uint64_t parent, uint64_t n) {
  DETRAIN_RETURN_IF_ERROR(CheckId(parent));
  DETRAIN_ASSIGN_OR_RETURN(auto keys, prng::Split(nodes_[parent].key, n, mode_));
  std::vector<uint64_t> ids;
  ids.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    LineageNode node;
    node.id = nodes_.size();
    node.parent = parent;
    node.op = LineageOp::kSplit;
    node.argument = static_cast<int64_t>(i);
    node.count = n;
    node.key = keys[i];
    nodes_.push_back(node);
    ids.push_back(node.id);
  }
  return ids;
}

Result<uint64_t> KeyLineage::FoldIn(uint64_t parent, uint32_t data) {
  DETRAIN_RETURN_IF_ERROR(CheckId(parent));
  LineageNode node;
  node.id = nodes_.size();
  node.parent = parent;
  node.op = LineageOp::kFoldIn;
  node.argument = data;
  node.key = prng::FoldIn(nodes_[parent].key, data);
  nodes_.push_back(node);
  return node.id;
}

Status KeyLineage::Use(uint64_t key_id, std::string_view purpose) {
  DETRAIN_RETURN_IF_ERROR(CheckId(key_id));
  if (purpose.empty() || purpose.find('\n') != std::string_view::npos) {
    return InvalidArgument("a key use needs a non-empty, single-line purpose");
  }
  uses_.push_back(KeyUse{key_id, std::string(purpose), nodes_.size()});
  return Status::Ok();
}

Result<Key> KeyLineage::KeyOf(uint64_t id) const {
  DETRAIN_RETURN_IF_ERROR(CheckId(id));
  return nodes_[id].key;
}

// ---- JSON Lines ---------------------------------------------------------------------------
namespace {

Json NodeJson(const LineageNode& n) {
  Json j = {{"type", "node"},
            {"id", n.id},
            {"op", LineageOpName(n.op)},
            {"argument", n.argument},
            {"key", {n.key.hi, n.key.lo}}};
  j["parent"] = n.parent ? Json(*n.parent) : Json(nullptr);
  if (n.op == LineageOp::kSplit) j["count"] = n.count;
  return j;
}

}  // namespace

std::string KeyLineage::ToJsonl() const {
  std::string out =
      Json{{"format", kLineageFormat}, {"version", kLineageVersion}, {"mode", ModeName(mode_)}}
          .dump() +
      "\n";
  size_t next_use = 0;
  auto flush_uses = [&](uint64_t position) {
    for (; next_use < uses_.size() && uses_[next_use].position <= position; ++next_use) {
      const KeyUse& u = uses_[next_use];
      out += Json{{"type", "use"}, {"key", u.key_id}, {"purpose", u.purpose}}.dump() + "\n";
    }
  };
  for (const LineageNode& n : nodes_) {
    flush_uses(n.id);
    out += NodeJson(n).dump() + "\n";
  }
  flush_uses(std::numeric_limits<uint64_t>::max());
  return out;
}

// ---- Replay -------------------------------------------------------------------------------
namespace {

std::string Describe(const LineageNode& n) {
  std::string s = "node " + std::to_string(n.id) + " (" + std::string(LineageOpName(n.op));
  if (n.op == LineageOp::kSeed) return s + " " + std::to_string(n.argument) + ")";
  s += " of node " + std::to_string(*n.parent);
  if (n.op == LineageOp::kSplit) {
    return s + ", index " + std::to_string(n.argument) + " of " + std::to_string(n.count) + ")";
  }
  return s + ", data " + std::to_string(n.argument) + ")";
}

}  // namespace

Status ReplayLineage(const KeyLineage& lineage) {
  const auto& nodes = lineage.nodes();
  // Original-mode split keys depend on the count, so each (parent, count) split is computed
  // once and indexed; partitionable split(key, n)[i] is fold-like and computed directly.
  std::map<std::pair<uint64_t, uint64_t>, std::vector<Key>> splits;
  for (const LineageNode& n : nodes) {
    Key expected;
    if (n.op == LineageOp::kSeed) {
      expected = KeyFromSeed(n.argument);
    } else if (n.op == LineageOp::kFoldIn) {
      expected = FoldIn(nodes[*n.parent].key, static_cast<uint32_t>(n.argument));
    } else if (lineage.mode() == Mode::kPartitionable) {
      const uint64_t i = static_cast<uint64_t>(n.argument);
      const Key parent = nodes[*n.parent].key;
      const auto y = Threefry2x32(parent.hi, parent.lo, static_cast<uint32_t>(i >> 32),
                                  static_cast<uint32_t>(i));
      expected = Key{y[0], y[1]};
    } else {
      auto [it, inserted] = splits.try_emplace({*n.parent, n.count});
      if (inserted) {
        DETRAIN_ASSIGN_OR_RETURN(it->second, Split(nodes[*n.parent].key, n.count, lineage.mode()));
      }
      expected = it->second[static_cast<size_t>(n.argument)];
    }
    if (!(expected == n.key)) {
      return VerificationFailed("key lineage " + Describe(n) + ": recomputed key " +
                                Words(expected) + " but the lineage records " + Words(n.key));
    }
  }
  return Status::Ok();
}

}  // namespace detrain::prng
