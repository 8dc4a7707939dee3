// The hardened zip reader: the variants numpy and other writers produce, then hostile input —
// truncation at every length, lying sizes and offsets, mismatched headers, CRC errors,
// unsupported features — each with its specific rejection, and a byte-flip fuzz loop.
#include "base/zip.h"

#include <gtest/gtest.h>

#include <random>

#include "base/testing/zip_writer.h"

namespace detrain {
namespace {

using testing::PatchLe;
using testing::WriteZip;
using testing::ZipLayout;
using testing::ZipMember;
using testing::ZipOptions;

// Compressible and not: a run, then bytes from a fixed generator.
std::string Payload(size_t n, uint32_t seed) {
  std::string s(n / 2, 'a');
  std::mt19937 g(seed);
  while (s.size() < n) s.push_back(static_cast<char>(g() & 0xff));
  return s;
}

std::vector<ZipMember> TwoMembers() {
  ZipMember a{"x.npy", Payload(300, 1)};
  ZipMember b{"y.npy", Payload(200, 2)};
  b.deflate = true;
  return {a, b};
}

// Every member's bytes, or the first error.
Result<std::vector<std::pair<std::string, std::string>>> ReadAll(std::string_view bytes) {
  DETRAIN_ASSIGN_OR_RETURN(std::vector<ZipEntry> entries, ReadZipDirectory(bytes));
  std::vector<std::pair<std::string, std::string>> out;
  for (const ZipEntry& e : entries) {
    DETRAIN_ASSIGN_OR_RETURN(std::string data, ExtractZipEntry(bytes, e));
    out.emplace_back(e.name, std::move(data));
  }
  return out;
}

void ExpectReads(const std::string& zip, const std::vector<ZipMember>& members) {
  auto r = ReadAll(zip);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    EXPECT_EQ((*r)[i].first, members[i].name);
    EXPECT_EQ((*r)[i].second, members[i].data) << members[i].name;
  }
}

std::string ErrorOf(std::string_view bytes) {
  auto r = ReadAll(bytes);
  return r.ok() ? "ok" : r.status().message();
}

TEST(ZipTest, StoredAndDeflatedMembers) {
  std::vector<ZipMember> m = TwoMembers();
  ExpectReads(WriteZip(m), m);
  Result<std::vector<ZipEntry>> d = ReadZipDirectory(WriteZip(m));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)[0].method, 0);
  EXPECT_EQ((*d)[1].method, 8);
  EXPECT_LT((*d)[1].compressed_size, (*d)[1].size);
}

TEST(ZipTest, Zip64VariantsDescriptorsAndComments) {
  for (bool local : {false, true}) {
    for (bool central : {false, true}) {
      for (bool descriptor : {false, true}) {
        for (bool end64 : {false, true}) {
          std::vector<ZipMember> m = TwoMembers();
          for (ZipMember& e : m) {
            e.zip64_local = local;
            e.zip64_central = central;
            e.descriptor = descriptor;
          }
          SCOPED_TRACE(::testing::Message() << local << central << descriptor << end64);
          ExpectReads(WriteZip(m, {end64, ""}), m);
          ExpectReads(WriteZip(m, {end64, "a comment with PK\x05\x06 inside"}), m);
        }
      }
    }
  }
}

TEST(ZipTest, EmptyArchiveAndEmptyMember) {
  ExpectReads(WriteZip({}), {});
  std::vector<ZipMember> m = {{"e.npy", ""}, {"f.npy", ""}};
  m[1].deflate = true;
  ExpectReads(WriteZip(m), m);
}

TEST(ZipTest, EveryTruncationIsRejected) {
  for (const ZipOptions& o : {ZipOptions{}, ZipOptions{true, ""}, ZipOptions{false, "note"}}) {
    const std::string zip = WriteZip(TwoMembers(), o);
    for (size_t n = 0; n < zip.size(); ++n) {
      auto r = ReadAll(std::string_view(zip).substr(0, n));
      ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes";
      EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << n << ": " << r.status().message();
    }
  }
  EXPECT_EQ(ErrorOf("PK"),
            "not a zip archive: 2 bytes are too few for an end-of-central-directory record");
  EXPECT_EQ(ErrorOf(std::string(100, 'z')),
            "not a zip archive: no end-of-central-directory record");
  // The end record's comment must reach exactly to the end of the file: no trailing bytes.
  EXPECT_EQ(ErrorOf(WriteZip(TwoMembers()) + "x"),
            "not a zip archive: no end-of-central-directory record");
}

// One corruption of the archive TwoMembers() writes, and the error it must cause.
struct Corruption {
  const char* what;
  void (*apply)(std::string* zip, const ZipLayout& l);
  std::string message;
  StatusCode code = StatusCode::kDataLoss;
};

