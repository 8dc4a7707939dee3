// Shared by the driver tests: the source tree, the examples' data, reading a file.
#ifndef DETRAIN_TESTS_DRIVER_TEST_UTIL_H_
#define DETRAIN_TESTS_DRIVER_TEST_UTIL_H_

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace detrain::driver::test {

inline const std::string kRoot = DETRAIN_SOURCE_DIR;

inline std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Whether the data an example reads is installed (tools/setup.sh installs it).
inline bool HaveData(const std::string& example) {
  if (example == "digits") return std::filesystem::exists(kRoot + "/examples/digits/digits.csv");
  if (example == "charlm") return std::filesystem::exists("/usr/share/common-licenses/GPL-3");
  return std::filesystem::exists(
      "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv");
}

inline std::string ExamplePath(const std::string& example) {
  return kRoot + "/examples/" + example + "/train.dt";
}

}  // namespace detrain::driver::test

#endif  // DETRAIN_TESTS_DRIVER_TEST_UTIL_H_
