// `detrain pack` / `unpack` (evidence/bundle/archive.h): the same bundle gives the same bytes, a
// packed golden bundle verifies, and hostile archives — `..`, absolute paths, links, devices,
// duplicates, lying sizes, truncation, bad checksums — are refused by name, leaving nothing.
#include "evidence/bundle/archive.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "attest/sha256.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "evidence/verify/verifier.h"
#include "temp_dir.h"

namespace detrain::bundle {
namespace {

using testutil::TempDir;

const std::string kGolden = std::string(DETRAIN_SOURCE_DIR) + "/audit-bundles/v1/tiny";

std::string Read(const std::string& path) {
  Result<std::string> r = ReadFile(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : "";
}

TEST(Archive, PackingTwiceGivesTheSameBytes) {
  TempDir dir;
  Result<PackResult> a = PackBundle(kGolden, dir.Sub("a.tar"));
  ASSERT_TRUE(a.ok()) << a.status().message();
  Result<PackResult> b = PackBundle(kGolden, dir.Sub("b.tar"));
  ASSERT_TRUE(b.ok()) << b.status().message();
  const std::string bytes = Read(dir.Sub("a.tar"));
  EXPECT_EQ(bytes, Read(dir.Sub("b.tar")));
  EXPECT_EQ(a->sha256, attest::Sha256Hex(bytes));
  EXPECT_EQ(a->bytes, bytes.size());
  EXPECT_EQ(bytes.size() % 10240, 0u);
  EXPECT_EQ(a->files, ListFiles(kGolden)->size());
  // The format's fixed metadata: the first header is the first path, mode 0644, owner 0,
  // mtime 0, a regular file, ustar.
  EXPECT_EQ(std::string(bytes.data()), ListFiles(kGolden)->front());
  EXPECT_EQ(std::string(bytes.data() + 100), "0000644");
  EXPECT_EQ(std::string(bytes.data() + 108), "0000000");
  EXPECT_EQ(std::string(bytes.data() + 136), "00000000000");
  EXPECT_EQ(bytes[156], '0');
  EXPECT_EQ(std::string(bytes.data() + 257), "ustar");
  // A copy of the bundle elsewhere, with other file times and modes, packs to the same bytes.
  std::filesystem::copy(kGolden, dir.Sub("copy"), std::filesystem::copy_options::recursive);
  ::chmod(dir.Sub("copy/manifest.json").c_str(), 0600);
  Result<PackResult> c = PackBundle(dir.Sub("copy"), dir.Sub("c.tar"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->sha256, a->sha256);
}

TEST(Archive, APackedGoldenBundleVerifiesAndUnpacksToTheSameFiles) {
  TempDir dir;
  ASSERT_TRUE(PackBundle(kGolden, dir.Sub("tiny.tar")).ok());
  EXPECT_TRUE(IsArchive(dir.Sub("tiny.tar")));
  EXPECT_FALSE(IsArchive(kGolden + "/manifest.json"));
  EXPECT_FALSE(IsArchive(kGolden));
  {
    Result<BundleSource> source = BundleSource::Open(dir.Sub("tiny.tar"));
    ASSERT_TRUE(source.ok()) << source.status().message();
    EXPECT_TRUE(source->is_archive());
    EXPECT_EQ(source->archive_sha256(), attest::Sha256Hex(Read(dir.Sub("tiny.tar"))));
    verify::VerifyOptions o;
    o.bundle = source->dir();
    o.data_dir = DETRAIN_SOURCE_DIR "/tests/evidence/testdata/tiny";
    verify::VerifyReport r = verify::VerifyBundle(o);
    EXPECT_EQ(r.outcome, verify::Outcome::kVerified) << r.message;
  }
  Result<uint64_t> files = UnpackBundle(dir.Sub("tiny.tar"), dir.Sub("out"));
  ASSERT_TRUE(files.ok()) << files.status().message();
  const std::vector<std::string> names = *ListFiles(kGolden);
  EXPECT_EQ(*files, names.size());
  EXPECT_EQ(*ListFiles(dir.Sub("out")), names);
  for (const std::string& n : names) {
    EXPECT_EQ(Read(dir.Sub("out/" + n)), Read(kGolden + "/" + n)) << n;
  }
  Status again = UnpackBundle(dir.Sub("tiny.tar"), dir.Sub("out")).status();
  EXPECT_NE(again.message().find("exists"), std::string::npos);
}

TEST(Archive, PackRefusesLinksAndItsOwnOutput) {
  TempDir dir;
  std::filesystem::copy(kGolden, dir.Sub("b"), std::filesystem::copy_options::recursive);
  Status inside = PackBundle(dir.Sub("b"), dir.Sub("b/b.tar")).status();
  EXPECT_NE(inside.message().find("inside the bundle"), std::string::npos) << inside.message();
  ASSERT_EQ(::symlink("/etc/passwd", dir.Sub("b/data/evil").c_str()), 0);
  Status link = PackBundle(dir.Sub("b"), dir.Sub("b.tar")).status();
  EXPECT_NE(link.message().find("symbolic link"), std::string::npos) << link.message();
  EXPECT_FALSE(PathExists(dir.Sub("b.tar")));
  ASSERT_TRUE(MakeDirs(dir.Sub("empty")).ok());
  Status empty = PackBundle(dir.Sub("empty"), dir.Sub("x.tar")).status();
  EXPECT_NE(empty.message().find("no manifest.json"), std::string::npos) << empty.message();
  EXPECT_FALSE(PackBundle(dir.Sub("absent"), dir.Sub("y.tar")).ok());
}

// A ustar header with the given fields and a correct checksum (unless `checksum` is given).
std::string Header(const std::string& name, char type, const std::string& size_field,
                   const std::string& prefix = "", const char* checksum = nullptr) {
  std::string h(512, '\0');
  std::memcpy(h.data(), name.data(), std::min<size_t>(name.size(), 100));
  std::memcpy(h.data() + 100, "0000644", 7);
  std::memcpy(h.data() + 108, "0000000", 7);
  std::memcpy(h.data() + 116, "0000000", 7);
  std::memcpy(h.data() + 124, size_field.data(), std::min<size_t>(size_field.size(), 12));
  std::memcpy(h.data() + 136, "00000000000", 11);
  h[156] = type;
  std::memcpy(h.data() + 257, "ustar", 6);
  std::memcpy(h.data() + 263, "00", 2);
  std::memcpy(h.data() + 345, prefix.data(), std::min<size_t>(prefix.size(), 155));
  std::memset(h.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  char b[8];
  std::snprintf(b, sizeof(b), "%06o", sum);
  std::memcpy(h.data() + 148, checksum != nullptr ? checksum : b, 6);
  h[154] = '\0';
  return h;
}

std::string File(const std::string& name, const std::string& data, char type = '0') {
  char size[12];
  std::snprintf(size, sizeof(size), "%011o", static_cast<unsigned>(data.size()));
  std::string out = Header(name, type, size) + data;
  out.resize((out.size() + 511) / 512 * 512, '\0');
  return out;
}

const std::string kEnd(1024, '\0');

TEST(Archive, HostileArchivesAreRefusedByNameLeavingNothing) {
  const std::string ok = File("manifest.json", "{}");
  const std::pair<std::string, const char*> cases[] = {
      {File("../evil", "x") + kEnd, "a '..' component"},
      {File("a/../../evil", "x") + kEnd, "a '..' component"},
      {File("/etc/evil", "x") + kEnd, "an absolute path"},
      {File("a/./b", "x") + kEnd, "a '.' component"},
      {File("a//b", "x") + kEnd, "an empty path component"},
      {File("a\\b", "x") + kEnd, "backslash"},
      {File("a\nb", "x") + kEnd, "control byte"},
      {File("\xff\xfe", "x") + kEnd, "not valid UTF-8"},
      {File("", "x") + kEnd, "an empty path"},
      {Header("link", '2', "00000000000") + kEnd, "a link"},
      {Header("hard", '1', "00000000000") + kEnd, "a link"},
      {Header("dev", '3', "00000000000") + kEnd, "entry type '3'"},
      {Header("fifo", '6', "00000000000") + kEnd, "entry type '6'"},
      {Header("pax", 'x', "00000000000") + kEnd, "entry type 'x'"},
      {ok + ok + kEnd, "a duplicate path"},
      {ok + File("b", "x").substr(0, 700), "truncated"},
      {ok + File("b", "x"), "no end-of-archive marker"},
      {ok + std::string(512, '\0') + File("b", "x") + kEnd, "followed by data"},
      // After the end marker only the zeros of its record (schemas/attestation.md §11): a hidden
      // entry, a second archive past the record, trailing garbage.
      {ok + kEnd + File("hidden", "x") + kEnd, "after the end-of-archive marker"},
      {ok + kEnd + std::string(10240, '\0') + ok + kEnd, "after the end-of-archive marker"},
      {ok + kEnd + "garbage", "after the end-of-archive marker"},
      {Header("big", '0', "77777777777") + kEnd, "past the end"},
      {Header("big", '0', "999") + kEnd, "not an octal number"},
      {Header("big", '0', "\x80\x00\x00\x00\x00\x00\x00\x01") + kEnd, "not an octal number"},
      {Header("sum", '0', "00000000000", "", "000000") + kEnd, "bad magic or checksum"},
      {std::string(512, 'A') + kEnd, "bad magic or checksum"},
      {ok.substr(0, 300), "truncated"},
      {File("a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q", "x") + kEnd, "deeper than 16"},
  };
  TempDir dir;
  int n = 0;
  for (const auto& [bytes, want] : cases) {
    const std::string archive = dir.Sub("case" + std::to_string(n) + ".tar");
    ASSERT_TRUE(WriteFileAtomic(archive, bytes).ok());
    const std::string out = dir.Sub("out" + std::to_string(n));
    Result<uint64_t> r = UnpackBundle(archive, out);
    ASSERT_FALSE(r.ok()) << "case " << n << " (" << want << ") was accepted";
    EXPECT_NE(r.status().message().find(want), std::string::npos)
        << "case " << n << ": " << r.status().message();
    EXPECT_FALSE(PathExists(out)) << "case " << n;
    ++n;
  }
  // Nothing but the archives is left: no temporary directory, no file escaped.
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().extension(), ".tar") << e.path();
  }
  EXPECT_FALSE(PathExists(std::filesystem::path(dir.path()).parent_path().string() + "/evil"));
  // Not archives at all: errors, never a hang.
  EXPECT_FALSE(UnpackBundle("/dev/zero", dir.Sub("z")).ok());
  EXPECT_FALSE(UnpackBundle(dir.path(), dir.Sub("z")).ok());
  EXPECT_FALSE(BundleSource::Open("/dev/zero").ok());
  EXPECT_FALSE(BundleSource::Open(dir.Sub("case0.tar")).ok());
  Status plain = BundleSource::Open(kGolden + "/manifest.json").status();
  EXPECT_NE(plain.message().find("neither a bundle directory nor a bundle archive"),
            std::string::npos);
}

TEST(Archive, LongPathsUseTheUstarPrefix) {
  TempDir dir;
  const std::string deep = "d" + std::string(90, 'x') + "/" + std::string(90, 'y') + "/file";
  ASSERT_TRUE(MakeDirs(dir.Sub("b/" + DirName(deep))).ok());
  ASSERT_TRUE(WriteFileAtomic(dir.Sub("b/" + deep), "deep").ok());
  ASSERT_TRUE(WriteFileAtomic(dir.Sub("b/manifest.json"), "{}").ok());
  ASSERT_TRUE(PackBundle(dir.Sub("b"), dir.Sub("b.tar")).ok());
  ASSERT_TRUE(UnpackBundle(dir.Sub("b.tar"), dir.Sub("out")).ok());
  EXPECT_EQ(Read(dir.Sub("out/" + deep)), "deep");
  // A path with no '/' where ustar could split it cannot be stored: refused, not truncated.
  ASSERT_TRUE(WriteFileAtomic(dir.Sub("b/" + std::string(120, 'z')), "z").ok());
  Status s = PackBundle(dir.Sub("b"), dir.Sub("c.tar")).status();
  EXPECT_NE(s.message().find("ustar cannot store"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace detrain::bundle