TEST(ZipTest, LyingFieldsAreRejected) {
  const Corruption cases[] = {
      {"end record: central directory offset",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.end + 16, l.central[0] - 1, 4); },
       "the central directory (102 bytes at offset 520) does not end where its end record starts "
       "(623)"},
      {"end record: central directory size",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.end + 12, 1000, 4); },
       "the central directory (1000 bytes at offset 521) does not end where its end record starts "
       "(623)"},
      {"end record: member count",
       [](std::string* z, const ZipLayout& l) {
         PatchLe(z, l.end + 8, 9, 2);
         PatchLe(z, l.end + 10, 9, 2);
       },
       "the end record counts 9 members; a central directory of 102 bytes holds at most 2"},
      {"end record: one member fewer",
       [](std::string* z, const ZipLayout& l) {
         PatchLe(z, l.end + 8, 1, 2);
         PatchLe(z, l.end + 10, 1, 2);
       },
       "the central directory has 51 bytes after its last member"},
      {"end record: disk number",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.end + 4, 1, 2); },
       "split (multi-disk) zip archives are not supported", StatusCode::kInvalidArgument},
      {"end record: ZIP64 marker without a ZIP64 record",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.end + 16, 0xffffffff, 4); },
       "the end-of-central-directory record needs a ZIP64 end record; none found"},
      {"central: signature", [](std::string* z, const ZipLayout& l) { (*z)[l.central[1]] = 'Q'; },
       "central directory entry 1 has a bad signature"},
      {"central: name length past the directory",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.central[1] + 28, 500, 2); },
       "central directory entry 1 is truncated"},
      {"central: compressed size past the data",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.central[1] + 20, 5000, 4); },
       "member 'y.npy': its 5000 bytes of data at offset 410 run past the start of the central "
       "directory (521)"},
      {"central: stored sizes differ",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.central[0] + 24, 301, 4); },
       "member 'x.npy': stored with 300 bytes of data but a size of 301"},
      {"central: local header offset",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.central[1] + 42, 7, 4); },
       "member 'y.npy': no local header at offset 7"},
      {"central: local header offset past the data",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.central[1] + 42, 0xfffffff0, 4); },
       "member 'y.npy': no local header at offset 4294967280"},
      {"central: encrypted",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.central[0] + 8, 1, 2); },
       "member 'x.npy' is encrypted; encrypted archives are not supported",
       StatusCode::kInvalidArgument},
      {"central: method",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.central[0] + 10, 12, 2); },
       "member 'x.npy': compression method 12 is not supported (0 stored or 8 deflate)",
       StatusCode::kInvalidArgument},
      {"central: disk",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.central[0] + 34, 2, 2); },
       "split (multi-disk) zip archives are not supported", StatusCode::kInvalidArgument},
      {"central: saturated size without a ZIP64 field",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.central[0] + 24, 0xffffffff, 4); },
       "member 'x.npy': its ZIP64 extra field lacks the sizes or offset it must hold"},
      {"central: extra field overruns",
       [](std::string* z, const ZipLayout& l) {
         // Take 4 bytes of y.npy's name as an extra field claiming 9 bytes.
         PatchLe(z, l.central[1] + 28, 1, 2);
         PatchLe(z, l.central[1] + 30, 4, 2);
         PatchLe(z, l.central[1] + 46 + 1 + 2, 9, 2);
       },
       "member 'y': an extra field overruns its header"},
      {"central: empty name",
       [](std::string* z, const ZipLayout& l) {
         PatchLe(z, l.central[1] + 28, 0, 2);
         PatchLe(z, l.central[1] + 32, 5, 2);  // the name becomes the comment
       },
       "central directory entry 1 has an empty name"},
      {"central: duplicate name",
       [](std::string* z, const ZipLayout& l) {
         (*z)[l.central[1] + 46] = 'x';
         (*z)[l.local[1] + 30] = 'x';
       },
       "two members are named 'x.npy'"},
      {"local: signature", [](std::string* z, const ZipLayout& l) { (*z)[l.local[0] + 1] = 'Q'; },
       "member 'x.npy': no local header at offset 0"},
      {"local: name", [](std::string* z, const ZipLayout& l) { (*z)[l.local[1] + 30] = 'z'; },
       "member 'y.npy': its local header names it 'z.npy'"},
      {"local: method",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.local[1] + 8, 0, 2); },
       "member 'y.npy': the local header says compression method 0, the central directory 8"},
      {"local: encrypted",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.local[1] + 6, 0x41, 2); },
       "member 'y.npy' is encrypted; encrypted archives are not supported",
       StatusCode::kInvalidArgument},
      {"local: CRC", [](std::string* z, const ZipLayout& l) { (*z)[l.local[0] + 14] ^= 1; },
       "member 'x.npy': the local header (CRC-32 0x"},
      {"local: size", [](std::string* z, const ZipLayout& l) { PatchLe(z, l.local[1] + 22, 1, 4); },
       "member 'y.npy': the local header (CRC-32 0x"},
      {"local: extra length past the data",
       [](std::string* z, const ZipLayout& l) { PatchLe(z, l.local[1] + 28, 0xffff, 2); },
       "member 'y.npy': its local header is truncated"},
      {"local: saturated size without a ZIP64 field",
       [](std::string* z, const ZipLayout& l) {
         PatchLe(z, l.local[0] + 22, 0xffffffff, 4);
         PatchLe(z, l.local[0] + 28, 0, 2);
       },
       "member 'x.npy': its local header lacks the ZIP64 sizes it must hold"},
      {"data: CRC (both headers agree)",
       [](std::string* z, const ZipLayout& l) {
         (*z)[l.local[0] + 14] ^= 1;
         (*z)[l.central[0] + 16] ^= 1;
       },
       "member 'x.npy': its bytes have CRC-32 0x"},
      {"data: stored byte flipped",
       [](std::string* z, const ZipLayout& l) { (*z)[l.data[0] + 299] ^= 0x20; },
       "member 'x.npy': its bytes have CRC-32 0x"},
      {"data: deflate stream corrupt",
       [](std::string* z, const ZipLayout& l) { (*z)[l.data[1]] = '\xff'; },
       "member 'y.npy': corrupt deflate data (zlib: "},
      {"data: declared size too small",
       [](std::string* z, const ZipLayout& l) {
         PatchLe(z, l.local[1] + 22, 199, 4);
         PatchLe(z, l.local[1] + 30 + 5 + 4, 199, 8);
         PatchLe(z, l.central[1] + 24, 199, 4);
       },
       "member 'y.npy': inflates to more than its declared 199 bytes"},
      {"data: declared size too large",
       [](std::string* z, const ZipLayout& l) {
         PatchLe(z, l.local[1] + 22, 10000, 4);
         PatchLe(z, l.local[1] + 30 + 5 + 4, 10000, 8);
         PatchLe(z, l.central[1] + 24, 10000, 4);
       },
       "member 'y.npy': inflates to 200 bytes, not its declared 10000"},
      {"data: declared size beyond what deflate can expand to",
       [](std::string* z, const ZipLayout& l) {
         PatchLe(z, l.local[1] + 22, 100000000, 4);
         PatchLe(z, l.local[1] + 30 + 5 + 4, 100000000, 8);
         PatchLe(z, l.central[1] + 24, 100000000, 4);
       },
       "member 'y.npy': declares 100000000 bytes uncompressed, more than its "},
      {"data: deflate stream cut short",
       [](std::string* z, const ZipLayout& l) {
         const uint64_t size = l.central[0] - l.data[1] - 10;
         PatchLe(z, l.local[1] + 18, size, 4);
         PatchLe(z, l.local[1] + 30 + 5 + 12, size, 8);
         PatchLe(z, l.central[1] + 20, size, 4);
       },
       "member 'y.npy': its deflate data ends early"},
      {"overlap: stored member claims the next member's header",
       [](std::string* z, const ZipLayout& l) {
         for (uint64_t at :
              {l.local[0] + 18, l.local[0] + 22, l.central[0] + 20, l.central[0] + 24}) {
           PatchLe(z, at, 310, 4);
         }
         PatchLe(z, l.local[0] + 30 + 5 + 4, 310, 8);
         PatchLe(z, l.local[0] + 30 + 5 + 12, 310, 8);
       },
       "member 'x.npy' overlaps member 'y.npy'"},
  };
  for (const Corruption& c : cases) {
    ZipLayout l;
    std::string zip = WriteZip(TwoMembers(), {}, &l);
    c.apply(&zip, l);
    auto r = ReadAll(zip);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.status().code(), c.code) << c.what << ": " << r.status().message();
    EXPECT_EQ(r.status().message().substr(0, c.message.size()), c.message) << c.what;
  }
}

