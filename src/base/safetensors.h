// safetensors files (https://huggingface.co/docs/safetensors): the weights format of checkpoints
// and final weights in an audit bundle, readable by PyTorch, JAX and numpy users.
//
//   u64le N | N bytes of JSON header | data
//   header = {"__metadata__": {str: str}, NAME: {"dtype": D, "shape": [...],
//             "data_offsets": [begin, end]}, ...}   offsets relative to the start of data
//
// Writing is deterministic, so a verifier can rebuild a file's exact bytes from its tensors:
// the header is canonical JSON (keys sorted, no whitespace), tensors are laid out in name order
// with no gaps, and the header is padded with spaces to a multiple of 8 bytes (as the reference
// implementation does, so the data is aligned).
//
// Reading treats the file as hostile: the header length is checked against the file size before
// anything is allocated, the JSON must be an object of the shape above, every dtype known, every
// shape non-negative with a product that does not overflow, offsets in bounds, contiguous,
// non-overlapping and covering the data exactly, names unique. Errors say what was found.
//
// Supported dtypes: F32 F64 I32 U32 I64 U64 U8 I8 BOOL (the ones detrain's state uses, plus the
// common integer ones).
//
// Thread safety: pure functions.
#ifndef DETRAIN_BASE_SAFETENSORS_H_
#define DETRAIN_BASE_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace detrain {

struct SafeTensor {
  std::string name;
  std::string dtype;  // safetensors spelling: "F32", "I32", "U32", ...
  std::vector<int64_t> shape;
  std::string data;  // little-endian, C order; size = product(shape) * itemsize
};

// A tensor to write, its fields borrowed (a checkpoint is written from the state in place).
struct SafeTensorRef {
  std::string_view name;
  std::string_view dtype;
  std::span<const int64_t> shape;
  std::string_view data;
};

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;  // "__metadata__"; empty when absent
  std::vector<SafeTensor> tensors;              // sorted by name
};

// Bytes per element of a safetensors dtype name, or 0 if unknown or unsupported.
int SafetensorsItemSize(std::string_view dtype);

// The longest header a reader accepts, as the reference implementation's; it also bounds what a
// hostile length field can make a reader allocate. Every reader of a safetensors header uses it.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// The file's bytes. Fails on a duplicate or empty name, an unknown dtype, or a data size that
// disagrees with the shape. Tensors may be given in any order; the file lists them by name.
Result<std::string> SerializeSafetensors(const SafetensorsFile& file);

// Parses and checks a whole file's bytes (see the header comment). DataLoss on malformed input.
// Time and memory are linear in the file's size (times the logarithm of the tensor count): the
// header is read one tensor at a time (base/json_parse.h), never as one JSON value. The only
// limit is kMaxSafetensorsHeaderBytes, which bounds the tensor count too (an entry takes at
// least ~50 bytes of header, so at most ~2 million tensors).
Result<SafetensorsFile> ParseSafetensors(std::string_view bytes);

Result<SafetensorsFile> ReadSafetensorsFile(const std::string& path);

// The file's tensors by name, for lookups in logarithmic time (a file may hold a million
// tensors; a scan per lookup made readers quadratic). Of a name given twice, which a parsed file
// never has, the last tensor. The pointers and names point into `file`.
std::map<std::string_view, const SafeTensor*> TensorsByName(const SafetensorsFile& file);
// Serializes and writes atomically (base/file_io.h).
Status WriteSafetensorsFile(const std::string& path, const SafetensorsFile& file);
// The same bytes, each tensor's data written from where it is: no copy of the tensors is made.
Status WriteSafetensorsFile(const std::string& path,
                            const std::map<std::string, std::string>& metadata,
                            const std::vector<SafeTensorRef>& tensors);

}  // namespace detrain

#endif  // DETRAIN_BASE_SAFETENSORS_H_
