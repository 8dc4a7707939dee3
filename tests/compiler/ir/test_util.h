// Small helpers shared by the IR, XLA importer and interpreter tests. Test-only.
#ifndef DETRAIN_TESTS_COMPILER_IR_TEST_UTIL_H_
#define DETRAIN_TESTS_COMPILER_IR_TEST_UTIL_H_

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace detrain::testing {

inline std::string ReadTextFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Files in `dir` whose names end with `suffix`, sorted by name.
inline std::vector<std::filesystem::path> FilesEndingWith(const std::filesystem::path& dir,
                                                          const std::string& suffix) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

inline std::filesystem::path IrTestdata() {
  return std::filesystem::path(DETRAIN_SOURCE_DIR) / "tests/compiler/ir/testdata";
}
inline std::filesystem::path XlaImportTestdata() {
  return std::filesystem::path(DETRAIN_SOURCE_DIR) / "tests/compiler/xla_import/testdata";
}
inline std::filesystem::path JaxTestdata() {
  return std::filesystem::path(DETRAIN_SOURCE_DIR) / "tests/compiler/interp/testdata/jax";
}

}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_COMPILER_IR_TEST_UTIL_H_
