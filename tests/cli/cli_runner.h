// Runs the built `detrain` binary as a user would and captures its exit code, stdout and stderr.
// DETRAIN_BINARY is defined by tests/CMakeLists.txt. Test-only helper.
#ifndef DETRAIN_TESTS_CLI_CLI_RUNNER_H_
#define DETRAIN_TESTS_CLI_CLI_RUNNER_H_

#include <string>
#include <vector>

namespace detrain::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs DETRAIN_BINARY with `args` (no shell involved), optionally feeding `stdin_data`.
CliResult RunDetrain(const std::vector<std::string>& args, const std::string& stdin_data = "");

// A fresh empty directory under the system temp dir, removed by the caller if it likes.
std::string MakeTempDir();

}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_CLI_CLI_RUNNER_H_
