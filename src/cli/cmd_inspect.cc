// `detrain inspect BUNDLE [--json]`: what a bundle holds (attest/verify/inspect.h).
#include <iostream>
#include <memory>

#include "attest/verify/inspect.h"
#include "cli/command.h"

namespace detrain::cli {
namespace {

struct InspectFlags {
  std::string bundle;
  bool json = false;
};

int RunInspect(const InspectFlags& f) {
  Result<nlohmann::json> s = verify::InspectBundle(f.bundle);
  if (!s.ok()) return ReportError("inspect", s.status());
  if (f.json) {
    std::cout << s->dump(2) << "\n";
  } else {
    std::cout << verify::InspectText(*s, 64, 10);
  }
  return kExitOk;
}

}  // namespace

void RegisterInspectCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<InspectFlags>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Show what a bundle holds: program, data, split, stages, lineage, loss curve");
  cmd->add_option("BUNDLE", f->bundle, "The bundle directory")->required();
  cmd->add_flag("--json", f->json, "Write the summary as JSON");
  cmd->footer(
      "inspect reads and summarizes; it does not check. Use `detrain verify` for that.\n"
      "Exit codes: 0 ok, 2 not a bundle.");
  cmd->callback([f, exit_code] { *exit_code = RunInspect(*f); });
}

}  // namespace detrain::cli
