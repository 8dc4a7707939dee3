// `detrain` top level and `detrain digest`, run as a user runs them: the built binary, real files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"

namespace detrain::testing {
namespace {

namespace fs = std::filesystem;

std::string Shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

class DigestCliTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& rel, const std::string& data) {
    fs::create_directories(fs::path(dir_ + "/" + rel).parent_path());
    std::ofstream(dir_ + "/" + rel, std::ios::binary) << data;
    return dir_ + "/" + rel;
  }
  std::string dir_;
};

TEST(TopLevelCliTest, HelpListsCommands) {
  CliResult r = RunDetrain({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("digest"), std::string::npos);
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
}

TEST(TopLevelCliTest, VersionNamesCommitCompilerAndCuda) {
  CliResult r = RunDetrain({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("detrain 0."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("commit: "), std::string::npos);
  EXPECT_NE(r.out.find("compiler: "), std::string::npos);
  EXPECT_NE(r.out.find("cuda toolkit: "), std::string::npos);
}

TEST(TopLevelCliTest, UnknownCommandIsUsageError) {
  CliResult r = RunDetrain({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Usage:"), std::string::npos);
}

TEST(TopLevelCliTest, NoCommandAndUnknownFlagsAreUsageErrors) {
  EXPECT_EQ(RunDetrain({}).exit_code, 2);
  CliResult r = RunDetrain({"--frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  r = RunDetrain({"digest", "--frobnicate", "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--frobnicate"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Usage:"), std::string::npos);
}

TEST_F(DigestCliTest, FileSha256MatchesSha256sum) {
  std::string big(3 * 1048576 + 11, 'q');
  for (const std::string& data : {std::string(""), std::string("abc"), big}) {
    std::string path = Write("f.bin", data);
    CliResult r = RunDetrain({"digest", path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string expected = Shell("sha256sum '" + path + "'").substr(0, 64);
    ASSERT_EQ(expected.size(), 64u);
    EXPECT_NE(r.out.find("  sha256    " + expected + "\n"), std::string::npos) << r.out;
  }
}

TEST_F(DigestCliTest, DirectoryDigestMatchesShellPipeline) {
  Write("d/a.txt", "alpha\n");
  Write("d/sub/b.txt", "beta");
  Write("d/C", "gamma");
  std::string expected = Shell("cd '" + dir_ +
                               "/d' && find . -type f | cut -c3- | LC_ALL=C sort | "
                               "xargs -r sha256sum | sha256sum")
                             .substr(0, 64);
  CliResult r = RunDetrain({"digest", dir_ + "/d"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  dirhash1  " + expected + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  files     3 (15 bytes)"), std::string::npos) << r.out;
}

TEST_F(DigestCliTest, JsonOutputAndThreadIndependence) {
  std::string file = Write("w.bin", std::string(5 * 1048576 + 3, 'w'));
  Write("d/x", "x");
  CliResult one = RunDetrain({"digest", "--json", "--threads", "1", file, dir_ + "/d"});
  CliResult two = RunDetrain({"digest", "--json", "--threads", "2", file, dir_ + "/d"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, two.out);
  nlohmann::json j = nlohmann::json::parse(one.out);
  ASSERT_EQ(j["paths"].size(), 2u);
  EXPECT_EQ(j["paths"][0]["kind"], "file");
  EXPECT_EQ(j["paths"][0]["size"], 5 * 1048576 + 3);
  EXPECT_EQ(j["paths"][0]["merkle_leaves"], 6);
  EXPECT_EQ(j["paths"][1]["kind"], "directory");
  EXPECT_EQ(j["paths"][1]["files"], 1);
}

TEST_F(DigestCliTest, OmsPrintsModelSigningRoot) {
  // model_signing 1.1.1 on a directory holding only a.txt = "hello\n" (tools/oms_root.py):
  // one resource, so the root is SHA-256 of that file's 32-byte digest.
  Write("m/a.txt", "hello\n");
  Write("m/.gitignore", "ignored by default\n");
  CliResult r = RunDetrain({"digest", "--oms", dir_ + "/m"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "sha256:ecb65bb98f9d905b70458986c39fcbad7715e5f2fcc3b1f07767d7c83e2438cc\n");
}

TEST_F(DigestCliTest, MissingPathIsNamedAndNothingIsPrinted) {
  std::string good = Write("ok.txt", "ok");
  CliResult r = RunDetrain({"digest", good, dir_ + "/missing.csv"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "detrain digest: " + dir_ + "/missing.csv: no such file or directory\n");
}

TEST_F(DigestCliTest, SymlinkedPathsAreRejected) {
  std::string target = Write("t.txt", "t");
  ASSERT_EQ(symlink(target.c_str(), (dir_ + "/link").c_str()), 0);
  CliResult r = RunDetrain({"digest", dir_ + "/link"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir_ + "/link: is a symbolic link"), std::string::npos) << r.err;
  Write("d/f", "f");
  ASSERT_EQ(symlink(target.c_str(), (dir_ + "/d/inner").c_str()), 0);
  r = RunDetrain({"digest", dir_ + "/d"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir_ + "/d/inner: is a symbolic link"), std::string::npos) << r.err;
}

TEST_F(DigestCliTest, PathThroughAFileIsAnError) {
  std::string f = Write("plain", "p");
  CliResult r = RunDetrain({"digest", f + "/child"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "detrain digest: " + f + "/child: Not a directory\n");
}

TEST_F(DigestCliTest, UnreadableFileIsAnError) {
  if (geteuid() == 0) GTEST_SKIP() << "root can read any file";
  std::string path = Write("secret", "s");
  fs::permissions(path, fs::perms::none);
  CliResult r = RunDetrain({"digest", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path), std::string::npos);
}

TEST_F(DigestCliTest, BadThreadCountAndNoPath) {
  std::string f = Write("f", "f");
  EXPECT_EQ(RunDetrain({"digest", "--threads", "0", f}).exit_code, 2);
  EXPECT_EQ(RunDetrain({"digest", "--threads", "many", f}).exit_code, 2);
  CliResult r = RunDetrain({"digest"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("PATH"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace detrain::testing
