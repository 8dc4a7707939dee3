// See safetensors.h. Format reference: the safetensors README and its Rust implementation
// (`safetensors::tensor::Metadata::validate`), whose offset rules this reader follows.
#include "base/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <utility>

#include "base/file_io.h"

namespace detrain {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";
// The reference implementation's limit on the header; it also bounds what a hostile length field
// can make us allocate.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// The schema's deepest value is a shape array: top-level object > tensor object > array.
constexpr int kMaxNesting = 3;

struct DtypeInfo {
  std::string_view name;
  int size;
};
constexpr DtypeInfo kDtypes[] = {{"F32", 4}, {"F64", 8}, {"I32", 4}, {"U32", 4}, {"I64", 8},
                                 {"U64", 8}, {"U8", 1},  {"I8", 1},  {"BOOL", 1}};

Status Error(std::string m) { return DataLoss("safetensors: " + std::move(m)); }

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

// A JSON value for an error message, cut short: a hostile header may hold huge values.
std::string Brief(const Json& v) {
  constexpr size_t kMax = 64;
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() <= kMax) return s;
  size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;  // keep UTF-8
  return s.substr(0, cut) + "...";
}

// "a number", "an array", ...
std::string KindOf(const Json& v) {
  return std::string(v.is_array() || v.is_object() ? "an " : "a ") + v.type_name();
}

std::string TensorName(const std::string& name) { return "tensor " + Brief(Json(name)); }

// `"a", "b", "c"`, at most the first few.
std::string KeyList(const Json& object) {
  std::string s;
  int n = 0;
  for (auto it = object.begin(); it != object.end(); ++it, ++n) {
    if (n == 4) return s + ", ...";
    s += (n ? ", " : "") + Brief(Json(it.key()));
  }
  return s.empty() ? "none" : s;
}

// Sets *bytes to the size of a tensor of `shape` and `itemsize`; false on a negative dimension
// or overflow. A zero dimension makes the size 0 whatever the other dimensions are.
bool TensorBytes(const std::vector<int64_t>& shape, int itemsize, uint64_t* bytes) {
  uint64_t n = static_cast<uint64_t>(itemsize);
  bool overflow = false;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (d == 0) {
      *bytes = 0;
      return true;
    }
    overflow |= __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n);
  }
  *bytes = n;
  return !overflow;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

void PutU64Le(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetU64Le(std::string_view b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[i]);
  return v;
}

// nlohmann's DOM is built by recursion-free code today, but nothing promises that; rejecting
// deep nesting before parsing keeps a `[[[[...` header from exhausting the stack either way.
Status CheckNesting(std::string_view header) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < header.size(); ++i) {
    char c = header[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNesting) {
        return Error("header nests deeper than " + std::to_string(kMaxNesting) +
                     " levels at byte " + std::to_string(i) + " of the header");
      }
    } else if (c == ']' || c == '}') {
      if (--depth < 0) {
        return Error("header closes a bracket at byte " + std::to_string(i) +
                     " that it never opened");
      }
    }
  }
  return Status::Ok();
}

// Parses the header, flagging duplicate keys in any object (nlohmann keeps one silently).
Result<Json> ParseHeaderJson(std::string_view header) {
  DETRAIN_RETURN_IF_ERROR(CheckNesting(header));
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  bool has_duplicate = false;
  Json::parser_callback_t cb = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == Json::parse_event_t::key && !keys.empty()) {
      const std::string& k = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(k).second && !has_duplicate) {
        has_duplicate = true;
        duplicate = k;
      }
    }
    return true;
  };
  Json j = Json::parse(header.begin(), header.end(), cb, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error("header is not valid JSON");
  if (has_duplicate) return Error("header has the key " + Brief(Json(duplicate)) + " twice");
  if (!j.is_object()) return Error("header is not a JSON object");
  return j;
}

Status ParseMetadata(const Json& j, std::map<std::string, std::string>* out) {
  if (!j.is_object()) return Error("\"__metadata__\" is " + KindOf(j) + ", not an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it->is_string()) {
      return Error("\"__metadata__\" entry " + Brief(Json(it.key())) + " is " + KindOf(*it) +
                   ", not a string");
    }
    (*out)[it.key()] = it->get<std::string>();
  }
  return Status::Ok();
}