TEST(ZipTest, Zip64RecordsAreChecked) {
  ZipLayout l;
  const std::string good = WriteZip(TwoMembers(), {true, ""}, &l);
  std::string z = good;
  z[l.end64] = 'Q';
  EXPECT_EQ(ErrorOf(z),
            "no ZIP64 end-of-central-directory record at offset " + std::to_string(l.end64));
  z = good;
  PatchLe(&z, l.end64 + 4, 45, 8);
  EXPECT_EQ(ErrorOf(z),
            "the ZIP64 end-of-central-directory record's size (45) does not reach its locator");
  z = good;
  PatchLe(&z, l.end64 + 56 + 8, 1u << 30, 8);  // the locator's record offset
  EXPECT_EQ(ErrorOf(z), "no ZIP64 end-of-central-directory record at offset 1073741824");
  z = good;
  PatchLe(&z, l.end64 + 56 + 16, 3, 4);  // total disks
  EXPECT_EQ(ErrorOf(z), "split (multi-disk) zip archives are not supported");
  z = good;
  PatchLe(&z, l.end64 + 48, 1, 8);  // central directory offset
  EXPECT_EQ(ErrorOf(z).substr(0, 40), "the central directory (102 bytes at offs");
  // A central ZIP64 field too short for the values its saturated header fields need.
  std::vector<ZipMember> m = TwoMembers();
  m[0].zip64_central = true;
  z = WriteZip(m, {}, &l);
  const uint64_t extra = l.central[0] + 46 + 5;
  PatchLe(&z, extra + 2, 16, 2);  // 24 -> 16: the offset's 8 bytes become empty fields
  EXPECT_EQ(ErrorOf(z),
            "member 'x.npy': its ZIP64 extra field lacks the sizes or offset it must hold");
  // Two ZIP64 fields in one header.
  z = WriteZip(m, {}, &l);
  PatchLe(&z, extra + 2, 8, 2);
  PatchLe(&z, extra + 12, 1, 2);
  PatchLe(&z, extra + 14, 8, 2);
  PatchLe(&z, l.central[0] + 30, 24, 2);  // extra length 28 -> 24...
  PatchLe(&z, l.central[0] + 32, 4, 2);   // ...and its last 4 bytes become the comment
  EXPECT_EQ(ErrorOf(z), "member 'x.npy': two ZIP64 extra fields");
}

