// See zip.h. Record layouts: APPNOTE.TXT §4.3; section numbers below cite it.
#include "base/zip.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>

#include "base/budget.h"

namespace detrain {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;         // 4.3.7 local file header
constexpr uint32_t kCentralSig = 0x02014b50;       // 4.3.12 central directory file header
constexpr uint32_t kEndSig = 0x06054b50;           // 4.3.16 end of central directory record
constexpr uint32_t kEnd64Sig = 0x06064b50;         // 4.3.14 zip64 end of central directory record
constexpr uint32_t kEnd64LocatorSig = 0x07064b50;  // 4.3.15 zip64 end of central dir. locator
constexpr uint64_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22, kEnd64Size = 56,
                   kLocatorSize = 20;
constexpr uint64_t kMaxComment = 0xffff;
constexpr uint16_t kZip64ExtraId = 0x0001;  // 4.5.3
// 4.4.4: bit 0 encrypted, bit 3 sizes and CRC in a data descriptor, bit 6 strong encryption,
// bit 13 central directory encryption (local header values masked).
constexpr uint16_t kFlagEncrypted = 1 << 0, kFlagDescriptor = 1 << 3, kFlagStrong = 1 << 6,
                   kFlagMasked = 1 << 13;
constexpr uint16_t kStored = 0, kDeflate = 8;
// Deflate's largest expansion: a match of 258 bytes costs at least 2 bits (a one-bit length code
// and a one-bit distance code), so n bytes of deflate data inflate to at most 1032 n bytes. A
// member that declares more is lying about its size; this is the only ratio limit (memory is
// bounded by the budget, not by a ratio: legitimate arrays of zeros come close to 1032:1).
constexpr uint64_t kMaxDeflateRatio = 1032;

// Little-endian reads at offsets the caller has checked to be in bounds.
uint64_t Le(std::string_view b, uint64_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(b[at + i]);
  return v;
}
uint16_t U16(std::string_view b, uint64_t at) { return static_cast<uint16_t>(Le(b, at, 2)); }
uint32_t U32(std::string_view b, uint64_t at) { return static_cast<uint32_t>(Le(b, at, 4)); }
uint64_t U64(std::string_view b, uint64_t at) { return Le(b, at, 8); }

// Whether [offset, offset + size) lies within [0, limit), without overflow.
bool Within(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

std::string Hex32(uint32_t v) {
  char s[11];
  std::snprintf(s, sizeof s, "0x%08x", v);
  return s;
}

std::string Member(const std::string& name) { return "member '" + PrintableName(name) + "'"; }

struct EndRecord {
  uint64_t entries = 0;
  uint64_t cd_size = 0;
  uint64_t cd_offset = 0;
  uint64_t end = 0;  // where the end records start: the central directory ends here
};

// The last end-of-central-directory record whose comment reaches exactly to the end of the file.
Result<uint64_t> FindEnd(std::string_view b) {
  if (b.size() < kEndSize) {
    return DataLoss("not a zip archive: " + std::to_string(b.size()) +
                    " bytes are too few for an end-of-central-directory record");
  }
  const uint64_t last = b.size() - kEndSize;
  const uint64_t first = last > kMaxComment ? last - kMaxComment : 0;
  for (uint64_t p = last + 1; p-- > first;) {
    if (U32(b, p) == kEndSig && U16(b, p + 20) == last - p) return p;
  }
  return DataLoss("not a zip archive: no end-of-central-directory record");
}

Status MultiDisk() { return InvalidArgument("split (multi-disk) zip archives are not supported"); }

// 4.3.14/4.3.15: the ZIP64 end record the locator at `loc` points to; it must end at `loc`.
Status ReadEnd64(std::string_view b, uint64_t loc, EndRecord* r) {
  const uint64_t at = U64(b, loc + 8);
  if (U32(b, loc + 4) != 0 || U32(b, loc + 16) > 1) return MultiDisk();
  if (!Within(at, kEnd64Size, loc) || U32(b, at) != kEnd64Sig) {
    return DataLoss("no ZIP64 end-of-central-directory record at offset " + std::to_string(at));
  }
  if (U64(b, at + 4) != loc - at - 12) {
    return DataLoss("the ZIP64 end-of-central-directory record's size (" +
                    std::to_string(U64(b, at + 4)) + ") does not reach its locator");
  }
  if (U32(b, at + 16) != 0 || U32(b, at + 20) != 0 || U64(b, at + 24) != U64(b, at + 32)) {
    return MultiDisk();
  }
  r->entries = U64(b, at + 32);
  r->cd_size = U64(b, at + 40);
  r->cd_offset = U64(b, at + 48);
  r->end = at;
  return Status::Ok();
}

Result<EndRecord> ReadEnd(std::string_view b) {
  DETRAIN_ASSIGN_OR_RETURN(const uint64_t p, FindEnd(b));
  const uint16_t disk = U16(b, p + 4), cd_disk = U16(b, p + 6), on_disk = U16(b, p + 8);
  EndRecord r{U16(b, p + 10), U32(b, p + 12), U32(b, p + 16), p};
  const bool saturated = disk == 0xffff || cd_disk == 0xffff || on_disk == 0xffff ||
                         r.entries == 0xffff || r.cd_size == 0xffffffff ||
                         r.cd_offset == 0xffffffff;
  if (p >= kLocatorSize && U32(b, p - kLocatorSize) == kEnd64LocatorSig) {
    DETRAIN_RETURN_IF_ERROR(ReadEnd64(b, p - kLocatorSize, &r));
  } else if (saturated) {
    return DataLoss("the end-of-central-directory record needs a ZIP64 end record; none found");
  } else if (disk != 0 || cd_disk != 0 || on_disk != r.entries) {
    return MultiDisk();
  }
  if (!Within(r.cd_offset, r.cd_size, r.end) || r.cd_offset + r.cd_size != r.end) {
    return DataLoss("the central directory (" + std::to_string(r.cd_size) + " bytes at offset " +
                    std::to_string(r.cd_offset) + ") does not end where its end record starts (" +
                    std::to_string(r.end) + ")");
  }
  if (r.entries > r.cd_size / kCentralSize) {
    return DataLoss("the end record counts " + std::to_string(r.entries) +
                    " members; a central directory of " + std::to_string(r.cd_size) +
                    " bytes holds at most " + std::to_string(r.cd_size / kCentralSize));
  }
  return r;
}

// The data of the ZIP64 extended-information extra field (4.5.3) in a header's extra bytes.
Result<std::optional<std::string_view>> Zip64Extra(std::string_view extra,
                                                   const std::string& where) {
  std::optional<std::string_view> found;
  uint64_t pos = 0;
  while (extra.size() - pos >= 4) {  // fewer than 4 bytes left: padding, as zipfile allows
    const uint16_t id = U16(extra, pos), len = U16(extra, pos + 2);
    if (len > extra.size() - pos - 4)
      return DataLoss(where + ": an extra field overruns its header");
    if (id == kZip64ExtraId) {
      if (found.has_value()) return DataLoss(where + ": two ZIP64 extra fields");
      found = extra.substr(pos + 4, len);
    }
    pos += 4 + uint64_t{len};
  }
  return found;
}

struct Central {
  ZipEntry entry;
  uint16_t flags = 0;
  uint64_t local_offset = 0;
};

Status CheckFlagsAndMethod(uint16_t flags, uint16_t method, const std::string& where) {
  if (flags & (kFlagEncrypted | kFlagStrong | kFlagMasked)) {
    return InvalidArgument(where + " is encrypted; encrypted archives are not supported");
  }
  if (method != kStored && method != kDeflate) {
    return InvalidArgument(where + ": compression method " + std::to_string(method) +
                           " is not supported (0 stored or 8 deflate)");
  }
  return Status::Ok();
}

// The central directory header at `*at` (4.3.12); advances `*at` past it.
Result<Central> ReadCentral(std::string_view b, uint64_t index, uint64_t cd_end, uint64_t* at) {
  const std::string entry = "central directory entry " + std::to_string(index);
  if (!Within(*at, kCentralSize, cd_end)) return DataLoss(entry + " is truncated");
  const uint64_t p = *at;
  if (U32(b, p) != kCentralSig) return DataLoss(entry + " has a bad signature");
  const uint64_t name_len = U16(b, p + 28), extra_len = U16(b, p + 30),
                 comment_len = U16(b, p + 32);
  if (!Within(p + kCentralSize, name_len + extra_len + comment_len, cd_end)) {
    return DataLoss(entry + " is truncated");
  }
  Central c;
  ZipEntry& e = c.entry;
  e.name = std::string(b.substr(p + kCentralSize, name_len));
  if (e.name.empty()) return DataLoss(entry + " has an empty name");
  const std::string where = Member(e.name);
  c.flags = U16(b, p + 8);
  e.method = U16(b, p + 10);
  DETRAIN_RETURN_IF_ERROR(CheckFlagsAndMethod(c.flags, e.method, where));
  e.crc32 = U32(b, p + 16);
  e.compressed_size = U32(b, p + 20);
  e.size = U32(b, p + 24);
  uint64_t disk = U16(b, p + 34);
  c.local_offset = U32(b, p + 42);
  // 4.5.3: the ZIP64 field holds, in this order, exactly the values saturated above.
  DETRAIN_ASSIGN_OR_RETURN(std::optional<std::string_view> z64,
                           Zip64Extra(b.substr(p + kCentralSize + name_len, extra_len), where));
  struct Field {
    uint64_t* value;
    uint64_t saturated;
    uint64_t width;
  };
  uint64_t z = 0;
  for (const Field& f : {Field{&e.size, 0xffffffff, 8}, Field{&e.compressed_size, 0xffffffff, 8},
                         Field{&c.local_offset, 0xffffffff, 8}, Field{&disk, 0xffff, 4}}) {
    if (*f.value != f.saturated) continue;
    if (!z64.has_value() || z64->size() - z < f.width) {
      return DataLoss(where + ": its ZIP64 extra field lacks the sizes or offset it must hold");
    }
    *f.value = Le(*z64, z, static_cast<int>(f.width));
    z += f.width;
  }
  if (disk != 0) return MultiDisk();
  if (e.method == kStored && e.compressed_size != e.size) {
    return DataLoss(where + ": stored with " + std::to_string(e.compressed_size) +
                    " bytes of data but a size of " + std::to_string(e.size));
  }
  *at = p + kCentralSize + name_len + extra_len + comment_len;
  return c;
}

// The local header (4.3.7) of `c` must agree with its central header; sets data_offset.
Status CheckLocal(std::string_view b, uint64_t data_end, Central* c) {
  ZipEntry& e = c->entry;
  const std::string where = Member(e.name);
  const uint64_t p = c->local_offset;
  if (!Within(p, kLocalSize, data_end) || U32(b, p) != kLocalSig) {
    return DataLoss(where + ": no local header at offset " + std::to_string(p));
  }
  const uint16_t flags = U16(b, p + 6), method = U16(b, p + 8);
  DETRAIN_RETURN_IF_ERROR(CheckFlagsAndMethod(flags, method, where));
  if (method != e.method) {
    return DataLoss(where + ": the local header says compression method " + std::to_string(method) +
                    ", the central directory " + std::to_string(e.method));
  }
  const uint64_t name_len = U16(b, p + 26), extra_len = U16(b, p + 28);
  if (!Within(p + kLocalSize, name_len + extra_len, data_end)) {
    return DataLoss(where + ": its local header is truncated");
  }
  std::string_view local_name = b.substr(p + kLocalSize, name_len);
  if (local_name != e.name) {
    return DataLoss(where + ": its local header names it '" + PrintableName(local_name) + "'");
  }
  e.data_offset = p + kLocalSize + name_len + extra_len;
  if (!Within(e.data_offset, e.compressed_size, data_end)) {
    return DataLoss(where + ": its " + std::to_string(e.compressed_size) +
                    " bytes of data at offset " + std::to_string(e.data_offset) +
                    " run past the start of the central directory (" + std::to_string(data_end) +
                    ")");
  }
  if ((flags | c->flags) & kFlagDescriptor) return Status::Ok();  // CRC and sizes follow the data
  DETRAIN_ASSIGN_OR_RETURN(
      std::optional<std::string_view> z64,
      Zip64Extra(b.substr(p + kLocalSize + name_len, extra_len), where + " (local header)"));
  uint64_t size = U32(b, p + 22), compressed = U32(b, p + 18);
  if (size == 0xffffffff || compressed == 0xffffffff) {  // 4.5.3: then both are in the field
    if (!z64.has_value() || z64->size() < 16) {
      return DataLoss(where + ": its local header lacks the ZIP64 sizes it must hold");
    }
    if (size == 0xffffffff) size = U64(*z64, 0);
    if (compressed == 0xffffffff) compressed = U64(*z64, 8);
  }
  if (U32(b, p + 14) != e.crc32 || size != e.size || compressed != e.compressed_size) {
    return DataLoss(where + ": the local header (CRC-32 " + Hex32(U32(b, p + 14)) + ", " +
                    std::to_string(compressed) + " -> " + std::to_string(size) +
                    " bytes) disagrees with the central directory (CRC-32 " + Hex32(e.crc32) +
                    ", " + std::to_string(e.compressed_size) + " -> " + std::to_string(e.size) +
                    " bytes)");
  }
  return Status::Ok();
}

// A deflated member cannot inflate to more than kMaxDeflateRatio times its data.
Status CheckRatio(const ZipEntry& e) {
  if (e.method != kDeflate || e.size / kMaxDeflateRatio <= e.compressed_size) return Status::Ok();
  return DataLoss(Member(e.name) + ": declares " + std::to_string(e.size) +
                  " bytes uncompressed, more than its " + std::to_string(e.compressed_size) +
                  " bytes of deflate data can hold (deflate expands at most " +
                  std::to_string(kMaxDeflateRatio) + ":1)");
}

// Frees a zlib stream on every path.
struct Inflater {
  z_stream z{};
  bool live = false;
  ~Inflater() {
    if (live) inflateEnd(&z);
  }
};

// Raw deflate (RFC 1951) to exactly `size` bytes, which the caller has checked against the
// memory budget. Inflation runs into a bounded chunk and is appended to a buffer reserved at
// `size` (its pages are touched only as bytes arrive, so a declared size that the data does not
// back costs nothing); each call may produce at most the bytes still missing, and once all are
// out a one-byte chunk catches the first byte beyond them.
Result<std::string> Inflate(std::string_view in, uint64_t size, const std::string& where) {
  constexpr uint64_t kInChunk = uint64_t{1} << 30;  // zlib counts in 32-bit units
  constexpr uint64_t kOutChunk = uint64_t{1} << 16;
  Inflater f;
  if (inflateInit2(&f.z, -MAX_WBITS) != Z_OK) return Internal("zlib: inflateInit2 failed");
  f.live = true;
  std::string out;
  out.reserve(size);
  std::string chunk(std::min(size + 1, kOutChunk), '\0');
  uint64_t in_pos = 0;
  for (;;) {
    if (f.z.avail_in == 0 && in_pos < in.size()) {
      const uint64_t n = std::min(in.size() - in_pos, kInChunk);
      f.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_pos));
      f.z.avail_in = static_cast<uInt>(n);
      in_pos += n;
    }
    const uint64_t missing = size - out.size();
    const uInt room = static_cast<uInt>(missing == 0 ? 1 : std::min(missing, kOutChunk));
    f.z.next_out = reinterpret_cast<Bytef*>(chunk.data());
    f.z.avail_out = room;
    const int rc = inflate(&f.z, Z_NO_FLUSH);
    const uInt produced = room - f.z.avail_out;
    if (produced > missing) {
      return DataLoss(where + ": inflates to more than its declared " + std::to_string(size) +
                      " bytes");
    }
    out.append(chunk.data(), produced);
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR) {  // no progress with output space left: the input is used up
      return DataLoss(where + ": its deflate data ends early (after " + std::to_string(out.size()) +
                      " of " + std::to_string(size) + " bytes)");
    }
    if (rc != Z_OK) {
      return DataLoss(where + ": corrupt deflate data (zlib: " +
                      (f.z.msg != nullptr ? f.z.msg : std::to_string(rc)) + ")");
    }
  }
  if (out.size() != size) {
    return DataLoss(where + ": inflates to " + std::to_string(out.size()) +
                    " bytes, not its declared " + std::to_string(size));
  }
  if (f.z.avail_in != 0 || in_pos != in.size()) {
    return DataLoss(where + ": " + std::to_string(f.z.avail_in + (in.size() - in_pos)) +
                    " bytes follow the end of its deflate data");
  }
  return out;
}

