// The CLI's command convention. `detrain` is thin: each subcommand lives in cmd_<name>.cc,
// registers itself on the CLI11 app, parses its flags into an options struct, and calls library
// code. When the subcommand runs it stores its exit code in *exit_code:
//   0  success, 1  verification failed (verify), 2  usage or input error, 3  internal error.
// Output for machines goes to stdout (one JSON object where a command promises JSON); messages for
// people go to stderr as "detrain <command>: <message>".
#ifndef DETRAIN_CLI_COMMAND_H_
#define DETRAIN_CLI_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string_view>

#include "base/status.h"

// Set by CMake for the detrain target (never hashed into a stage).
#ifndef DETRAIN_VERSION
#define DETRAIN_VERSION "0.0.0"
#endif
#ifndef DETRAIN_GIT_COMMIT
#define DETRAIN_GIT_COMMIT "unknown"
#endif

namespace detrain::cli {

constexpr int kExitOk = 0;
constexpr int kExitVerifyFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInternal = 3;

// Prints "detrain <command>: <status message>" to stderr and returns the exit code for it.
int ReportError(std::string_view command, const Status& status);

// One registration function per subcommand (see cmd_*.cc).
void RegisterDigestCommand(CLI::App& app, int* exit_code);
void RegisterCompileCommand(CLI::App& app, int* exit_code);
void RegisterEvalCommand(CLI::App& app, int* exit_code);
void RegisterMathCommand(CLI::App& app, int* exit_code);
void RegisterPrngCommand(CLI::App& app, int* exit_code);
void RegisterRunCommand(CLI::App& app, int* exit_code);
void RegisterVerifyCommand(CLI::App& app, int* exit_code);
void RegisterInspectCommand(CLI::App& app, int* exit_code);
void RegisterKeygenCommand(CLI::App& app, int* exit_code);
void RegisterPackCommands(CLI::App& app, int* exit_code);  // pack and unpack
void RegisterDiffCommand(CLI::App& app, int* exit_code);

}  // namespace detrain::cli

#endif  // DETRAIN_CLI_COMMAND_H_
