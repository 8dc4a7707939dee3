// The CLI's command convention. `detrain` is thin: each subcommand lives in cmd_<name>.cc,
// registers itself on the CLI11 app, parses its flags into an options struct, and calls library
// code. When the subcommand runs it stores its exit code (base/exit_code.h) in *exit_code.
// Output for machines goes to stdout (one JSON object where a command promises JSON); messages for
// people go to stderr as "detrain <command>: <message>".
#ifndef DETRAIN_CLI_COMMAND_H_
#define DETRAIN_CLI_COMMAND_H_

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/exit_code.h"
#include "base/status.h"

// Set by CMake for the detrain target (never hashed into a stage).
#ifndef DETRAIN_VERSION
#define DETRAIN_VERSION "0.0.0"
#endif
#ifndef DETRAIN_GIT_COMMIT
#define DETRAIN_GIT_COMMIT "unknown"
#endif

namespace detrain::cli {

constexpr int kExitOk = ToInt(ExitCode::kOk);
constexpr int kExitVerifyFailed = ToInt(ExitCode::kFailed);
constexpr int kExitUsage = ToInt(ExitCode::kUsage);
constexpr int kExitInternal = ToInt(ExitCode::kInternal);
constexpr int kExitInterrupted = ToInt(ExitCode::kInterrupted);

// Prints "detrain <command>: <status message>" to stderr and returns the exit code for it.
int ReportError(std::string_view command, const Status& status);

// An error of compiling or running `program`: a located error — "PROGRAM:LINE:COL: error: ...",
// which names the program first, as the frontend and the driver write every error in a program
// or its HLO — is printed as is, as a compiler prints one (exit 2); any other as ReportError.
int ReportProgramError(std::string_view command, std::string_view program, const Status& status);

// A command's JSON output, indented, with a newline. Text that is not valid UTF-8 — a path of
// bytes, as a file system allows — is written with U+FFFD in place of each invalid byte rather
// than ending the command in an exception (JSON strings are Unicode).
std::string JsonOutput(const nlohmann::json& j);

// The one checker of numeric options, every command's. An integer must be plain decimal (digits
// with an optional '-': no hex, exponent, fraction or trailing text, nothing past int64) within
// [min, max]; a real number finite (NaN and infinities refused: a range test alone lets NaN
// through, as every comparison with it is false) within [min, max]. The message names the
// option, the text and the range.
CLI::Validator IntegerIn(int64_t min, int64_t max);
CLI::Validator RealIn(double min, double max);
// --devices: 1, 2, 4 or 8 (whether they divide a program's shards is checked with the program).
CLI::Validator DeviceCount();
// --plan-format (run, compile): the help text, and an option that adds it to `cmd`.
void AddPlanFormatOption(CLI::App* cmd, uint32_t* format);

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