TEST(ZipTest, NamesInMessagesArePrintable) {
  EXPECT_EQ(PrintableName("a\nb\xff.npy"), "a\\x0ab\\xff.npy");
  ZipLayout l;
  std::string zip = WriteZip({{"a\x1b[2J", "data"}}, {}, &l);
  zip[l.data[0]] ^= 1;
  EXPECT_EQ(ErrorOf(zip).substr(0, 35), "member 'a\\x1b[2J': its bytes have C");
}

TEST(ZipTest, TotalSizeIsCapped) {
  const std::string zip = WriteZip(TwoMembers());
  EXPECT_TRUE(ReadZipDirectory(zip, 500).ok());
  Result<std::vector<ZipEntry>> r = ReadZipDirectory(zip, 499);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "the members' sizes add up to more than the limit of 499 bytes (at member 'y.npy')");
}

// Every single byte inverted: never a crash, and whatever still reads is exactly the original
// (CRC-32 catches every burst of up to 32 bits; names are checked against the local headers).
TEST(ZipTest, EveryByteFlipIsCaughtOrHarmless) {
  for (const ZipOptions& o : {ZipOptions{}, ZipOptions{true, ""}}) {
    std::vector<ZipMember> m = TwoMembers();
    m[0].zip64_central = o.zip64_end;
    const std::string zip = WriteZip(m, o);
    for (size_t i = 0; i < zip.size(); ++i) {
      std::string z = zip;
      z[i] = static_cast<char>(~z[i]);
      auto r = ReadAll(z);
      if (!r.ok()) continue;
      ASSERT_EQ(r->size(), m.size()) << "flip at " << i;
      for (size_t k = 0; k < m.size(); ++k) {
        EXPECT_EQ((*r)[k].first, m[k].name) << "flip at " << i;
        EXPECT_EQ((*r)[k].second, m[k].data) << "flip at " << i;
      }
    }
  }
}

// Random multi-byte damage (fixed seed): the reader returns, ok or not, and never crashes or
// allocates beyond the declared sizes.
TEST(ZipTest, RandomDamageNeverCrashes) {
  std::mt19937 g(12);
  std::vector<ZipMember> m = TwoMembers();
  m.push_back({"z.npy", Payload(1000, 3)});
  m.back().deflate = true;
  m.back().descriptor = true;
  const std::string zip = WriteZip(m, {true, ""});
  int ok = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string z = zip;
    const int flips = 1 + static_cast<int>(g() % 6);
    for (int f = 0; f < flips; ++f) {
      const size_t at = g() % z.size();
      switch (g() % 3) {
        case 0:
          z[at] = static_cast<char>(g());
          break;
        case 1:
          z[at] = static_cast<char>(z[at] ^ (1 << (g() % 8)));
          break;
        default:
          z[at] = static_cast<char>(0xff);
          break;
      }
    }
    if (g() % 8 == 0) z.resize(g() % z.size());
    ok += ReadAll(z).ok();
  }
  EXPECT_LT(ok, 20000);
}

}  // namespace
}  // namespace detrain