struct Entry {
  uint64_t begin = 0;
  uint64_t end = 0;
  SafeTensor tensor;
};

Result<uint64_t> UnsignedField(const Json& v, const std::string& what) {
  if (!v.is_number_unsigned()) {
    return Error(what + " is " + Brief(v) + ", not a non-negative integer");
  }
  return v.get<uint64_t>();
}

Result<Entry> ParseEntry(const std::string& name, const Json& j, uint64_t data_size) {
  std::string where = TensorName(name);
  if (name.empty()) return Error("a tensor has an empty name");
  if (!j.is_object()) return Error(where + " is " + KindOf(j) + ", not an object");
  if (j.size() != 3 || !j.contains("dtype") || !j.contains("shape") ||
      !j.contains("data_offsets")) {
    return Error(where + " has keys " + KeyList(j) +
                 "; expected exactly \"data_offsets\", \"dtype\" and \"shape\"");
  }
  Entry e;
  e.tensor.name = name;
  const Json& dtype = j["dtype"];
  int itemsize = dtype.is_string() ? SafetensorsItemSize(dtype.get_ref<const std::string&>()) : 0;
  if (itemsize == 0) {
    return Error(where + " has dtype " + Brief(dtype) +
                 "; supported: F32 F64 I32 U32 I64 U64 U8 I8 BOOL");
  }
  e.tensor.dtype = dtype.get<std::string>();
  const Json& shape = j["shape"];
  if (!shape.is_array()) return Error(where + " has shape " + Brief(shape) + ", not an array");
  for (size_t i = 0; i < shape.size(); ++i) {
    DETRAIN_ASSIGN_OR_RETURN(uint64_t d,
                             UnsignedField(shape[i], where + " shape entry " + std::to_string(i)));
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error(where + " shape entry " + std::to_string(i) + " is " + std::to_string(d) +
                   ", larger than 2^63-1");
    }
    e.tensor.shape.push_back(static_cast<int64_t>(d));
  }
  uint64_t nbytes = 0;
  if (!TensorBytes(e.tensor.shape, itemsize, &nbytes)) {
    return Error(where + " of shape " + ShapeString(e.tensor.shape) + " and dtype " +
                 e.tensor.dtype + " has more than 2^64 bytes");
  }
  const Json& offsets = j["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    return Error(where + " has data_offsets " + Brief(offsets) + ", not [begin, end]");
  }
  DETRAIN_ASSIGN_OR_RETURN(e.begin, UnsignedField(offsets[0], where + " data_offsets begin"));
  DETRAIN_ASSIGN_OR_RETURN(e.end, UnsignedField(offsets[1], where + " data_offsets end"));
  std::string range = "[" + std::to_string(e.begin) + "," + std::to_string(e.end) + "]";
  if (e.begin > e.end) return Error(where + " has data_offsets " + range + " with begin > end");
  if (e.end > data_size) {
    return Error(where + " has data_offsets " + range + " past the end of the " +
                 std::to_string(data_size) + " data bytes");
  }
  if (e.end - e.begin != nbytes) {
    return Error(where + " has data_offsets " + range + " (" + std::to_string(e.end - e.begin) +
                 " bytes) but shape " + ShapeString(e.tensor.shape) + " and dtype " +
                 e.tensor.dtype + " need " + std::to_string(nbytes) + " bytes");
  }
  return e;
}

// Sorted by offset, the tensors must tile the data region: each starts where the previous one
// ended, the first at 0 and the last at its end.
Status CheckLayout(std::vector<Entry>& entries, uint64_t data_size) {
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return std::tie(a->begin, a->end, a->tensor.name) < std::tie(b->begin, b->end, b->tensor.name);
  });
  uint64_t expected = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != expected) {
      return Error(TensorName(e->tensor.name) + " starts at data byte " + std::to_string(e->begin) +
                   " but the previous tensor ends at " + std::to_string(expected) +
                   (e->begin < expected ? " (overlap)" : " (gap)"));
    }
    expected = e->end;
  }
  if (expected != data_size) {
    return Error("tensors cover " + std::to_string(expected) + " data bytes but the file has " +
                 std::to_string(data_size) + " after the header");
  }
  return Status::Ok();
}

}  // namespace

