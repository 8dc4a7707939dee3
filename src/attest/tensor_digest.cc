// See tensor_digest.h and schemas/tensor-digest.md.
#include "attest/tensor_digest.h"

#include <bit>
#include <cstring>

#include "attest/canonical_json.h"
#include "attest/merkle.h"

namespace detrain::attest {
namespace {

static_assert(std::endian::native == std::endian::little, "detrain assumes a little-endian host");

struct DTypeInfo {
  std::string_view name;
  size_t size;
  bool is_float;
};

constexpr DTypeInfo kDTypes[] = {
    {"pred", 1, false}, {"s8", 1, false},  {"u8", 1, false},  {"s16", 2, false}, {"u16", 2, false},
    {"s32", 4, false},  {"u32", 4, false}, {"s64", 8, false}, {"u64", 8, false}, {"f16", 2, true},
    {"bf16", 2, true},  {"f32", 4, true},  {"f64", 8, true},
};

const DTypeInfo* FindDType(std::string_view name) {
  for (const auto& d : kDTypes) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

// Replaces every NaN of width W bits (exponent all ones, mantissa non-zero) by `canonical`.
template <typename U>
void CanonicalizeNaNs(char* bytes, size_t count, U exp_mask, U mantissa_mask, U canonical) {
  for (size_t i = 0; i < count; ++i) {
    U v;
    std::memcpy(&v, bytes + i * sizeof(U), sizeof(U));
    if ((v & exp_mask) == exp_mask && (v & mantissa_mask) != 0) {
      std::memcpy(bytes + i * sizeof(U), &canonical, sizeof(U));
    }
  }
}

// Whether some NaN of width W bits is not `canonical` (CanonicalizeNaNs would change it).
template <typename U>
bool HasOtherNaN(const char* bytes, size_t count, U exp_mask, U mantissa_mask, U canonical) {
  for (size_t i = 0; i < count; ++i) {
    U v;
    std::memcpy(&v, bytes + i * sizeof(U), sizeof(U));
    if ((v & exp_mask) == exp_mask && (v & mantissa_mask) != 0 && v != canonical) return true;
  }
  return false;
}

// Whether CanonicalTensorBytes(dtype, data) == data: then a digest reads the data in place.
bool IsCanonical(std::string_view dtype, std::string_view data) {
  const char* p = data.data();
  if (dtype == "f32")
    return !HasOtherNaN<uint32_t>(p, data.size() / 4, 0x7f800000u, 0x007fffffu, 0x7fc00000u);
  if (dtype == "f64") {
    return !HasOtherNaN<uint64_t>(p, data.size() / 8, 0x7ff0000000000000ull, 0x000fffffffffffffull,
                                  0x7ff8000000000000ull);
  }
  if (dtype == "f16") return !HasOtherNaN<uint16_t>(p, data.size() / 2, 0x7c00, 0x03ff, 0x7e00);
  if (dtype == "bf16") return !HasOtherNaN<uint16_t>(p, data.size() / 2, 0x7f80, 0x007f, 0x7fc0);
  return true;
}

}  // namespace

size_t DTypeSize(std::string_view dtype) {
  const DTypeInfo* d = FindDType(dtype);
  return d == nullptr ? 0 : d->size;
}

std::string CanonicalTensorBytes(std::string_view dtype, std::string_view data) {
  std::string out(data);
  if (dtype == "f32") {
    CanonicalizeNaNs<uint32_t>(out.data(), out.size() / 4, 0x7f800000u, 0x007fffffu, 0x7fc00000u);
  } else if (dtype == "f64") {
    CanonicalizeNaNs<uint64_t>(out.data(), out.size() / 8, 0x7ff0000000000000ull,
                               0x000fffffffffffffull, 0x7ff8000000000000ull);
  } else if (dtype == "f16") {
    CanonicalizeNaNs<uint16_t>(out.data(), out.size() / 2, 0x7c00, 0x03ff, 0x7e00);
  } else if (dtype == "bf16") {
    CanonicalizeNaNs<uint16_t>(out.data(), out.size() / 2, 0x7f80, 0x007f, 0x7fc0);
  }
  return out;
}

Result<Digest256> TensorDigest(const TensorView& t, ThreadPool* pool) {
  const DTypeInfo* d = FindDType(t.dtype);
  if (d == nullptr)
    return InvalidArgument("tensor '" + std::string(t.name) + "': unknown dtype '" +
                           std::string(t.dtype) + "'");
  uint64_t count = 1;
  nlohmann::json shape = nlohmann::json::array();
  for (int64_t dim : t.shape) {
    if (dim < 0) return InvalidArgument("tensor '" + std::string(t.name) + "': negative dimension");
    count *= static_cast<uint64_t>(dim);
    shape.push_back(dim);
  }
  if (count * d->size != t.data.size()) {
    return InvalidArgument("tensor '" + std::string(t.name) + "': shape needs " +
                           std::to_string(count * d->size) + " bytes, data has " +
                           std::to_string(t.data.size()));
  }
  nlohmann::json header = {{"dtype", t.dtype}, {"name", t.name}, {"shape", shape}};
  DETRAIN_ASSIGN_OR_RETURN(std::string header_text, CanonicalJson(header));
  // A copy only when a NaN needs its canonical bits: a state's tensors have none, and a copy of
  // the largest would add its size to a step's peak memory.
  Digest256 data_root = d->is_float && !IsCanonical(t.dtype, t.data)
                            ? MerkleRoot(CanonicalTensorBytes(t.dtype, t.data), pool)
                            : MerkleRoot(t.data, pool);
  Sha256 h;
  h.Update(std::string_view("detrain.tensor.v1\0", 18));
  uint8_t len_le[8];
  uint64_t len = header_text.size();
  for (int i = 0; i < 8; ++i) len_le[i] = static_cast<uint8_t>(len >> (8 * i));
  h.Update(len_le, 8);
  h.Update(header_text);
  h.Update(data_root.data(), data_root.size());
  return h.Final();
}

}  // namespace detrain::attest
