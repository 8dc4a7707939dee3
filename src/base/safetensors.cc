// See safetensors.h. Format reference: the safetensors README and its Rust implementation
// (`safetensors::tensor::Metadata::validate`), whose offset rules this reader follows.
#include "base/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <tuple>
#include <utility>

#include "base/file_io.h"
#include "base/json_parse.h"

namespace detrain {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";
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
bool TensorBytes(std::span<const int64_t> shape, int itemsize, uint64_t* bytes) {
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

std::string ShapeString(std::span<const int64_t> shape) {
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
  size_t position = 0;  // of its key in the header (JsonRepeatedKey::position)
  SafeTensor tensor;
};

// `what` names the field for the error message; it is called only on an error.
template <typename What>
Result<uint64_t> UnsignedField(const Json& v, const What& what) {
  if (!v.is_number_unsigned()) {
    return Error(what() + " is " + Brief(v) + ", not a non-negative integer");
  }
  return v.get<uint64_t>();
}

Result<Entry> ParseEntry(const std::string& name, const Json& j, uint64_t data_size) {
  // Built only for an error message: a header may hold a million tensors.
  auto where = [&name] { return TensorName(name); };
  if (name.empty()) return Error("a tensor has an empty name");
  if (!j.is_object()) return Error(where() + " is " + KindOf(j) + ", not an object");
  if (j.size() != 3 || !j.contains("dtype") || !j.contains("shape") ||
      !j.contains("data_offsets")) {
    return Error(where() + " has keys " + KeyList(j) +
                 "; expected exactly \"data_offsets\", \"dtype\" and \"shape\"");
  }
  Entry e;
  e.tensor.name = name;
  const Json& dtype = j["dtype"];
  int itemsize = dtype.is_string() ? SafetensorsItemSize(dtype.get_ref<const std::string&>()) : 0;
  if (itemsize == 0) {
    return Error(where() + " has dtype " + Brief(dtype) +
                 "; supported: F32 F64 I32 U32 I64 U64 U8 I8 BOOL");
  }
  e.tensor.dtype = dtype.get<std::string>();
  const Json& shape = j["shape"];
  if (!shape.is_array()) return Error(where() + " has shape " + Brief(shape) + ", not an array");
  for (size_t i = 0; i < shape.size(); ++i) {
    DETRAIN_ASSIGN_OR_RETURN(uint64_t d, UnsignedField(shape[i], [&] {
                               return where() + " shape entry " + std::to_string(i);
                             }));
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error(where() + " shape entry " + std::to_string(i) + " is " + std::to_string(d) +
                   ", larger than 2^63-1");
    }
    e.tensor.shape.push_back(static_cast<int64_t>(d));
  }
  uint64_t nbytes = 0;
  if (!TensorBytes(e.tensor.shape, itemsize, &nbytes)) {
    return Error(where() + " of shape " + ShapeString(e.tensor.shape) + " and dtype " +
                 e.tensor.dtype + " has more than 2^64 bytes");
  }
  const Json& offsets = j["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    return Error(where() + " has data_offsets " + Brief(offsets) + ", not [begin, end]");
  }
  DETRAIN_ASSIGN_OR_RETURN(
      e.begin, UnsignedField(offsets[0], [&] { return where() + " data_offsets begin"; }));
  DETRAIN_ASSIGN_OR_RETURN(
      e.end, UnsignedField(offsets[1], [&] { return where() + " data_offsets end"; }));
  auto range = [&e] { return "[" + std::to_string(e.begin) + "," + std::to_string(e.end) + "]"; };
  if (e.begin > e.end) return Error(where() + " has data_offsets " + range() + " with begin > end");
  if (e.end > data_size) {
    return Error(where() + " has data_offsets " + range() + " past the end of the " +
                 std::to_string(data_size) + " data bytes");
  }
  if (e.end - e.begin != nbytes) {
    return Error(where() + " has data_offsets " + range() + " (" + std::to_string(e.end - e.begin) +
                 " bytes) but shape " + ShapeString(e.tensor.shape) + " and dtype " +
                 e.tensor.dtype + " need " + std::to_string(nbytes) + " bytes");
  }
  return e;
}

// Sorted by offset, the tensors must tile the data region: each starts where the previous one
// ended, the first at 0 and the last at its end.
Status CheckLayout(const std::vector<Entry>& entries, uint64_t data_size) {
  // `entries` are in name order, so a stable sort breaks ties by name; a file as the writer
  // lays it out is in offset order already.
  std::vector<const Entry*> by_offset;
  by_offset.reserve(entries.size());
  for (const Entry& e : entries) by_offset.push_back(&e);
  auto before = [](const Entry* a, const Entry* b) {
    return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
  };
  if (!std::is_sorted(by_offset.begin(), by_offset.end(), before)) {
    std::stable_sort(by_offset.begin(), by_offset.end(), before);
  }
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

// The header's members, read one at a time as the parser streams them (base/json_parse.h): a
// header of a million tensors is never one JSON value in memory, and each is checked as it
// ends. The result is what checking the whole parsed header in key order gives: the first
// problem in this order wins — invalid JSON, a repeated key (the first repeat in the text), not
// an object, the first member in key order that is malformed, then the layout.
class HeaderReader {
 public:
  explicit HeaderReader(uint64_t data_size) : data_size_(data_size) {}

  Status Read(std::string_view header, SafetensorsFile* out, std::vector<Entry>* entries) {
    DETRAIN_RETURN_IF_ERROR(CheckNesting(header));
    std::optional<JsonRepeatedKey> repeat;
    bool is_object = false;
    try {
      is_object = StreamJsonObject(
          header, [&](std::string key, size_t at, Json v) { Member(std::move(key), at, v, out); },
          &repeat);
    } catch (const Json::exception&) {
      return Error("header is not valid JSON");
    }
    // Sorted by name (the order of the tensors in the file's model), repeats side by side.
    // (A header as the writer writes it is in name order already.)
    auto before = [](const Entry& a, const Entry& b) {
      return std::tie(a.tensor.name, a.position) < std::tie(b.tensor.name, b.position);
    };
    if (!std::is_sorted(entries_.begin(), entries_.end(), before)) {
      std::sort(entries_.begin(), entries_.end(), before);
    }
    for (size_t i = 1; i < entries_.size(); ++i) {
      if (entries_[i].tensor.name == entries_[i - 1].tensor.name) {
        NoteRepeat(JsonRepeatedKey{entries_[i].tensor.name, entries_[i].position}, &repeat);
      }
    }
    if (metadata_positions_.size() > 1) {
      NoteRepeat(JsonRepeatedKey{std::string(kMetadataKey), metadata_positions_[1]}, &repeat);
    }
    if (repeat.has_value())
      return Error("header has the key " + Brief(Json(repeat->key)) + " twice");
    if (!is_object) return Error("header is not a JSON object");
    if (error_.has_value()) return error_->second;
    *entries = std::move(entries_);
    return Status::Ok();
  }

 private:
  static void NoteRepeat(JsonRepeatedKey r, std::optional<JsonRepeatedKey>* first) {
    if (!first->has_value() || r.position < (*first)->position) *first = std::move(r);
  }

  void Member(std::string key, size_t position, const Json& value, SafetensorsFile* out) {
    // Only a member that sorts before the first malformed one so far can change the result.
    const bool check = !error_.has_value() || key < error_->first;
    if (key == kMetadataKey) {
      metadata_positions_.push_back(position);
      if (metadata_positions_.size() == 1 && check) {
        if (Status s = ParseMetadata(value, &out->metadata); !s.ok()) Note(std::move(key), s);
      }
      return;
    }
    Entry e;
    if (check) {
      Result<Entry> r = ParseEntry(key, value, data_size_);
      if (r.ok()) {
        e = std::move(*r);
      } else {
        Note(key, r.status());
      }
    }
    e.tensor.name = std::move(key);
    e.position = position;
    entries_.push_back(std::move(e));
  }

  void Note(std::string key, const Status& s) {
    if (!error_.has_value() || key < error_->first) error_.emplace(std::move(key), s);
  }

  uint64_t data_size_;
  std::vector<Entry> entries_;
  std::vector<size_t> metadata_positions_;
  std::optional<std::pair<std::string, Status>> error_;  // the first malformed member by key
};

}  // namespace

int SafetensorsItemSize(std::string_view dtype) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.name == dtype) return d.size;
  }
  return 0;
}

