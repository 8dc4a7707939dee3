// Directory digests: known answers from independent implementations (Python for dirhash1, the
// `model_signing` 1.1.1 package via tools/oms_root.py for the OMS root), independence of file
// creation order and thread count, and rejection of symlinks and special files.
#include "attest/dir_digest.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace detrain::attest {
namespace {

namespace fs = std::filesystem;

class DirDigestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/detrain_dir_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& rel, const std::string& data) {
    fs::create_directories(fs::path(root_ + "/" + rel).parent_path());
    std::ofstream(root_ + "/" + rel, std::ios::binary) << data;
  }

  // The tree used for the known answers (same bytes as generated for tools/oms_root.py).
  void WriteReferenceTree(bool reversed) {
    std::string bin;
    for (int i = 0; i < 256; ++i) bin += static_cast<char>(i);
    std::vector<std::pair<std::string, std::string>> files = {
        {"a.txt", "hello\n"},   {"sub/b.bin", bin},   {"sub/dir2/c", ""}, {".gitignore", "x\n"},
        {".git/config", "cfg"}, {"z space.txt", "z"}, {"B.txt", "B"}};
    if (reversed) std::reverse(files.begin(), files.end());
    for (const auto& [path, data] : files) Write(path, data);
  }

  std::string root_;
};

TEST_F(DirDigestTest, KnownAnswers) {
  WriteReferenceTree(false);
  ThreadPool pool(2);
  Result<DirectoryDigest> d = DigestDirectory(root_, pool);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->files.size(), 7u);
  EXPECT_EQ(d->files[0].path, ".git/config");  // bytewise order: '.' < 'B' < 'a' < 's' < 'z'
  EXPECT_EQ(d->files[2].path, "B.txt");
  EXPECT_EQ(d->files[6].path, "z space.txt");
  EXPECT_EQ(d->total_bytes, 269u);
  EXPECT_EQ(Sha256::ToHex(d->dirhash1),
            "7c68f4e98819d94ef84916efcd963ff849e0ef4a2f495409172d92c50bf852f0");
  // model_signing 1.1.1: hashing.Config().use_file_serialization().hash(dir), root over
  // resource_descriptors(); .git and .gitignore are ignored by default.
  EXPECT_EQ(Sha256::ToHex(d->oms_root),
            "534871cb50088272d9c2b23ffd3d42905537b175009bc4f25bc08d3a83d096c9");
  EXPECT_EQ(d->oms_file_count, 5u);
}

TEST_F(DirDigestTest, IndependentOfCreationOrderAndThreads) {
  WriteReferenceTree(true);
  for (size_t threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    Result<DirectoryDigest> d = DigestDirectory(root_, pool);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(Sha256::ToHex(d->dirhash1),
              "7c68f4e98819d94ef84916efcd963ff849e0ef4a2f495409172d92c50bf852f0");
  }
}

TEST_F(DirDigestTest, ContentChangeChangesDigest) {
  WriteReferenceTree(false);
  ThreadPool pool(1);
  Digest256 before = DigestDirectory(root_, pool)->dirhash1;
  Write("sub/dir2/c", "now non-empty");
  EXPECT_NE(DigestDirectory(root_, pool)->dirhash1, before);
}

TEST_F(DirDigestTest, SymlinksAreRejectedNamingThePath) {
  Write("a.txt", "a");
  ASSERT_EQ(symlink("a.txt", (root_ + "/link").c_str()), 0);
  ThreadPool pool(1);
  Result<DirectoryDigest> d = DigestDirectory(root_, pool);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find(root_ + "/link: is a symbolic link"), std::string::npos)
      << d.status().message();
}

TEST_F(DirDigestTest, FifosAreRejected) {
  ASSERT_EQ(mkfifo((root_ + "/pipe").c_str(), 0600), 0);
  ThreadPool pool(1);
  Result<DirectoryDigest> d = DigestDirectory(root_, pool);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("not a regular file"), std::string::npos);
}

TEST_F(DirDigestTest, NewlineInNameIsRejected) {
  Write("bad\nname", "x");
  ThreadPool pool(1);
  EXPECT_FALSE(DigestDirectory(root_, pool).ok());
}

TEST_F(DirDigestTest, EmptyDirectory) {
  ThreadPool pool(1);
  Result<DirectoryDigest> d = DigestDirectory(root_, pool);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->files.size(), 0u);
  EXPECT_EQ(Sha256::ToHex(d->dirhash1), Sha256Hex(""));
}

}  // namespace
}  // namespace detrain::attest
