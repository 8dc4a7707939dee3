// Key lineage: where every key of a run came from and what it was used for (DESIGN.md §3).
//
// A KeyLineage records each derived key as a node {id, parent, op, argument, key words} and
// each use of a key as {key id, purpose}. Ids are sequential from 0 in creation order, so the
// same program makes the same ids. ToJsonl writes the JSON Lines format of
// schemas/key-lineage.md; FromJsonl reads it back, keeping the recorded key words as they are;
// ReplayLineage recomputes every node from its parent (seeds from their seed) and reports the
// first node whose recorded words differ.
//
// Thread safety: a KeyLineage is not synchronized; record from one thread, in program order
// (that order is what makes ids deterministic). Const methods may run concurrently.
#ifndef DETRAIN_ATTEST_PRNG_LINEAGE_H_
#define DETRAIN_ATTEST_PRNG_LINEAGE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attest/prng/jax_random.h"

namespace detrain::prng {

// The header line's "format" and "version" values.
inline constexpr std::string_view kLineageFormat = "detrain-key-lineage";
inline constexpr int kLineageVersion = 1;

enum class LineageOp { kSeed, kSplit, kFoldIn };

std::string_view LineageOpName(LineageOp op);  // "seed" | "split" | "fold_in"

struct LineageNode {
  uint64_t id = 0;
  std::optional<uint64_t> parent;  // absent for seeds
  LineageOp op = LineageOp::kSeed;
  // seed: the int64 seed; split: the index i of split(parent, count)[i]; fold_in: the data.
  int64_t argument = 0;
  uint64_t count = 0;  // split only: the n of split(parent, n); the original mode depends on it
  Key key;
};

struct KeyUse {
  uint64_t key_id = 0;
  std::string purpose;    // e.g. "init w1", "dropout layer 2 step 17 shard 3"
  uint64_t position = 0;  // number of nodes that existed when the use was recorded
};

class KeyLineage {
 public:
  explicit KeyLineage(Mode mode) : mode_(mode) {}

  Mode mode() const { return mode_; }
  const std::vector<LineageNode>& nodes() const { return nodes_; }
  const std::vector<KeyUse>& uses() const { return uses_; }

  // key(seed) as a new root node; returns its id.
  uint64_t Seed(int64_t seed);
  // split(parent, n): n new nodes, ids returned in index order.
  Result<std::vector<uint64_t>> Split(uint64_t parent, uint64_t n);
  // fold_in(parent, data): one new node.
  Result<uint64_t> FoldIn(uint64_t parent, uint32_t data);
  // Records that key `key_id` was used for `purpose` (must be non-empty, one line).
  Status Use(uint64_t key_id, std::string_view purpose);
  // The recorded key words of node `id`.
  Result<Key> KeyOf(uint64_t id) const;

  // JSON Lines (schemas/key-lineage.md): a header line, then nodes and uses in recording order;
  // every line is a JSON object with sorted keys and no whitespace, ending in '\n'.
  std::string ToJsonl() const;
  // Parses and structurally validates a lineage (ids, parents, fields); does not recompute keys.
  static Result<KeyLineage> FromJsonl(std::string_view text);

 private:
  friend class LineageParser;
  Status CheckId(uint64_t id) const;

  Mode mode_;
  std::vector<LineageNode> nodes_;
  std::vector<KeyUse> uses_;
};

// Recomputes every node from its parent's recorded key (seeds from their argument) in id order
// and returns VerificationFailed naming the first node whose recorded key differs, with the
// expected and recorded words. OK when every node matches.
Status ReplayLineage(const KeyLineage& lineage);

}  // namespace detrain::prng

#endif  // DETRAIN_ATTEST_PRNG_LINEAGE_H_
