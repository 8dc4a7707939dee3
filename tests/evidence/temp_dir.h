// A fresh temporary directory for a test, removed with everything in it when the test ends.
#ifndef DETRAIN_TESTS_ATTEST_TEMP_DIR_H_
#define DETRAIN_TESTS_ATTEST_TEMP_DIR_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace detrain::testutil {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "detrain_test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace detrain::testutil

#endif  // DETRAIN_TESTS_ATTEST_TEMP_DIR_H_