// "extracting member 'x.npy' (deflated, 2.0 MiB in the archive)": what a budget message names.
std::string Extracting(const ZipEntry& e) {
  return "extracting " + Member(e.name) + " (" + (e.method == kStored ? "stored" : "deflated") +
         ", " + FormatBytes(static_cast<int64_t>(e.compressed_size)) + " in the archive)";
}

}  // namespace

std::string PrintableName(std::string_view name) {
  std::string out;
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

Result<std::vector<ZipEntry>> ReadZipDirectory(std::string_view bytes, uint64_t max_total_size) {
  DETRAIN_ASSIGN_OR_RETURN(const EndRecord end, ReadEnd(bytes));
  std::vector<Central> members;
  members.reserve(end.entries);  // bounded by the central directory's size (ReadEnd)
  std::set<std::string_view> names;
  uint64_t at = end.cd_offset, total = 0;
  for (uint64_t i = 0; i < end.entries; ++i) {
    DETRAIN_ASSIGN_OR_RETURN(Central c, ReadCentral(bytes, i, end.end, &at));
    if (c.entry.size > max_total_size - total) {
      return InvalidArgument("the members' sizes add up to more than the limit of " +
                             std::to_string(max_total_size) + " bytes (at " + Member(c.entry.name) +
                             ")");
    }
    total += c.entry.size;
    DETRAIN_RETURN_IF_ERROR(CheckLocal(bytes, end.cd_offset, &c));
    DETRAIN_RETURN_IF_ERROR(CheckRatio(c.entry));
    members.push_back(std::move(c));
  }
  if (at != end.end) {
    return DataLoss("the central directory has " + std::to_string(end.end - at) +
                    " bytes after its last member");
  }
  for (const Central& c : members) {
    if (!names.insert(c.entry.name).second) {
      return DataLoss("two members are named '" + PrintableName(c.entry.name) + "'");
    }
  }
  // No member's header and data may overlap another's (overlapping members are a zip bomb).
  std::vector<const Central*> by_offset;
  for (const Central& c : members) by_offset.push_back(&c);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Central* a, const Central* b) { return a->local_offset < b->local_offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const ZipEntry& prev = by_offset[i - 1]->entry;
    if (prev.data_offset + prev.compressed_size > by_offset[i]->local_offset) {
      return DataLoss(Member(prev.name) + " overlaps " + Member(by_offset[i]->entry.name));
    }
  }
  std::vector<ZipEntry> out;
  out.reserve(members.size());
  for (Central& c : members) out.push_back(std::move(c.entry));
  return out;
}

