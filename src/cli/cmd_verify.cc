// `detrain verify BUNDLE`: the verifier (attest/verify/verifier.h). Phase lines go to stderr;
// --json writes the report to stdout.
#include <charconv>
#include <iostream>
#include <memory>

#include "attest/verify/verifier.h"
#include "cli/command.h"
#include "runtime/mpi/mpi_cluster.h"

namespace detrain::cli {
namespace {

struct VerifyFlags {
  std::string bundle;
  std::string steps;
  int jobs = 1;
  bool no_replay = false;
  bool integrity_only = false;
  std::string data_dir;
  bool json = false;
  int threads = 1;
  int devices = 1;
  std::string isa;
  std::string backend = "cpu";
  double rank_timeout = 300;
};

// "A:B", "A:", ":B" -> [A, B).
Status ParseRange(const std::string& s, std::optional<int64_t>* from, std::optional<int64_t>* to) {
  size_t colon = s.find(':');
  if (colon == std::string::npos) return InvalidArgument("--steps '" + s + "': expected A:B");
  auto parse = [&](std::string_view t, std::optional<int64_t>* out) -> bool {
    if (t.empty()) return true;
    int64_t v = 0;
    auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (r.ec != std::errc() || r.ptr != t.data() + t.size() || v < 0) return false;
    *out = v;
    return true;
  };
  std::string_view all(s);
  if (!parse(all.substr(0, colon), from) || !parse(all.substr(colon + 1), to)) {
    return InvalidArgument("--steps '" + s + "': expected A:B with non-negative integers");
  }
  return Status::Ok();
}

int RunVerify(const VerifyFlags& f) {
  verify::VerifyOptions o;
  o.bundle = f.bundle;
  o.jobs = f.jobs;
  o.replay = !f.no_replay && !f.integrity_only;
  o.recompile = !f.integrity_only;
  o.data_dir = f.data_dir;
  o.executor.threads = f.threads;
  o.executor.devices = f.devices;
  Result<runtime::Backend> backend = runtime::ParseBackend(f.backend);
  if (!backend.ok()) return ReportError("verify", backend.status());
  o.executor.backend = *backend;
  if (!f.isa.empty()) {
    std::optional<Isa> isa = IsaFromName(f.isa);
    if (!isa)
      return ReportError("verify",
                         InvalidArgument("--isa '" + f.isa + "': expected scalar, avx2 or avx512"));
    o.executor.isa = *isa;
  }
  if (!f.steps.empty()) {
    Status s = ParseRange(f.steps, &o.from_step, &o.to_step);
    if (!s.ok()) return ReportError("verify", s);
  }
  // Started by mpirun: the replay's segments are shared among the ranks (verifier.h).
  Result<std::shared_ptr<runtime::Cluster>> cluster = runtime::mpi::Join(f.rank_timeout);
  if (!cluster.ok()) return ReportError("verify", cluster.status());
  o.cluster = *cluster;
  const bool follower = o.cluster != nullptr && o.cluster->rank() != 0;
  if (!follower) o.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  verify::VerifyReport r = verify::VerifyBundle(o);
  if (follower) return r.ExitCode();  // rank 0 reports
  if (f.json) {
    std::cout << r.ToJson().dump(2) << "\n";
  }
  if (r.outcome == verify::Outcome::kVerified) {
    std::cerr << r.message << "\n";
  } else {
    std::cerr << "detrain verify: "
              << (r.outcome == verify::Outcome::kIncomplete   ? "INCOMPLETE: "
                  : r.outcome == verify::Outcome::kInputError ? ""
                                                              : "FAILED: ")
              << r.message << "\n";
  }
  return r.ExitCode();
}

}  // namespace

void RegisterVerifyCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<VerifyFlags>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check an audit bundle: integrity, recompile, and replay bit for bit");
  cmd->add_option("BUNDLE", f->bundle, "The bundle directory")->required();
  cmd->add_option("--steps", f->steps,
                  "A:B replays steps A..B-1 only (from the nearest checkpoint at or before A); "
                  "A: and :B are open ranges");
  cmd->add_option("--jobs", f->jobs, "Checkpoint segments replayed at once")
      ->check(CLI::Range(1, 256));
  cmd->add_flag("--no-replay", f->no_replay, "Check integrity and recompile only");
  cmd->add_flag("--integrity-only", f->integrity_only,
                "Check integrity only (digests, sizes, the step chain; no recompile, no replay)");
  cmd->add_option("--data", f->data_dir,
                  "A directory holding the dataset files (by file name), for a bundle without "
                  "embedded data");
  cmd->add_flag("--json", f->json, "Write the report as JSON to stdout");
  cmd->add_option("--backend", f->backend,
                  "Where the replay runs: cpu (default) or cuda (NVIDIA GPUs); a bundle made on "
                  "either verifies on either")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--threads", f->threads, "Threads per replaying job; never changes a bit")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--devices", f->devices, "In-process devices per job; never changes a bit");
  cmd->add_option("--isa", f->isa, "scalar, avx2 or avx512; never changes a bit");
  cmd->add_option("--rank-timeout", f->rank_timeout,
                  "Under mpirun: seconds a rank waits for another (default 300)")
      ->check(CLI::Range(0.001, 86400.0));
  cmd->footer(
      "Phases: integrity (every file's size and Merkle root, the manifest's root digest, the\n"
      "step chain, checkpoints, final weights, the split), recompile (stages 1-4, the data\n"
      "record, the key lineage, the genesis hash), replay (every step's record, bit for bit).\n"
      "Exit codes: 0 verified, 1 verification failed or bundle incomplete, 2 usage or input\n"
      "error (no such bundle, a format version this detrain does not read, a dataset not\n"
      "found).\n"
      "mpirun -np P detrain verify BUNDLE shares the replay's checkpoint segments among P\n"
      "processes (each must see the bundle); rank 0 prints the report.");
  cmd->callback([f, exit_code] { *exit_code = RunVerify(*f); });
}

}  // namespace detrain::cli
