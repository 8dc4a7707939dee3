// The `detrain` command: parses the command line with CLI11 and dispatches to one subcommand.
// Usage errors (unknown subcommand or flag, missing argument) print usage and exit 2.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include "base/budget.h"
#include "cli/command.h"
#include "compiler/plan/schema.h"
#include "runtime/mpi/mpi_cluster.h"

namespace detrain::cli {

int ReportError(std::string_view command, const Status& status) {
  std::cerr << "detrain " << command << ": " << status.message() << "\n";
  return ToInt(ExitCodeOf(status));
}

CLI::Validator IntegerIn(int64_t min, int64_t max) {
  const std::string range =
      "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        int64_t v = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max) {
          return "'" + text + "': expected " + range;
        }
        return "";
      },
      range);
}

CLI::Validator RealIn(double min, double max) {
  char b[96];
  std::snprintf(b, sizeof(b), "a finite number in [%g, %g]", min, max);
  const std::string range = b;
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = text.empty() ? 0 : std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE ||
            !std::isfinite(v) || !(v >= min && v <= max)) {
          return "'" + text + "': expected " + range;
        }
        return "";
      },
      range);
}

void AddPlanFormatOption(CLI::App* cmd, uint32_t* format) {
  cmd->add_option("--plan-format", *format,
                  "Stage 4's plan format, 2 to 4 (default 4: the training state and partial "
                  "updates such as a scan's stacked outputs are written in place); 3 and 2 give "
                  "the plans and step hashes of runs made before formats 4 and 3. It is hashed, "
                  "so step hashes differ; the trained values never do")
      ->check(IntegerIn(plan::kOldestPlanFormatVersion, plan::kPlanFormatVersion));
}

CLI::Validator DeviceCount() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text == "1" || text == "2" || text == "4" || text == "8") return "";
        return "'" + text + "': expected 1, 2, 4 or 8";
      },
      "1, 2, 4 or 8");
}

std::string JsonOutput(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

int ReportProgramError(std::string_view command, std::string_view program, const Status& status) {
  const std::string& m = status.message();
  const bool located = m.size() > program.size() && m.compare(0, program.size(), program) == 0 &&
                       m[program.size()] == ':';
  if (!located || status.code() == StatusCode::kInternal) return ReportError(command, status);
  std::cerr << m << "\n";
  return kExitUsage;
}

namespace {

std::string VersionText() {
  std::string v = "detrain " DETRAIN_VERSION "\n";
  v += "commit: " DETRAIN_GIT_COMMIT "\n";
#if defined(__clang__)
  v += "compiler: clang " __clang_version__ "\n";
#elif defined(__GNUC__)
  v += "compiler: g++ " __VERSION__ "\n";
#endif
#ifdef DETRAIN_CUDA_VERSION
  v += "cuda toolkit: " DETRAIN_CUDA_VERSION "\n";
#else
  v += "cuda toolkit: none (built without CUDA)\n";
#endif
  return v;
}

bool HasSubcommand(CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == name) return true;
  }
  return false;
}

// `--max-memory SIZE` on every command that allocates tensors (base/budget.h). It decides only
// whether work is attempted, never a value, so it is not hashed.
void AddMaxMemoryOption(CLI::App* cmd) {
  MemoryBudget fallback = DefaultMemoryBudget();
  cmd->add_option_function<std::string>(
      "--max-memory",
      [](const std::string& text) {
        Result<int64_t> bytes = ParseByteSize(text);
        if (!bytes.ok()) throw CLI::ValidationError("--max-memory", bytes.status().message());
        SetMemoryBudget({*bytes, *bytes});
      },
      "Largest size one tensor, and all of a program's buffers, may take (K/M/G/T suffix; "
      "default 3/4 of physical memory, here " +
          FormatBytes(fallback.max_total_bytes) + "); never changes a bit");
}

}  // namespace
}  // namespace detrain::cli

int main(int argc, char** argv) {
  using namespace detrain::cli;
  // A write past the file-size limit (ulimit -f) fails with EFBIG, which the writer reports
  // with the file's name, instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"detrain: deterministic ML training with audit bundles that verify bit for bit.",
               "detrain"};
  app.require_subcommand(1);
  app.set_version_flag("--version", VersionText(),
                       "Print version, commit, compiler and CUDA toolkit");
  app.footer(
      "Exit codes: 0 ok, 1 verification failed, 2 usage or input error, 3 internal error.\n"
      "Run `detrain COMMAND --help` for the options of one command.");
  int exit_code = kExitOk;
  RegisterRunCommand(app, &exit_code);
  RegisterVerifyCommand(app, &exit_code);
  RegisterInspectCommand(app, &exit_code);
  RegisterDiffCommand(app, &exit_code);
  RegisterPackCommands(app, &exit_code);
  RegisterKeygenCommand(app, &exit_code);
  RegisterDigestCommand(app, &exit_code);
  RegisterCompileCommand(app, &exit_code);
  RegisterEvalCommand(app, &exit_code);
  RegisterMathCommand(app, &exit_code);
  RegisterPrngCommand(app, &exit_code);
  for (CLI::App* sub : app.get_subcommands({})) {
    const std::string& name = sub->get_name();
    if (name == "run" || name == "verify" || name == "eval" || name == "compile") {
      AddMaxMemoryOption(sub);
    }
  }
  app.failure_message(CLI::FailureMessage::help);  // usage with every error
  if (argc > 1 && argv[1][0] != '-' && !HasSubcommand(app, argv[1])) {
    std::cerr << "detrain: unknown command '" << argv[1] << "'\n\n" << app.help();
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what();
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and usage to stderr
    return kExitUsage;
  } catch (const std::bad_alloc&) {
    // Sizes are checked against the memory budget before allocating; this is the machine
    // refusing memory the budget allowed (other processes, overcommit limits).
    std::cerr << "detrain: out of memory: the operating system refused an allocation within the "
                 "memory budget; free memory or lower --max-memory\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "detrain: internal error: uncaught exception: " << e.what() << "\n";
    return kExitInternal;
  }
  detrain::runtime::mpi::Leave();  // a rank of a multi-process run: MPI ends with the command
  return exit_code;
}