namespace {

// The file as parts: `head` (the length and the header) and each tensor's bytes in name order.
Status SafetensorsParts(const std::map<std::string, std::string>& metadata,
                        const std::vector<SafeTensorRef>& tensors, std::string* head,
                        std::vector<std::string_view>* data) {
  std::map<std::string_view, const SafeTensorRef*> by_name;
  for (const SafeTensorRef& t : tensors) {
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
                             ShapeString(t.shape) + " and dtype " + std::string(t.dtype) + " has " +
                             std::to_string(t.data.size()) + " data bytes");
    }
  }
  // The canonical header, written member by member: what nlohmann's dump of the whole header as
  // one object gives (keys in byte order, "__metadata__" among them; no whitespace), without
  // building it (a DOM of a million tensors takes a gigabyte). Strings go through nlohmann's own
  // escaping; dtypes are plain ASCII and numbers are integers.
  std::string text = "{";
  uint64_t offset = 0;
  try {
    bool metadata_due = !metadata.empty();
    auto member = [&text](const std::string& quoted_key) {
      if (text.size() > 1) text += ',';
      text += quoted_key;
      text += ':';
    };
    auto put_metadata = [&] {
      member("\"__metadata__\"");
      text += Json(metadata).dump();
      metadata_due = false;
    };
    for (const auto& [name, t] : by_name) {
      if (metadata_due && name > kMetadataKey) put_metadata();
      const uint64_t end = offset + t->data.size();
      member(Json(std::string(name)).dump());
      text += "{\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) +
              "],\"dtype\":\"" + std::string(t->dtype) + "\",\"shape\":[";
      for (size_t i = 0; i < t->shape.size(); ++i) {
        text += (i ? "," : "") + std::to_string(t->shape[i]);
      }
      text += "]}";
      offset = end;
    }
    if (metadata_due) put_metadata();
  } catch (const Json::exception& e) {  // type_error 316: a name or metadata is not UTF-8
    return InvalidArgument(std::string("safetensors: ") + e.what());
  }
  text += '}';
  text.append((8 - text.size() % 8) % 8, ' ');
  head->clear();
  PutU64Le(text.size(), head);
  *head += text;
  data->clear();
  for (const auto& [name, t] : by_name) data->push_back(t->data);
  return Status::Ok();
}

