// See npy.h. Format reference: NumPy's "NEP 1 — A simple file format for NumPy arrays".
#include "base/npy.h"

#include <cctype>
#include <cstring>

#include "base/budget.h"
#include "base/checked.h"
#include "base/file_io.h"

namespace detrain {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct DtypeInfo {
  NpyDtype dtype;
  std::string_view descr;
  int size;
};
constexpr DtypeInfo kDtypes[] = {{NpyDtype::kBool, "|b1", 1}, {NpyDtype::kF32, "<f4", 4},
                                 {NpyDtype::kS32, "<i4", 4},  {NpyDtype::kU32, "<u4", 4},
                                 {NpyDtype::kS64, "<i8", 8},  {NpyDtype::kU64, "<u8", 8}};

// Finds `'key':` in the header dict and returns the text after it (leading spaces removed).
Result<std::string_view> DictValue(std::string_view header, std::string_view key) {
  std::string quoted = "'" + std::string(key) + "'";
  size_t pos = header.find(quoted);
  if (pos == std::string_view::npos) return DataLoss("npy header has no " + quoted + " entry");
  pos = header.find(':', pos + quoted.size());
  if (pos == std::string_view::npos)
    return DataLoss("npy header entry " + quoted + " has no value");
  std::string_view v = header.substr(pos + 1);
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  return v;
}

Result<std::vector<int64_t>> ParseShapeTuple(std::string_view v) {
  if (v.empty() || v.front() != '(') return DataLoss("npy 'shape' is not a tuple");
  size_t end = v.find(')');
  if (end == std::string_view::npos) return DataLoss("npy 'shape' tuple is not closed");
  std::vector<int64_t> shape;
  std::string_view body = v.substr(1, end - 1);
  size_t pos = 0;
  while (pos < body.size()) {
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == ',')) ++pos;
    if (pos >= body.size()) break;
    int64_t dim = 0;
    size_t start = pos;
    while (pos < body.size() && std::isdigit(static_cast<unsigned char>(body[pos]))) {
      dim = dim * 10 + (body[pos++] - '0');
      if (dim > (int64_t{1} << 48)) return DataLoss("npy dimension is too large");
    }
    if (pos == start) return DataLoss("npy 'shape' has a non-integer entry");
    shape.push_back(dim);
  }
  return shape;
}

}  // namespace

std::string_view NpyDescr(NpyDtype dtype) { return kDtypes[static_cast<int>(dtype)].descr; }
int NpyItemSize(NpyDtype dtype) { return kDtypes[static_cast<int>(dtype)].size; }

namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// The header of an .npy file: dtype and shape in `array` (data left empty), and where the data
// starts. The data must be exactly what shape and dtype need, and fit the one-tensor budget.
Result<size_t> ParseNpyHeader(std::string_view bytes, NpyArray* out) {
  NpyArray& array = *out;
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic)
    return DataLoss("not an .npy file (bad magic)");
  uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t len_size = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (len_size == 0) return DataLoss("unsupported .npy format version " + std::to_string(major));
  if (bytes.size() < 8 + len_size) return DataLoss("truncated .npy header");
  uint32_t header_len = 0;
  for (size_t i = 0; i < len_size; ++i) {
    header_len |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
  }
  size_t data_start = 8 + len_size + header_len;
  if (bytes.size() < data_start) return DataLoss("truncated .npy header");
  std::string_view header = bytes.substr(8 + len_size, header_len);
  DETRAIN_ASSIGN_OR_RETURN(std::string_view descr_v, DictValue(header, "descr"));
  size_t q = descr_v.find('\'', 1);
  std::string descr = descr_v.size() > 1 && descr_v[0] == '\'' && q != std::string_view::npos
                          ? std::string(descr_v.substr(1, q - 1))
                          : std::string("?");
  bool found = false;
  for (const DtypeInfo& info : kDtypes) {
    if (info.descr == descr) array.dtype = info.dtype, found = true;
  }
  if (!found) {
    return InvalidArgument("unsupported .npy dtype '" + descr +
                           "' (supported: <f4 <i4 <u4 <i8 <u8 |b1, little-endian)");
  }
  DETRAIN_ASSIGN_OR_RETURN(std::string_view fortran, DictValue(header, "fortran_order"));
  if (fortran.substr(0, 4) == "True")
    return InvalidArgument("Fortran-order .npy arrays are not supported; save with C order");
  if (fortran.substr(0, 5) != "False") return DataLoss("npy 'fortran_order' is not True or False");
  DETRAIN_ASSIGN_OR_RETURN(std::string_view shape_v, DictValue(header, "shape"));
  DETRAIN_ASSIGN_OR_RETURN(array.shape, ParseShapeTuple(shape_v));
  // Checked before it is compared: each dimension is at most 2^48, but their product may not be.
  Result<int64_t> count = CheckedElementCount(array.shape, "npy 'shape'");
  if (!count.ok() || *count > (int64_t{1} << 48)) return DataLoss("npy array is too large");
  uint64_t expected =
      static_cast<uint64_t>(*count) * static_cast<uint64_t>(NpyItemSize(array.dtype));
  if (bytes.size() - data_start != expected) {
    return DataLoss(".npy data is " + std::to_string(bytes.size() - data_start) +
                    " bytes; shape and dtype need " + std::to_string(expected));
  }
  // The data is already in memory, but the array is a tensor: it must fit the budget like one.
  DETRAIN_RETURN_IF_ERROR(CheckTensorBytes(static_cast<int64_t>(expected),
                                           "an .npy array of shape " + ShapeText(array.shape) +
                                               " and dtype " + std::string(NpyDescr(array.dtype))));
  return data_start;
}

}  // namespace

Result<NpyArray> ParseNpy(std::string_view bytes) {
  NpyArray array;
  DETRAIN_ASSIGN_OR_RETURN(const size_t data_start, ParseNpyHeader(bytes, &array));
  array.data = std::string(bytes.substr(data_start));
  return array;
}

Result<NpyArray> ParseNpy(std::string&& bytes) {
  NpyArray array;
  DETRAIN_ASSIGN_OR_RETURN(const size_t data_start, ParseNpyHeader(bytes, &array));
  bytes.erase(0, data_start);  // in place: no second copy of the data
  array.data = std::move(bytes);
  return array;
}

std::string SerializeNpy(const NpyArray& array) {
  std::string shape = "(";
  for (size_t i = 0; i < array.shape.size(); ++i) shape += std::to_string(array.shape[i]) + ", ";
  if (array.shape.size() > 1) shape.resize(shape.size() - 2);
  if (array.shape.size() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + std::string(NpyDescr(array.dtype)) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out += array.data;
  return out;
}

Result<NpyArray> ReadNpyFile(const std::string& path) {
  DETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  auto array = ParseNpy(std::move(bytes));
  if (!array.ok()) return array.status().WithContext(path);
  return array;
}

Status WriteNpyFile(const std::string& path, const NpyArray& array) {
  return WriteFileAtomic(path, SerializeNpy(array));
}

}  // namespace detrain
