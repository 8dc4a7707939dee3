// NumPy .npy files (format versions 1.0, 2.0 and 3.0): the array exchange format of
// `detrain eval` and of the test vectors exported from JAX.
//
// Supported: little-endian `<f4 <i4 <u4 <i8 <u8` and `|b1`, C (row-major) order. Anything else —
// big-endian, Fortran order, other dtypes, object arrays, a size that disagrees with the shape —
// is an error that says what was found and what is supported. Writing produces version 1.0
// with the header padded so the data starts at a multiple of 64 bytes, as NumPy does.
//
// Thread safety: pure functions (file functions touch only the named path).
#ifndef DETRAIN_BASE_NPY_H_
#define DETRAIN_BASE_NPY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace detrain {

enum class NpyDtype : uint8_t { kBool, kF32, kS32, kU32, kS64, kU64 };

struct NpyArray {
  NpyDtype dtype = NpyDtype::kF32;
  std::vector<int64_t> shape;
  std::string data;  // little-endian, C order
};

std::string_view NpyDescr(NpyDtype dtype);  // "<f4", "|b1", ...
int NpyItemSize(NpyDtype dtype);

// The array's data must fit the one-tensor memory budget (base/budget.h); an error names its
// shape and dtype. The rvalue overload parses in place: the array's data reuses `bytes`.
Result<NpyArray> ParseNpy(std::string_view bytes);
Result<NpyArray> ParseNpy(std::string&& bytes);
std::string SerializeNpy(const NpyArray& array);

Result<NpyArray> ReadNpyFile(const std::string& path);
Status WriteNpyFile(const std::string& path, const NpyArray& array);

}  // namespace detrain

#endif  // DETRAIN_BASE_NPY_H_