int SafetensorsItemSize(std::string_view dtype) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.name == dtype) return d.size;
  }
  return 0;
}

Result<std::string> SerializeSafetensors(const SafetensorsFile& file) {
  std::map<std::string, const SafeTensor*> by_name;
  for (const SafeTensor& t : file.tensors) {
    if (t.name.empty()) return InvalidArgument("safetensors: a tensor has an empty name");
    if (t.name == kMetadataKey) {
      return InvalidArgument("safetensors: \"__metadata__\" is reserved, not a tensor name");
    }
    if (!by_name.emplace(t.name, &t).second) {
      return InvalidArgument("safetensors: two tensors are named " + Quoted(t.name));
    }
    int itemsize = SafetensorsItemSize(t.dtype);
    if (itemsize == 0) {
      return InvalidArgument("safetensors: tensor " + Quoted(t.name) + " has unsupported dtype " +
                             Quoted(t.dtype));
    }
    uint64_t nbytes = 0;
    if (!TensorBytes(t.shape, itemsize, &nbytes) || nbytes != t.data.size()) {
      return InvalidArgument("safetensors: tensor " + Quoted(t.name) + " of shape " +
                             ShapeString(t.shape) + " and dtype " + t.dtype + " has " +
                             std::to_string(t.data.size()) + " data bytes");
    }
  }
  Json header = Json::object();  // std::map underneath: keys in byte order
  if (!file.metadata.empty()) header[std::string(kMetadataKey)] = file.metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : by_name) {
    uint64_t end = offset + t->data.size();
    header[name] = {{"dtype", t->dtype}, {"shape", t->shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception& e) {  // type_error 316: a name or metadata is not UTF-8
    return InvalidArgument(std::string("safetensors: ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  PutU64Le(text.size(), &out);
  out += text;
  for (const auto& [name, t] : by_name) out += t->data;
  return out;
}

Result<SafetensorsFile> ParseSafetensors(std::string_view bytes) {
  if (bytes.size() < 8) {
    return Error("file is " + std::to_string(bytes.size()) +
                 " bytes, shorter than the 8-byte header length");
  }
  uint64_t n = GetU64Le(bytes);
  uint64_t rest = bytes.size() - 8;
  if (n > rest) {
    return Error("header length " + std::to_string(n) + " exceeds the file's " +
                 std::to_string(rest) + " bytes after the length field");
  }
  if (n > kMaxHeaderBytes) {
    return Error("header length " + std::to_string(n) + " exceeds the limit of " +
                 std::to_string(kMaxHeaderBytes) + " bytes");
  }
  DETRAIN_ASSIGN_OR_RETURN(Json header, ParseHeaderJson(bytes.substr(8, n)));
  std::string_view data = bytes.substr(8 + n);
  SafetensorsFile out;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == kMetadataKey) {
      DETRAIN_RETURN_IF_ERROR(ParseMetadata(*it, &out.metadata));
      continue;
    }
    DETRAIN_ASSIGN_OR_RETURN(Entry e, ParseEntry(it.key(), *it, data.size()));
    entries.push_back(std::move(e));
  }
  DETRAIN_RETURN_IF_ERROR(CheckLayout(entries, data.size()));
  // The header iterates the std::map in key order, so the tensors come out sorted by name.
  for (Entry& e : entries) {
    e.tensor.data = std::string(data.substr(e.begin, e.end - e.begin));
    out.tensors.push_back(std::move(e.tensor));
  }
  return out;
}

Result<SafetensorsFile> ReadSafetensorsFile(const std::string& path) {
  DETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  Result<SafetensorsFile> r = ParseSafetensors(bytes);
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

Status WriteSafetensorsFile(const std::string& path, const SafetensorsFile& file) {
  DETRAIN_ASSIGN_OR_RETURN(std::string bytes, SerializeSafetensors(file));
  return WriteFileAtomic(path, bytes);
}

}  // namespace detrain
