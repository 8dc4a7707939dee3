// `detrain diff A B [--json] [--html REPORT.html]`: what differs between two bundles and where the
// runs first diverge (evidence/diff/diff.h, docs/diff.md).
#include <iostream>
#include <memory>

#include "base/file_io.h"
#include "cli/command.h"
#include "evidence/bundle/archive.h"
#include "evidence/diff/diff.h"

namespace detrain::cli {
namespace {

struct DiffFlags {
  std::string a, b;
  bool json = false;
  std::string html;
  std::vector<std::string> data_dirs;
  bool no_replay = false;
  int threads = 1;
  bool quiet = false;
};

// Every failure of diff is exit 2: scripts read 1 as "the runs differ" only.
int Failed(const Status& s) {
  (void)ReportError("diff", s);
  return kExitUsage;
}

int RunDiff(const DiffFlags& f) {
  Result<bundle::BundleSource> a = bundle::BundleSource::Open(f.a);
  if (!a.ok()) return Failed(a.status());
  Result<bundle::BundleSource> b = bundle::BundleSource::Open(f.b);
  if (!b.ok()) return Failed(b.status());
  diff::DiffOptions o;
  o.name_a = f.a;
  o.name_b = f.b;
  if (a->is_archive()) o.archive_sha256_a = a->archive_sha256();
  if (b->is_archive()) o.archive_sha256_b = b->archive_sha256();
  o.data_dirs = f.data_dirs;
  o.replay = !f.no_replay;
  o.executor.threads = f.threads;
  if (!f.quiet) o.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  Result<nlohmann::json> report = diff::DiffBundles(a->dir(), b->dir(), o);
  if (!report.ok()) return Failed(report.status());
  if (!f.html.empty()) {
    if (Status s = WriteFileAtomic(f.html, diff::DiffHtml(*report)); !s.ok()) {
      return Failed(s);
    }
    if (!f.quiet) std::cerr << "report: " << f.html << "\n";
  }
  if (f.json) {
    std::cout << JsonOutput(*report);
  } else {
    std::cout << diff::DiffText(*report);
  }
  return (*report)["identical"].get<bool>() ? kExitOk : kExitVerifyFailed;
}

}  // namespace

void RegisterDiffCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<DiffFlags>();
  CLI::App* cmd = app.add_subcommand(
      "diff", "Compare two bundles: what differs, and the first step where the runs diverge");
  cmd->add_option("A", f->a, "A bundle directory, or an archive made by pack")->required();
  cmd->add_option("B", f->b, "The bundle to compare it with")->required();
  cmd->add_flag("--json", f->json,
                "Write the comparison as one JSON object to stdout (docs/diff.md)");
  cmd->add_option("--html", f->html,
                  "Also write it as one self-contained HTML page (no script, nothing loaded)");
  cmd->add_option("--data", f->data_dirs,
                  "A directory to look for dataset files in (repeatable; each file's SHA-256 "
                  "decides which run it belongs to). Needed only to compare two versions of a "
                  "dataset's contents and to replay to the first differing element");
  cmd->add_flag("--no-replay", f->no_replay,
                "Never replay steps: the first differing element is then found only where "
                "checkpoints or the final weights hold that step's state");
  cmd->add_option("--threads", f->threads,
                  "Worker threads for a replay; results never depend on them")
      ->check(IntegerIn(1, 256));
  cmd->add_flag("-q,--quiet", f->quiet, "No progress output");
  cmd->footer(
      "Inputs and stages are compared from the bundles alone; the first differing tensor\n"
      "element comes from checkpoints, the final weights, or a replay from the nearest\n"
      "checkpoint (which needs the data: embedded, under --data, or where the program names it).\n"
      "The machine, thread and device counts, backend and detrain version are listed but\n"
      "change no bit of the training, so they never make two runs different.\n"
      "Exit codes: 0 identical, 1 different, 2 usage or input error.");
  cmd->callback([f, exit_code] { *exit_code = RunDiff(*f); });
}

}  // namespace detrain::cli