Status CheckExtractionBudget(const std::vector<const ZipEntry*>& members) {
  // Declared sizes come from 64-bit fields: each is clamped to int64 and the sum saturates.
  constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
  uint64_t total = 0;
  std::string names;
  for (size_t i = 0; i < members.size(); ++i) {
    const ZipEntry& e = *members[i];
    const int64_t size = static_cast<int64_t>(std::min(e.size, kMax));
    DETRAIN_RETURN_IF_ERROR(CheckTensorBytes(size, Extracting(e)));
    total = std::min(kMax, total + static_cast<uint64_t>(size));
    if (i < 3) names += (i == 0 ? "'" : "', '") + PrintableName(e.name);
  }
  if (members.size() < 2) return Status::Ok();
  names += "'";
  if (members.size() > 3) names += " and " + std::to_string(members.size() - 3) + " more";
  return CheckTotalBytes(
      static_cast<int64_t>(total),
      "extracting the " + std::to_string(members.size()) + " members " + names + " together");
}

Result<std::string> ExtractZipEntry(std::string_view bytes, const ZipEntry& e) {
  const std::string where = Member(e.name);
  DETRAIN_RETURN_IF_ERROR(CheckExtractionBudget({&e}));
  if (!Within(e.data_offset, e.compressed_size, bytes.size())) {
    return DataLoss(where + ": its data lies outside the archive");
  }
  std::string_view data = bytes.substr(e.data_offset, e.compressed_size);
  std::string out;
  if (e.method == kStored) {
    if (e.size != e.compressed_size) return DataLoss(where + ": stored sizes differ");
    out = std::string(data);
  } else if (e.method == kDeflate) {
    DETRAIN_ASSIGN_OR_RETURN(out, Inflate(data, e.size, where));
  } else {
    return CheckFlagsAndMethod(0, e.method, where);
  }
  const uint32_t crc = static_cast<uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(out.data()), static_cast<z_size_t>(out.size())));
  if (crc != e.crc32) {
    return DataLoss(where + ": its bytes have CRC-32 " + Hex32(crc) + "; the archive says " +
                    Hex32(e.crc32));
  }
  return out;
}

}  // namespace detrain
