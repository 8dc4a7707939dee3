// See state_digest.h.
#include "attest/state_digest.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "attest/canonical_json.h"
#include "attest/merkle.h"

namespace detrain::attest {
namespace {

void PutU64(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU32(uint32_t v, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

Result<std::vector<const TensorView*>> SortedByName(const std::vector<TensorView>& tensors) {
  std::vector<const TensorView*> sorted;
  for (const TensorView& t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const TensorView* a, const TensorView* b) { return a->name < b->name; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->name == sorted[i - 1]->name) {
      return InvalidArgument("state: tensor '" + std::string(sorted[i]->name) + "' twice");
    }
  }
  return sorted;
}

Result<std::string> Header(const TensorView& t) {
  if (DTypeSize(t.dtype) == 0)
    return InvalidArgument("state: unknown dtype " + std::string(t.dtype));
  nlohmann::json h = {{"dtype", t.dtype}, {"name", t.name}, {"shape", t.shape}};
  return CanonicalJson(h);
}

Digest128 Canonical128(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  Digest128 d;
  std::copy(c.digest, c.digest + 16, d.begin());
  return d;
}

}  // namespace

size_t DigestSize(DigestPolicy policy) { return policy == DigestPolicy::kSha256 ? 32 : 16; }

Result<std::string> ChunkedTensorPrefix(const TensorView& tensor) {
  DETRAIN_ASSIGN_OR_RETURN(std::string header, Header(tensor));
  std::string prefix;
  PutU64(header.size(), &prefix);
  prefix += header;
  PutU64(tensor.data.size(), &prefix);
  return prefix;
}

std::vector<Digest128> ChunkedDigests(const std::vector<ChunkedInput>& inputs, ThreadPool* pool) {
  // Per tensor: its hash input (the prefix, then room for its leaves), and every leaf's place.
  struct Leaf {
    const char* data;
    size_t bytes;
    char* out;
  };
  constexpr size_t kChunk = static_cast<size_t>(kDigestChunkBytes);
  std::vector<std::string> hashed(inputs.size());
  std::vector<Leaf> leaves;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string_view data = inputs[i].data;
    hashed[i].assign(inputs[i].prefix);
    hashed[i].resize(inputs[i].prefix.size() + 16 * ((data.size() + kChunk - 1) / kChunk));
    char* out = hashed[i].data() + inputs[i].prefix.size();
    for (size_t at = 0; at < data.size(); at += kChunk, out += 16)
      leaves.push_back({data.data() + at, std::min(data.size() - at, kChunk), out});
  }
  auto hash_leaf = [&](size_t i) {
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(leaves[i].data, leaves[i].bytes));
    std::memcpy(leaves[i].out, c.digest, 16);
  };
  if (pool != nullptr && leaves.size() > 1) {
    pool->ParallelFor(leaves.size(), hash_leaf);
  } else {
    for (size_t i = 0; i < leaves.size(); ++i) hash_leaf(i);
  }
  std::vector<Digest128> out;
  out.reserve(hashed.size());
  for (const std::string& in : hashed) out.push_back(Xxh3Of(in));
  return out;
}

Result<StateDigests> Xxh3StateOf(const std::vector<TensorView>& tensors,
                                 const std::vector<Digest128>& digests) {
  if (digests.size() != tensors.size()) return Internal("state: one digest per tensor");
  DETRAIN_ASSIGN_OR_RETURN(std::vector<const TensorView*> sorted, SortedByName(tensors));
  StateDigests out;
  std::string all;
  for (const TensorView* t : sorted) {
    const Digest128& d = digests[static_cast<size_t>(t - tensors.data())];
    std::string digest(reinterpret_cast<const char*>(d.data()), d.size());
    all += digest;
    out.tensors.emplace_back(std::string(t->name), std::move(digest));
  }
  const Digest128 d = Xxh3Of(all);
  out.state.assign(reinterpret_cast<const char*>(d.data()), d.size());
  return out;
}

Digest128 Xxh3Of(std::string_view bytes) {
  return Canonical128(XXH3_128bits(bytes.data(), bytes.size()));
}