std::vector<SafeTensorRef> RefsOf(const SafetensorsFile& file) {
  std::vector<SafeTensorRef> refs;
  refs.reserve(file.tensors.size());
  for (const SafeTensor& t : file.tensors) refs.push_back({t.name, t.dtype, t.shape, t.data});
  return refs;
}

}  // namespace

Result<std::string> SerializeSafetensors(const SafetensorsFile& file) {
  std::string head;
  std::vector<std::string_view> data;
  DETRAIN_RETURN_IF_ERROR(SafetensorsParts(file.metadata, RefsOf(file), &head, &data));
  size_t size = head.size();
  for (std::string_view d : data) size += d.size();
  std::string out;
  out.reserve(size);
  out += head;
  for (std::string_view d : data) out += d;
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
  if (n > kMaxSafetensorsHeaderBytes) {
    return Error("header length " + std::to_string(n) + " exceeds the limit of " +
                 std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  }
  std::string_view data = bytes.substr(8 + n);
  SafetensorsFile out;
  std::vector<Entry> entries;
  HeaderReader reader(data.size());
  DETRAIN_RETURN_IF_ERROR(reader.Read(bytes.substr(8, n), &out, &entries));
  DETRAIN_RETURN_IF_ERROR(CheckLayout(entries, data.size()));
  // HeaderReader sorted the entries by name.
  out.tensors.reserve(entries.size());
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

std::map<std::string_view, const SafeTensor*> TensorsByName(const SafetensorsFile& file) {
  std::map<std::string_view, const SafeTensor*> out;
  for (const SafeTensor& t : file.tensors) out[t.name] = &t;
  return out;
}

Status WriteSafetensorsFile(const std::string& path, const SafetensorsFile& file) {
  return WriteSafetensorsFile(path, file.metadata, RefsOf(file));
}

Status WriteSafetensorsFile(const std::string& path,
                            const std::map<std::string, std::string>& metadata,
                            const std::vector<SafeTensorRef>& tensors) {
  std::string head;
  std::vector<std::string_view> parts;
  DETRAIN_RETURN_IF_ERROR(SafetensorsParts(metadata, tensors, &head, &parts));
  parts.insert(parts.begin(), head);
  return WriteFileAtomic(path, parts);
}

}  // namespace detrain
