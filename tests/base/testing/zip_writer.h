// Test-only: a small ZIP writer for building .npz fixtures in tests, with switches for the
// variants numpy and other writers produce (STORED or DEFLATE members, ZIP64 extra fields in
// local and central headers, ZIP64 end records, data descriptors, an archive comment), and the
// offsets of every record so a test can corrupt one field. Layouts: PKWARE APPNOTE.TXT §4.3.
// Include as "base/testing/zip_writer.h". Deterministic: fixed timestamps.
#ifndef DETRAIN_TESTS_BASE_TESTING_ZIP_WRITER_H_
#define DETRAIN_TESTS_BASE_TESTING_ZIP_WRITER_H_

#include <zlib.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/npy.h"

namespace detrain::testing {

struct ZipMember {
  std::string name;
  std::string data;            // uncompressed
  bool deflate = false;        // method 8 (else 0, stored)
  bool zip64_local = true;     // a ZIP64 extra field in the local header, as numpy writes
  bool zip64_central = false;  // sizes and offset saturated, with a ZIP64 extra field
  bool descriptor = false;     // flag bit 3: zero CRC and sizes locally, a descriptor after
};

struct ZipOptions {
  bool zip64_end = false;  // ZIP64 end record and locator, the 32-bit fields saturated
  std::string comment;
};

// Where the writer put each record.
struct ZipLayout {
  std::vector<uint64_t> local;    // each member's local header
  std::vector<uint64_t> data;     // each member's data
  std::vector<uint64_t> central;  // each member's central directory header
  uint64_t end64 = 0;             // ZIP64 end record (zip64_end)
  uint64_t end = 0;               // end of central directory record
};

inline void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Overwrites `bytes` little-endian bytes at `at`.
inline void PatchLe(std::string* out, uint64_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) (*out)[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

inline std::string RawDeflate(std::string_view data) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

inline uint32_t Crc32(std::string_view data) {
  return static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
}

inline std::string WriteZip(const std::vector<ZipMember>& members, const ZipOptions& options = {},
                            ZipLayout* layout = nullptr) {
  ZipLayout l;
  std::string out;
  std::vector<std::string> stored;  // compressed data
  for (const ZipMember& m : members) {
    stored.push_back(m.deflate ? RawDeflate(m.data) : m.data);
    const std::string& d = stored.back();
    const uint32_t crc = m.descriptor ? 0 : Crc32(m.data);
    l.local.push_back(out.size());
    PutLe(&out, 0x04034b50, 4);
    PutLe(&out, m.zip64_local ? 45 : 20, 2);
    PutLe(&out, m.descriptor ? 8 : 0, 2);
    PutLe(&out, m.deflate ? 8 : 0, 2);
    PutLe(&out, 0, 2);     // time
    PutLe(&out, 0x21, 2);  // date: 1980-01-01
    PutLe(&out, crc, 4);
    PutLe(&out, m.descriptor ? 0 : d.size(), 4);
    PutLe(&out, m.descriptor ? 0 : m.data.size(), 4);
    PutLe(&out, m.name.size(), 2);
    PutLe(&out, m.zip64_local ? 20 : 0, 2);
    out += m.name;
    if (m.zip64_local) {
      PutLe(&out, 1, 2);
      PutLe(&out, 16, 2);
      PutLe(&out, m.descriptor ? 0 : m.data.size(), 8);
      PutLe(&out, m.descriptor ? 0 : d.size(), 8);
    }
    l.data.push_back(out.size());
    out += d;
    if (m.descriptor) {
      PutLe(&out, 0x08074b50, 4);
      PutLe(&out, Crc32(m.data), 4);
      PutLe(&out, d.size(), m.zip64_local ? 8 : 4);
      PutLe(&out, m.data.size(), m.zip64_local ? 8 : 4);
    }
  }
  const uint64_t cd_offset = out.size();
  for (size_t i = 0; i < members.size(); ++i) {
    const ZipMember& m = members[i];
    const bool z = m.zip64_central;
    l.central.push_back(out.size());
    PutLe(&out, 0x02014b50, 4);
    PutLe(&out, 0x031e, 2);  // made by: unix, 3.0
    PutLe(&out, z || m.zip64_local ? 45 : 20, 2);
    PutLe(&out, m.descriptor ? 8 : 0, 2);
    PutLe(&out, m.deflate ? 8 : 0, 2);
    PutLe(&out, 0, 2);
    PutLe(&out, 0x21, 2);
    PutLe(&out, Crc32(m.data), 4);
    PutLe(&out, z ? 0xffffffff : stored[i].size(), 4);
    PutLe(&out, z ? 0xffffffff : m.data.size(), 4);
    PutLe(&out, m.name.size(), 2);
    PutLe(&out, z ? 28 : 0, 2);
    PutLe(&out, 0, 2);            // comment
    PutLe(&out, 0, 2);            // disk
    PutLe(&out, 0, 2);            // internal attributes
    PutLe(&out, 0600u << 16, 4);  // external attributes
    PutLe(&out, z ? 0xffffffff : l.local[i], 4);
    out += m.name;
    if (z) {
      PutLe(&out, 1, 2);
      PutLe(&out, 24, 2);
      PutLe(&out, m.data.size(), 8);
      PutLe(&out, stored[i].size(), 8);
      PutLe(&out, l.local[i], 8);
    }
  }
  const uint64_t cd_size = out.size() - cd_offset, n = members.size();
  if (options.zip64_end) {
    l.end64 = out.size();
    PutLe(&out, 0x06064b50, 4);
    PutLe(&out, 44, 8);
    PutLe(&out, 45, 2);
    PutLe(&out, 45, 2);
    PutLe(&out, 0, 4);
    PutLe(&out, 0, 4);
    PutLe(&out, n, 8);
    PutLe(&out, n, 8);
    PutLe(&out, cd_size, 8);
    PutLe(&out, cd_offset, 8);
    PutLe(&out, 0x07064b50, 4);
    PutLe(&out, 0, 4);
    PutLe(&out, l.end64, 8);
    PutLe(&out, 1, 4);
  }
  const bool z = options.zip64_end;
  l.end = out.size();
  PutLe(&out, 0x06054b50, 4);
  PutLe(&out, 0, 2);
  PutLe(&out, 0, 2);
  PutLe(&out, z ? 0xffff : n, 2);
  PutLe(&out, z ? 0xffff : n, 2);
  PutLe(&out, z ? 0xffffffff : cd_size, 4);
  PutLe(&out, z ? 0xffffffff : cd_offset, 4);
  PutLe(&out, options.comment.size(), 2);
  out += options.comment;
  if (layout != nullptr) *layout = l;
  return out;
}

// An .npz archive as numpy.savez (stored) or numpy.savez_compressed (deflate) writes it.
inline std::string WriteNpz(const std::map<std::string, NpyArray>& arrays, bool compressed) {
  std::vector<ZipMember> members;
  for (const auto& [name, array] : arrays) {
    ZipMember m;
    m.name = name + ".npy";
    m.data = SerializeNpy(array);
    m.deflate = compressed;
    members.push_back(std::move(m));
  }
  return WriteZip(members);
}

}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_BASE_TESTING_ZIP_WRITER_H_
