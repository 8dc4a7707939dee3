// `detrain inspect BUNDLE [--json] [--html REPORT.html]`: what a bundle holds
// (evidence/report/inspect.h) and the audit report (evidence/report/report.h).
#include <iostream>
#include <memory>
#include <optional>

#include "base/file_io.h"
#include "cli/command.h"
#include "evidence/bundle/archive.h"
#include "evidence/report/inspect.h"
#include "evidence/report/report.h"

namespace detrain::cli {
namespace {

struct InspectFlags {
  std::string bundle;
  bool json = false;
  std::string html;
  bool verify = false;
  std::string data_dir;
  std::vector<std::string> trusted_keys;
};

int RunInspect(const InspectFlags& f) {
  report::ReportOptions ro;
  for (const std::string& path : f.trusted_keys) {
    Result<sign::PublicKey> key = sign::LoadPublicKey(path);
    if (!key.ok()) return ReportError("inspect", key.status());
    ro.trusted_keys.push_back(std::move(*key));
  }
  Result<bundle::BundleSource> source = bundle::BundleSource::Open(f.bundle);
  if (!source.ok()) return ReportError("inspect", source.status());
  ro.name = f.bundle;
  if (source->is_archive()) ro.archive_sha256 = source->archive_sha256();
  std::optional<verify::VerifyReport> verdict;
  if (f.verify) {
    verify::VerifyOptions vo;
    vo.bundle = source->dir();
    vo.data_dir = f.data_dir;
    vo.trusted_keys = ro.trusted_keys;
    vo.progress = [](const std::string& line) { std::cerr << line << "\n"; };
    verdict = verify::VerifyBundle(vo);
    if (verdict->outcome == verify::Outcome::kInputError) {
      return ReportError("inspect", InvalidArgument("--verify: " + verdict->message));
    }
    ro.verification = &*verdict;
  }
  Result<nlohmann::json> report = report::ReportJson(source->dir(), ro);
  if (!report.ok()) return ReportError("inspect", report.status());
  if (!f.html.empty()) {
    Status s = WriteFileAtomic(f.html, report::ReportHtml(*report));
    if (!s.ok()) return ReportError("inspect", s);
    std::cerr << "report: " << f.html << " ("
              << (*report)["verification"].value("headline", std::string()) << ")\n";
  }
  if (f.json) {
    std::cout << JsonOutput(*report);
  } else if (f.html.empty()) {
    std::cout << report::InspectText(*report, 64, 10);
  }
  return kExitOk;
}

}  // namespace

void RegisterInspectCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<InspectFlags>();
  CLI::App* cmd =
      app.add_subcommand("inspect", "Show what a bundle holds, or write its audit report (--html)");
  cmd->add_option("BUNDLE", f->bundle, "The bundle directory, or an archive made by pack")
      ->required();
  cmd->add_flag("--json", f->json,
                "Write the report's content as JSON to stdout (what --html shows, for tools)");
  cmd->add_option("--html", f->html,
                  "Write the audit report: one self-contained HTML file (no script, nothing "
                  "loaded from anywhere), the same bytes for the same bundle and options");
  cmd->add_flag("--verify", f->verify,
                "Verify the bundle first (as detrain verify does) and put the verdict in the "
                "report's banner");
  cmd->add_option("--data", f->data_dir, "With --verify: where the dataset files are");
  cmd->add_option("--trusted-key", f->trusted_keys,
                  "A public key (PEM) to check the signatures with; repeatable. The banner "
                  "then shows the newest signed verification summary");
  cmd->footer(
      "Without --verify or a signed verification summary checked with --trusted-key, the\n"
      "report says NOT VERIFIED: inspect reads and summarizes; it does not check.\n"
      "Exit codes: 0 ok (whatever the verdict shown), 2 not a bundle or a bad option.");
  cmd->callback([f, exit_code] { *exit_code = RunInspect(*f); });
}

}  // namespace detrain::cli
