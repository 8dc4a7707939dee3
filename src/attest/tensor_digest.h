// Tensor digests (schemas/tensor-digest.md).
//
//   header = canonical JSON {"dtype":D,"name":N,"shape":[...]}
//   data   = the elements in row-major order, little-endian, every NaN written as the dtype's
//            canonical quiet NaN (f32 0x7fc00000; DESIGN.md §2)
//   digest = SHA-256("detrain.tensor.v1" || 0x00 || u64le(len(header)) || header ||
//                    merkle_root(data))          (merkle_root as in schemas/merkle.md)
//
// Hashing the data as a Merkle tree lets large tensors hash on all cores with a result that
// does not depend on the thread count. Thread safety: pure functions (the pool is borrowed).
#ifndef DETRAIN_ATTEST_TENSOR_DIGEST_H_
#define DETRAIN_ATTEST_TENSOR_DIGEST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attest/sha256.h"
#include "base/status.h"
#include "base/thread_pool.h"

namespace detrain::attest {

struct TensorView {
  std::string_view name;
  std::string_view dtype;  // XLA spelling: pred s8 u8 s16 u16 s32 u32 s64 u64 f16 bf16 f32 f64
  std::vector<int64_t> shape;
  std::string_view data;  // host bytes; detrain supports little-endian hosts only
};

// Bytes per element of an XLA dtype name, or 0 if the name is unknown.
size_t DTypeSize(std::string_view dtype);

// The canonical data bytes: a copy of `data` with every NaN replaced by the canonical NaN.
// Returns `data` unchanged (as a copy) for non-float dtypes.
std::string CanonicalTensorBytes(std::string_view dtype, std::string_view data);

// Fails when the dtype is unknown, a dimension is negative, or the data size does not match.
Result<Digest256> TensorDigest(const TensorView& tensor, ThreadPool* pool);

}  // namespace detrain::attest

#endif  // DETRAIN_ATTEST_TENSOR_DIGEST_H_