Result<StateDigests> DigestState(const std::vector<TensorView>& tensors, DigestPolicy policy,
                                 ThreadPool* pool) {
  DETRAIN_ASSIGN_OR_RETURN(std::vector<const TensorView*> sorted, SortedByName(tensors));
  StateDigests out;
  std::vector<Digest256> leaves;
  std::string all;
  if (policy == DigestPolicy::kXxh3Chunked) {
    std::vector<std::string> prefixes(tensors.size());
    std::vector<ChunkedInput> inputs;
    for (size_t i = 0; i < tensors.size(); ++i) {
      DETRAIN_ASSIGN_OR_RETURN(prefixes[i], ChunkedTensorPrefix(tensors[i]));
      inputs.push_back({prefixes[i], tensors[i].data});
    }
    return Xxh3StateOf(tensors, ChunkedDigests(inputs, pool));
  }
  for (const TensorView* t : sorted) {
    std::string digest;
    if (policy == DigestPolicy::kXxh3) {
      DETRAIN_ASSIGN_OR_RETURN(std::string header, Header(*t));
      std::string prefix;
      PutU64(header.size(), &prefix);
      prefix += header;
      XXH3_state_t state_storage;
      XXH3_state_t* state = &state_storage;
      XXH3_INITSTATE(state);
      XXH3_128bits_reset(state);
      XXH3_128bits_update(state, prefix.data(), prefix.size());
      XXH3_128bits_update(state, t->data.data(), t->data.size());
      Digest128 d = Canonical128(XXH3_128bits_digest(state));
      digest.assign(reinterpret_cast<const char*>(d.data()), d.size());
    } else {
      DETRAIN_ASSIGN_OR_RETURN(Digest256 d, TensorDigest(*t, pool));
      leaves.push_back(d);
      digest.assign(reinterpret_cast<const char*>(d.data()), d.size());
    }
    all += digest;
    out.tensors.emplace_back(std::string(t->name), std::move(digest));
  }
  if (policy == DigestPolicy::kXxh3) {
    Digest128 d = Xxh3Of(all);
    out.state.assign(reinterpret_cast<const char*>(d.data()), d.size());
  } else {
    Digest256 d = MerkleRootOfLeaves(std::move(leaves));
    out.state.assign(reinterpret_cast<const char*>(d.data()), d.size());
  }
  return out;
}

Result<Digest256> StateSha256Root(const std::vector<TensorView>& tensors, ThreadPool* pool) {
  DETRAIN_ASSIGN_OR_RETURN(std::vector<const TensorView*> sorted, SortedByName(tensors));
  std::vector<Digest256> leaves;
  for (const TensorView* t : sorted) {
    DETRAIN_ASSIGN_OR_RETURN(Digest256 d, TensorDigest(*t, pool));
    leaves.push_back(d);
  }
  return MerkleRootOfLeaves(std::move(leaves));
}

Digest256 StepHash(const StepHashInput& in) {
  std::string b = "detrain.step.v1";
  b.push_back('\0');
  b.append(reinterpret_cast<const char*>(in.previous.data()), in.previous.size());
  PutU64(in.step, &b);
  b.append(reinterpret_cast<const char*>(in.batch.data()), in.batch.size());
  PutU32(in.key_hi, &b);
  PutU32(in.key_lo, &b);
  PutU32(in.learning_rate_bits, &b);
  PutU32(in.loss_bits, &b);
  b.push_back(static_cast<char>(in.state_digest.size()));
  b += in.state_digest;
  b.push_back(static_cast<char>(in.roots.size()));
  for (const Digest256& r : in.roots) b.append(reinterpret_cast<const char*>(r.data()), r.size());
  b.push_back(static_cast<char>(in.eval_bits.size()));
  for (uint32_t v : in.eval_bits) PutU32(v, &b);
  return Sha256Of(b);
}

Digest256 GenesisHash(std::string_view stage_chain, const Digest256& params_root,
                      const Digest256& optimizer_root) {
  std::string b = "detrain.genesis.v1";
  b.push_back('\0');
  PutU64(stage_chain.size(), &b);
  b += stage_chain;
  b.append(reinterpret_cast<const char*>(params_root.data()), params_root.size());
  b.append(reinterpret_cast<const char*>(optimizer_root.data()), optimizer_root.size());
  return Sha256Of(b);
}

Digest256 BatchDigest(uint64_t epoch, const std::vector<int64_t>& rows,
                      const std::vector<std::string_view>& inputs) {
  std::string b = "detrain.batch.v1";
  b.push_back('\0');
  PutU64(epoch, &b);
  PutU64(rows.size(), &b);
  for (int64_t r : rows) PutU64(static_cast<uint64_t>(r), &b);
  XXH3_state_t state_storage;
  XXH3_state_t* state = &state_storage;
  XXH3_INITSTATE(state);
  XXH3_128bits_reset(state);
  for (std::string_view in : inputs) XXH3_128bits_update(state, in.data(), in.size());
  Digest128 x = Canonical128(XXH3_128bits_digest(state));
  b.append(reinterpret_cast<const char*>(x.data()), x.size());
  return Sha256Of(b);
}

}  // namespace detrain::attest
