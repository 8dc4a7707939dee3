// `detrain run PROGRAM [--attest -o BUNDLE]`: train a program (runtime/train/run.h), with an audit
// bundle (evidence/bundle/attested_run.h).
// Progress goes to stderr: a bar redrawn in place on a terminal, plain lines otherwise.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "evidence/bundle/attested_run.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/sign/attestations.h"
#include "frontend/run_config.h"
#include "runtime/mpi/mpi_cluster.h"

namespace detrain::cli {
namespace {

std::atomic<bool> g_interrupt{false};

extern "C" void OnInterrupt(int) { g_interrupt.store(true); }

struct RunFlags {
  std::string program;
  std::string output;
  bool attest = false;
  bool resume = false;
  bool embed_data = false;
  std::string backend = "cpu";
  int threads = 1;
  int devices = 1;
  std::string isa;
  std::string loops = "auto";
  int64_t steps = 0;
  std::string step_digest = "xxh3-128";
  uint32_t plan_format = plan::kPlanFormatVersion;
  std::string pipeline;
  bool quiet = false;
  double rank_timeout = 300;
  std::string sign_key;
};

std::string Duration(double s) {
  char b[32];
  if (s < 60) {
    std::snprintf(b, sizeof(b), "%.0fs", s);
  } else if (s < 3600) {
    std::snprintf(b, sizeof(b), "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  } else {
    std::snprintf(b, sizeof(b), "%dh%02dm", static_cast<int>(s) / 3600,
                  (static_cast<int>(s) / 60) % 60);
  }
  return b;
}

// Renders RunProgress events: a redrawn bar on a terminal, a line per ~5% (and per eval,
// checkpoint) otherwise.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool quiet) : quiet_(quiet), tty_(::isatty(STDERR_FILENO) == 1) {}

  void operator()(const bundle::RunProgress& p) {
    if (quiet_) return;
    auto now = std::chrono::steady_clock::now();
    if (p.kind == bundle::RunProgress::kStarted) {
      start_ = now;
      if (p.first_step > 0) {
        std::cerr << "resuming at step " << p.first_step << " of " << p.steps << "\n";
      }
      return;
    }
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const int64_t done_here = p.steps_done - p.first_step;
    const double rate = elapsed > 0 ? static_cast<double>(done_here) / elapsed : 0;
    const double eta = rate > 0 ? static_cast<double>(p.steps - p.steps_done) / rate : 0;
    char line[256];
    std::snprintf(line, sizeof(line), "step %lld/%lld  loss %.4f  %.1f steps/s  ETA %s",
                  static_cast<long long>(p.steps_done), static_cast<long long>(p.steps),
                  static_cast<double>(p.loss), rate, Duration(eta).c_str());
    std::string text = line;
    if (p.eval.has_value()) {
      char e[96];
      std::snprintf(e, sizeof(e), "  val loss %.4f", static_cast<double>(p.eval->loss));
      text += e;
      if (p.eval->accuracy.has_value()) {
        std::snprintf(e, sizeof(e), "  val accuracy %.4f", static_cast<double>(*p.eval->accuracy));
        text += e;
      }
    }
    if (p.kind == bundle::RunProgress::kCheckpoint) text += "  [checkpoint]";
    if (p.kind == bundle::RunProgress::kDone) {
      if (tty_) std::cerr << "\r\033[K";
      std::cerr << "done: " << p.steps_done << " steps in " << Duration(elapsed) << "\n";
      return;
    }
    if (tty_) {
      const int width = 24;
      int filled = p.steps > 0 ? static_cast<int>(width * p.steps_done / p.steps) : 0;
      std::string bar = "[" + std::string(static_cast<size_t>(filled), '=') +
                        std::string(static_cast<size_t>(width - filled), ' ') + "] ";
      std::cerr << "\r\033[K" << bar << text << std::flush;
      if (p.eval.has_value() || p.kind == bundle::RunProgress::kCheckpoint) std::cerr << "\n";
    } else {
      const int64_t every = std::max<int64_t>(1, p.steps / 20);
      if (p.steps_done % every == 0 || p.eval.has_value() ||
          p.kind == bundle::RunProgress::kCheckpoint) {
        std::cerr << text << "\n";
      }
    }
  }

 private:
  bool quiet_;
  bool tty_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

int RunRun(const RunFlags& f) {
  bundle::RunOptions o;
  o.program = f.program;
  o.output_dir = f.output;
  o.resume = f.resume;
  o.embed_data = f.embed_data;
  o.executor.threads = f.threads;
  o.executor.devices = f.devices;
  if (!f.isa.empty()) {
    std::optional<Isa> isa = IsaFromName(f.isa);
    if (!isa)
      return ReportError("run",
                         InvalidArgument("--isa '" + f.isa + "': expected scalar, avx2 or avx512"));
    o.executor.isa = *isa;
  }
  Result<runtime::Backend> backend = runtime::ParseBackend(f.backend);
  if (!backend.ok()) return ReportError("run", backend.status());
  o.executor.backend = *backend;
  if (f.loops == "generated" && *backend != runtime::Backend::kCpu)
    return ReportError("run", InvalidArgument("--loops generated is for the CPU backend"));
  // auto: generated loops on the CPU where this machine can compile them, else the evaluator.
  o.executor.generated_loops =
      f.loops == "generated" || (f.loops == "auto" && *backend == runtime::Backend::kCpu);
  o.executor.loops_fallback = f.loops == "auto";
  if (f.steps > 0) o.steps = f.steps;
  o.plan_format_version = f.plan_format;
  o.pipeline = f.pipeline;
  Result<attest::DigestPolicy> policy = bundle::ParseDigestPolicy(f.step_digest);
  if (!policy.ok()) return ReportError("run", policy.status());
  o.step_digest = *policy;
  if ((f.resume || f.embed_data || f.step_digest != "xxh3-128") && !f.attest) {
    return ReportError("run",
                       InvalidArgument("--resume, --embed-data and --step-digest need --attest"));
  }
  if (!f.sign_key.empty() && !f.attest) {
    return ReportError("run", InvalidArgument("--sign-key needs --attest"));
  }
  o.detrain_version = DETRAIN_VERSION " (" DETRAIN_GIT_COMMIT ")";
  // Started by mpirun: this process is one rank of the run (docs/scale-out.md).
  Result<std::shared_ptr<runtime::Cluster>> cluster = runtime::mpi::Join(f.rank_timeout);
  if (!cluster.ok()) return ReportError("run", cluster.status());
  o.executor.cluster = *cluster;
  const bool follower = *cluster != nullptr && (*cluster)->rank() != 0;
  // The key is read before anything runs, by the rank that signs (rank 0): a wrong path or key
  // fails now, not after training — and stops every rank.
  std::optional<sign::PrivateKey> key;
  if (!f.sign_key.empty() && !follower) {
    Result<sign::PrivateKey> k = sign::LoadPrivateKey(f.sign_key);
    if (!k.ok()) {
      const int code = ReportError("run", k.status());
      if (*cluster != nullptr) (*cluster)->Abort(code);
      return code;
    }
    key = std::move(*k);
  }
  auto printer = std::make_shared<ProgressPrinter>(f.quiet || follower);
  o.progress = [printer](const bundle::RunProgress& p) { (*printer)(p); };
  o.interrupt = &g_interrupt;
  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
  Result<bundle::RunSummary> r = f.attest ? bundle::RunAttested(o) : runtime::Train(o);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (*cluster != nullptr && (*cluster)->broken()) {
    // A transfer failed half-way: the other ranks wait for bytes that will not come.
    ReportError("run", r.ok() ? Internal("the ranks lost step") : r.status());
    (*cluster)->Abort(kExitInternal);
    return kExitInternal;
  }
  if (follower) {  // rank 0 reports the run; a follower only what happened to it alone
    if (r.ok()) return r->follower_exit_code.value_or(kExitInternal);
    if (r.status().code() == StatusCode::kCancelled) return kExitUsage;  // rank 0 says why
    return ReportError("run", r.status().WithContext((*cluster)->Describe((*cluster)->rank())));
  }
  if (!r.ok()) return ReportProgramError("run", f.program, r.status());
  if (r->interrupted) {
    std::cerr << "\ninterrupted after step " << r->steps_done - 1 << "; ";
    if (f.attest) {
      // With the options the bundle's files depend on: a resume without them is refused.
      std::string same;
      if (f.backend != "cpu") same += " --backend " + f.backend;
      if (f.plan_format != plan::kPlanFormatVersion)
        same += " --plan-format " + std::to_string(f.plan_format);
      if (!f.pipeline.empty()) same += " --pipeline " + f.pipeline;
      if (f.step_digest != "xxh3-128") same += " --step-digest " + f.step_digest;
      if (f.embed_data) same += " --embed-data";
      std::cerr << "the bundle is incomplete. Continue it with:\n  detrain run " << f.program
                << " --attest -o " << f.output << same << " --resume\n";
    } else {
      std::cerr << "nothing was written\n";
    }
    return kExitInterrupted;
  }
  if (r->stopped) std::cerr << "stopped: " << r->stop_reason << "\n";
  if (r->last_eval.has_value()) {
    std::fprintf(stderr, "validation: loss %.6f", static_cast<double>(r->last_eval->loss));
    if (r->last_eval->accuracy.has_value()) {
      std::fprintf(stderr, "  accuracy %.4f", static_cast<double>(*r->last_eval->accuracy));
    }
    std::fprintf(stderr, "\n");
  }
  if (f.attest && key.has_value() && r->complete) {
    // The statements name the finished manifest and weights, so they come last; the bundle is
    // complete and verifiable without them if signing fails.
    Status signed_ok = sign::SignBundle(
        f.output, *key, {DETRAIN_VERSION, DETRAIN_GIT_COMMIT, sign::ExecutableSha256()});
    if (!signed_ok.ok()) {
      return ReportError("run", signed_ok.WithContext("signing the finished bundle"));
    }
    std::cerr << "signed with key " << key->public_key().id().substr(0, 16) << ": "
              << sign::kTrainingFile << ", " << sign::kProvenanceFile << ", "
              << sign::kModelSignatureFile << "\n";
  }
  if (f.attest) {
    std::cout << "bundle: " << f.output << "\n"
              << "steps: " << r->steps_done << "/" << r->steps << (r->stopped ? " (stopped)" : "")
              << "\n"
              << "final step hash: " << r->final_step_hash << "\n"
              << "root digest: " << r->root_digest << "\n";
  } else if (!f.output.empty()) {
    std::cout << "final weights: " << f.output << "/final/weights.safetensors\n";
  }
  return r->stopped ? kExitVerifyFailed : kExitOk;
}

}  // namespace

void RegisterRunCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* cmd =
      app.add_subcommand("run", "Train a program; with --attest, write an audit bundle");
  cmd->add_option("PROGRAM", f->program,
                  "A .dt program, or a run spec (.json) naming an exported train step "
                  "(tools/export_jax.py, docs/jax-training.md)")
      ->required();
  cmd->add_flag("--attest", f->attest,
                "Write an audit bundle to -o: the stages, data digests, key lineage, a "
                "hash-chained record of every step, checkpoints and final weights");
  cmd->add_option("-o,--output", f->output,
                  "The bundle directory (new or empty; with --attest), or where "
                  "final/weights.safetensors goes (without)");
  cmd->add_flag("--resume", f->resume,
                "Continue an interrupted bundle from its last checkpoint, to the same result as "
                "an uninterrupted run");
  cmd->add_flag("--embed-data", f->embed_data, "Copy the dataset files into the bundle");
  cmd->add_option("--backend", f->backend,
                  "cpu (default), or cuda: the train and eval steps on the machine's NVIDIA GPUs "
                  "(device d on GPU d mod G), the same bits; the bundle then also holds the CUDA "
                  "source, PTX and cubins (docs/cuda.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--threads", f->threads, "Worker threads; results never depend on them")
      ->check(IntegerIn(1, 256));
  cmd->add_option("--devices", f->devices,
                  "In-process devices: 1, 2, 4 or 8, dividing the program's shards; never "
                  "changes a bit")
      ->check(DeviceCount());
  cmd->add_option("--isa", f->isa, "scalar, avx2 or avx512 (default: the best this CPU has)");
  cmd->add_option("--loops", f->loops,
                  "How the CPU runs elementwise programs: generated: as loops written for the "
                  "program, compiled when the run starts by the C++ compiler detrain was built "
                  "with and cached (docs/fused-loops.md); evaluator: op by op; auto (default): "
                  "generated where that compiler is present, else the evaluator. Never changes a "
                  "bit; environment.json records which ran")
      ->check(CLI::IsMember({"auto", "evaluator", "generated"}));
  cmd->add_option("--steps", f->steps, "Train this many steps instead of the program's")
      ->check(IntegerIn(1, frontend::kMaxSteps));
  cmd->add_option("--step-digest", f->step_digest,
                  "xxh3-128 (default: XXH3-128 of the state every step, SHA-256 roots at "
                  "checkpoints and the end), xxh3-128-chunked (the same hash over 16 KiB chunks, "
                  "computed in parallel and, on a GPU, where the state lies: no copy of the state "
                  "per step; schemas/bundle.md 5.2) or sha256 (SHA-256 every step)")
      ->check(CLI::IsMember({"xxh3-128", "xxh3-128-chunked", "sha256"}));
  AddPlanFormatOption(cmd, &f->plan_format);
  cmd->add_option("--pipeline", f->pipeline,
                  "Stage 3's pass pipeline (default: docs/passes.md's; e.g. with merge-rows, for "
                  "one device: docs/passes.md \"merge-rows and the device mesh\"); the bundle "
                  "records it, verify recompiles with it, and --resume needs the same");
  cmd->add_option("--sign-key", f->sign_key,
                  "With --attest: sign the finished bundle with this private key (detrain "
                  "keygen): attestation/ gets the training provenance, SLSA provenance and an "
                  "OpenSSF model signature of final/ (schemas/attestation.md)");
  cmd->add_flag("-q,--quiet", f->quiet, "No progress output");
  cmd->add_option("--rank-timeout", f->rank_timeout,
                  "Under mpirun: seconds a rank waits for another before the run stops, naming "
                  "it (default 300)")
      ->check(RealIn(0.001, 86400.0));
  cmd->footer(
      "Ctrl-C stops after the current step; the bundle says it is incomplete and --resume\n"
      "continues it. A NaN or infinite loss stops the run; the bundle is finished with status\n"
      "\"stopped\" and holds every step before it.\n"
      "Processes: mpirun -np P detrain run ... runs on P processes (the mesh is P x\n"
      "--devices devices and must divide the program's shards); rank 0 writes the bundle, and\n"
      "the result is bit-identical to one process (docs/scale-out.md).\n"
      "Exit codes: 0 trained, 1 stopped on a non-finite loss, 2 usage or input error,\n"
      "3 internal error, 130 interrupted.");
  cmd->callback([f, exit_code] { *exit_code = RunRun(*f); });
}

}  // namespace detrain::cli
