// Digests of the training state and the per-step hash chain (DESIGN.md §4; schemas/bundle.md
// "Steps").
//
// The state is a list of named arrays (parameters, optimizer slots, the update counter). Each
// tensor gets a digest, and the state digest combines them in name order, so a mismatch names
// the tensor:
//   - the fast policy, XXH3-128 (libxxhash), after every step:
//       tensor = XXH3-128(u64le(len(header)) || header || data), header = canonical JSON
//                {"dtype","name","shape"} (as tensor_digest.h), data = the raw little-endian
//                bytes (NaN payloads are defined by the op semantics, so the bytes the runtime
//                produces are already canonical);
//       state  = XXH3-128(tensor digests, in name order);
//   - the chunked XXH3-128 policy (`xxh3-128-chunked`), the same hash in a form a GPU (or a
//     thread pool) computes in parallel: each tensor's data cut into kDigestChunkBytes chunks,
//       leaf_i = XXH3-128(chunk i), tensor = XXH3-128(u64le(len(header)) || header
//                || u64le(len(data)) || leaf_0 || leaf_1 || ...),
//       state  = XXH3-128(tensor digests, in name order);
//   - the SHA-256 policy: tensor = the SHA-256 tensor digest (tensor_digest.h), state = the
//     Merkle root (merkle.h) over the tensor digests in name order. Taken at checkpoints and at
//     the end for the parameters and for the optimizer state (slots and counter) separately —
//     the "roots" —, and every step for the whole state with `--step-digest sha256`.
// The step hash chains them:
//   h_t = SHA-256("detrain.step.v1" || 0x00 || h_{t-1} || u64le(t) || batch digest (32 bytes)
//                 || u32le(key hi) || u32le(key lo) || u32le(learning-rate bits)
//                 || u32le(loss bits) || u8(len(state digest)) || state digest
//                 || u8(number of roots) || roots (32 bytes each)
//                 || u8(number of eval values) || u32le(eval value bits)...)
// and h_{-1}, the genesis hash, commits to the stage chain and the initial state:
//   SHA-256("detrain.genesis.v1" || 0x00 || u64le(len(stage chain)) || stage chain
//           || initial params root || initial optimizer-state root).
//
// Thread safety: pure functions (the pool is borrowed). Determinism: results depend only on the
// tensors' names, dtypes, shapes and bytes, never on the pool size.
#ifndef DETRAIN_ATTEST_STATE_DIGEST_H_
#define DETRAIN_ATTEST_STATE_DIGEST_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attest/sha256.h"
#include "attest/tensor_digest.h"
#include "base/status.h"
#include "base/thread_pool.h"

namespace detrain::attest {

using Digest128 = std::array<uint8_t, 16>;

enum class DigestPolicy { kXxh3, kSha256, kXxh3Chunked };

// The bytes of a digest under `policy`: 16 (XXH3-128) or 32 (SHA-256).
size_t DigestSize(DigestPolicy policy);

// The chunk of the chunked policy: 16 KiB, so that the 22 MB state of a 1.8M-parameter MLP with
// Adam makes ~1,400 leaves for as many GPU threads, and a leaf's fixed cost (~50 ns on a CPU)
// stays under 5 % of hashing its 16 KiB.
inline constexpr int64_t kDigestChunkBytes = 16384;

// What the chunked policy hashes before a tensor's leaves: u64le(len(header)) || header ||
// u64le(len(data)), header the canonical JSON above. A device that digests the state it holds
// (runtime/cuda) lays its leaves after these bytes.
Result<std::string> ChunkedTensorPrefix(const TensorView& tensor);

// The chunked policy's tensor digests of (prefix, data) pairs — XXH3-128(prefix || leaves of
// data) —, every leaf of every tensor hashed in parallel on `pool` (may be null).
struct ChunkedInput {
  std::string_view prefix;  // ChunkedTensorPrefix of the tensor
  std::string_view data;
};
std::vector<Digest128> ChunkedDigests(const std::vector<ChunkedInput>& inputs, ThreadPool* pool);

struct StateDigests {
  std::string state;                                         // 16 (XXH3-128) or 32 (SHA-256) bytes
  std::vector<std::pair<std::string, std::string>> tensors;  // (name, digest), name order
};

// The state digest of `tensors` (names must be unique; any order) under `policy`.
Result<StateDigests> DigestState(const std::vector<TensorView>& tensors, DigestPolicy policy,
                                 ThreadPool* pool);

// The XXH3 policies' state digests from each tensor's digest (digests[i] of tensors[i], which
// need no data here): the tensors in name order, and the state over them.
Result<StateDigests> Xxh3StateOf(const std::vector<TensorView>& tensors,
                                 const std::vector<Digest128>& digests);

// XXH3-128 of a byte string, as 16 big-endian bytes (XXH128_canonicalFromHash).
Digest128 Xxh3Of(std::string_view bytes);

// Merkle root over the SHA-256 tensor digests of `tensors` in name order.
Result<Digest256> StateSha256Root(const std::vector<TensorView>& tensors, ThreadPool* pool);

struct StepHashInput {
  Digest256 previous{};
  uint64_t step = 0;
  Digest256 batch{};
  uint32_t key_hi = 0, key_lo = 0;
  uint32_t learning_rate_bits = 0;
  uint32_t loss_bits = 0;
  std::string state_digest;         // 16 (xxh3) or 32 (sha256) bytes
  std::vector<Digest256> roots;     // SHA-256 roots (params, optimizer state) when taken
  std::vector<uint32_t> eval_bits;  // eval metrics (loss, accuracy) when evaluated
};

Digest256 StepHash(const StepHashInput& in);

// The batch digest of a step: which rows it took and what it fed the step.
//   SHA-256("detrain.batch.v1" || 0x00 || u64le(epoch) || u64le(rows) || u64le(row)...
//           || XXH3-128 of the batch inputs' bytes, concatenated in entry order)
Digest256 BatchDigest(uint64_t epoch, const std::vector<int64_t>& rows,
                      const std::vector<std::string_view>& inputs);

Digest256 GenesisHash(std::string_view stage_chain, const Digest256& params_root,
                      const Digest256& optimizer_root);

}  // namespace detrain::attest

#endif  // DETRAIN_ATTEST_STATE_DIGEST_H_
