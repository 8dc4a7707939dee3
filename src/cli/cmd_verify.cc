// `detrain verify BUNDLE`: the verifier (evidence/verify/verifier.h). Phase lines go to stderr;
// --json writes the report to stdout.
#include <charconv>
#include <ctime>
#include <iostream>
#include <memory>

#include "base/fs.h"
#include "cli/command.h"
#include "evidence/bundle/archive.h"
#include "evidence/sign/attestations.h"
#include "evidence/verify/verifier.h"
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
  std::string loops = "auto";
  std::string backend = "cpu";
  double rank_timeout = 300;
  std::vector<std::string> trusted_keys;
  std::string sign_key;
  std::string summary_out;
};

// Now as RFC 3339 UTC, for the verification summary (a record of when, never hashed).
std::string NowRfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

// What the verification summary says was checked: each phase, and the replayed range.
nlohmann::json ChecksJson(const verify::VerifyReport& r, const verify::VerifyOptions& o) {
  nlohmann::json phases = nlohmann::json::array();
  for (const verify::PhaseReport& p : r.phases) {
    nlohmann::json phase = {{"phase", p.name}, {"ok", p.ok}, {"message", p.message}};
    if (p.name == "recompile" && p.ok) {  // which stages this detrain reproduced (bundle.md §9)
      phase["stages_reproduced"] = p.stages_reproduced;
      phase["stages_not_reproduced"] = p.stages_not_reproduced;
    }
    phases.push_back(std::move(phase));
  }
  nlohmann::json replay = nullptr;
  if (o.replay) {
    replay = {{"from_step", o.from_step.value_or(0)},
              {"to_step", o.to_step.value_or(r.steps)},
              {"steps_replayed", r.steps_replayed}};
  }
  return {{"phases", phases},  {"integrity", true}, {"recompile", o.recompile},
          {"replay", replay},  {"steps", r.steps},  {"final_step_hash", r.final_step_hash},
          {"status", r.status}};
}

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
  if (f.loops == "generated" && *backend != runtime::Backend::kCpu)
    return ReportError("verify", InvalidArgument("--loops generated is for the CPU backend"));
  // auto: generated loops on the CPU where this machine can compile them, else the evaluator.
  o.executor.generated_loops =
      f.loops == "generated" || (f.loops == "auto" && *backend == runtime::Backend::kCpu);
  o.executor.loops_fallback = f.loops == "auto";
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
  for (const std::string& path : f.trusted_keys) {
    Result<sign::PublicKey> key = sign::LoadPublicKey(path);
    if (!key.ok()) return ReportError("verify", key.status());
    o.trusted_keys.push_back(std::move(*key));
  }
  if (f.sign_key.empty() && !f.summary_out.empty()) {
    return ReportError("verify", InvalidArgument("--summary-out needs --sign-key"));
  }
  // An archive (detrain pack) is unpacked into a temporary directory for the checks.
  Result<bundle::BundleSource> source = bundle::BundleSource::Open(f.bundle);
  if (!source.ok()) {
    if (f.json) {
      verify::VerifyReport r;
      r.outcome = verify::Outcome::kInputError;
      r.message = std::string(source.status().message());
      std::cout << JsonOutput(r.ToJson());
    }
    return ReportError("verify", source.status());
  }
  o.bundle = source->dir();
  // Started by mpirun: the replay's segments are shared among the ranks (verifier.h).
  Result<std::shared_ptr<runtime::Cluster>> cluster = runtime::mpi::Join(f.rank_timeout);
  if (!cluster.ok()) return ReportError("verify", cluster.status());
  o.cluster = *cluster;
  const bool follower = o.cluster != nullptr && o.cluster->rank() != 0;
  // The verdict's signing key, read before verifying by the rank that signs (rank 0); a wrong
  // one stops every rank.
  std::optional<sign::PrivateKey> signer;
  if (!f.sign_key.empty() && !follower) {
    Result<sign::PrivateKey> key = sign::LoadPrivateKey(f.sign_key);
    if (!key.ok()) {
      const int code = ReportError("verify", key.status());
      if (o.cluster != nullptr) o.cluster->Abort(code);
      return code;
    }
    signer = std::move(*key);
  }
  if (!follower) o.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  verify::VerifyReport r = verify::VerifyBundle(o);
  if (follower) return r.ExitCode();  // rank 0 reports
  if (f.json) {
    std::cout << JsonOutput(r.ToJson());
  }
  // The verdict as evidence: a signed verification summary (schemas/attestation.md).
  if (signer.has_value() &&
      (r.outcome == verify::Outcome::kVerified || r.outcome == verify::Outcome::kFailed) &&
      !r.root_digest.empty()) {
    sign::VerificationFacts facts;
    facts.passed = r.outcome == verify::Outcome::kVerified;
    facts.message = r.message;
    facts.root_digest = r.root_digest;
    facts.time_verified = NowRfc3339();
    facts.checks = ChecksJson(r, o);
    for (const sign::AttestationCheck& a : r.attestations) {
      if (!a.signer.empty()) facts.input_attestations.push_back(a);
    }
    std::string out = f.summary_out;
    if (source->is_archive()) {
      facts.archive_name = BaseName(f.bundle);
      facts.archive_sha256 = source->archive_sha256();
      if (out.empty()) {
        out = f.bundle + "." + signer->public_key().id().substr(0, 16) + ".vsa.intoto.json";
      }
    } else if (out.empty()) {
      out = JoinPath(f.bundle, sign::VerificationFile(signer->public_key()));
    }
    Status s = sign::WriteVerificationSummary(
        o.bundle, out, *signer, {DETRAIN_VERSION, DETRAIN_GIT_COMMIT, sign::ExecutableSha256()},
        facts);
    if (!s.ok()) return ReportError("verify", s.WithContext("writing the verification summary"));
    std::cerr << "verification summary (" << (facts.passed ? "PASSED" : "FAILED")
              << ", signed with key " << signer->public_key().id().substr(0, 16) << "): " << out
              << "\n";
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
  cmd->add_option("BUNDLE", f->bundle, "The bundle directory, or an archive made by pack")
      ->required();
  cmd->add_option("--trusted-key", f->trusted_keys,
                  "A public key (PEM) whose signatures are trusted; repeatable. With any, every "
                  "attestation must be signed by one of them, and an unsigned bundle fails");
  cmd->add_option("--sign-key", f->sign_key,
                  "Sign the verdict with this private key: a SLSA verification summary written "
                  "to BUNDLE/attestation/verification.<key id>.intoto.json (for an archive: "
                  "next to it)");
  cmd->add_option("--summary-out", f->summary_out,
                  "With --sign-key: write the verification summary here instead");
  cmd->add_option("--steps", f->steps,
                  "A:B replays steps A..B-1 only (from the nearest checkpoint at or before A); "
                  "A: and :B are open ranges");
  cmd->add_option("--jobs", f->jobs, "Checkpoint segments replayed at once")
      ->check(IntegerIn(1, 256));
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
      ->check(IntegerIn(1, 256));
  cmd->add_option("--devices", f->devices,
                  "In-process devices per job: 1, 2, 4 or 8, dividing the program's shards; "
                  "never changes a bit")
      ->check(DeviceCount());
  cmd->add_option("--isa", f->isa, "scalar, avx2 or avx512; never changes a bit");
  cmd->add_option("--loops", f->loops,
                  "auto (default: generated where the C++ compiler detrain was built with is "
                  "present), generated or evaluator: how the CPU replays elementwise programs "
                  "(docs/fused-loops.md); never changes a bit")
      ->check(CLI::IsMember({"auto", "evaluator", "generated"}));
  cmd->add_option("--rank-timeout", f->rank_timeout,
                  "Under mpirun: seconds a rank waits for another (default 300)")
      ->check(RealIn(0.001, 86400.0));
  cmd->footer(
      "Phases: integrity (every file's size and Merkle root, the manifest's root digest, the\n"
      "step chain, checkpoints, final weights, the split), signatures (attestation/: each\n"
      "statement is about this bundle and, with --trusted-key, signed by a trusted key),\n"
      "recompile (stages 1-4, the data record, the key lineage, the genesis hash), replay\n"
      "(every step's record, bit for bit).\n"
      "Exit codes: 0 verified, 1 verification failed or bundle incomplete, 2 usage or input\n"
      "error (no such bundle, a format version this detrain does not read, a dataset not\n"
      "found, an option this machine or the program's shards cannot take, --backend cuda\n"
      "without a GPU, a program larger than the memory budget): no verdict, no summary.\n"
      "mpirun -np P detrain verify BUNDLE shares the replay's checkpoint segments among P\n"
      "processes (each must see the bundle); rank 0 prints the report.");
  cmd->callback([f, exit_code] { *exit_code = RunVerify(*f); });
}

}  // namespace detrain::cli
