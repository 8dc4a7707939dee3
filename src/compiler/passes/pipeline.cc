// See pipeline.h. The pass registry is one table (kPasses), in the order docs/passes.md
// describes the passes; the spec only chooses which run and in what order.
#include "compiler/passes/pipeline.h"

#include <cstdio>

#include "attest/sha256.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewrite.h"

namespace detrain::passes {
namespace {

struct PassEntry {
  const char* name;
  PassOutput (*run)(const ir::Module&);
};

const PassEntry kPasses[] = {
    {"unroll-while", UnrollLoops},
    {"inline", InlineCalls},
    {"cse", EliminateCommonSubexpressions},
    {"fold-constants", FoldConstants},
    {"simplify", Simplify},
    {"fuse", Fuse},
    {"combine-all-reduce", CombineAllReduces},
    {"merge-dots", MergeDots},
};

// Former passes that could never change the canonical text, and where their work happens now.
struct RemovedPass {
  const char* name;
  const char* why;
};
const RemovedPass kRemovedPasses[] = {
    {"dce", "every pass keeps only live code (CloneModule), so it is no separate pass"},
    {"schedule", "the canonical order is the schedule; every pass's output is in that order"},
    {"assign-buffers", "buffer assignment is part of code generation (stage 4)"},
};

// No pass takes options yet; each pass's options are the canonical JSON object `{}`. A pass
// that gains options hashes their canonical JSON here instead.
constexpr char kNoOptions[] = "{}";

const PassEntry* FindPass(std::string_view name) {
  for (const PassEntry& p : kPasses) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

// A bound on the passes one pipeline may run: the default has 10; a spec read from a bundle
// (verify) is hostile input and must not run for hours.
constexpr size_t kMaxPipelinePasses = 64;

Result<std::vector<const PassEntry*>> ParseSpec(std::string_view spec) {
  std::vector<const PassEntry*> passes;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view name = spec.substr(start, comma - start);
    const PassEntry* p = FindPass(name);
    for (const RemovedPass& r : kRemovedPasses) {
      if (p == nullptr && name == r.name) {
        return InvalidArgument("pass '" + std::string(name) + "' no longer exists: " + r.why +
                               "; drop it from the pipeline '" + std::string(spec) + "'");
      }
    }
    if (p == nullptr) {
      std::string known;
      for (const PassEntry& k : kPasses) known += std::string(known.empty() ? "" : ", ") + k.name;
      return InvalidArgument("unknown pass '" + std::string(name) + "' in pipeline '" +
                             std::string(spec) + "'; known passes: " + known);
    }
    passes.push_back(p);
    if (passes.size() > kMaxPipelinePasses) {
      return InvalidArgument("pipeline has more than " + std::to_string(kMaxPipelinePasses) +
                             " passes (a bundle's recorded pipeline is input too)");
    }
    start = comma + 1;
  }
  return passes;
}

std::string DumpName(size_t index, std::string_view pass) {
  char number[24];
  std::snprintf(number, sizeof(number), "%02zu", index);
  return std::string(number) + "." + std::string(pass) + ".hlo";
}

}  // namespace

const char kDefaultPipeline[] =
    "inline,unroll-while,inline,cse,fold-constants,simplify,cse,fold-constants,merge-dots,fuse,"
    "combine-all-reduce,cse";

std::vector<std::string> KnownPasses() {
  std::vector<std::string> names;
  for (const PassEntry& p : kPasses) names.push_back(p.name);
  return names;
}

Result<PipelineResult> RunPipeline(const ir::Module& module, std::string_view spec,
                                   const PipelineOptions& options) {
  (void)options.threads;  // no pass is parallel yet; results must never depend on it anyway
  DETRAIN_ASSIGN_OR_RETURN(auto passes, ParseSpec(spec));
  Status verified = ir::VerifyModule(module);
  if (!verified.ok()) return InvalidArgument("pipeline input: " + verified.message());
  DETRAIN_ASSIGN_OR_RETURN(std::string text, ir::PrintModule(module));
  std::string digest = attest::Sha256Hex(text);
  PipelineResult result;
  DETRAIN_ASSIGN_OR_RETURN(result.module, CloneModule(module));
  for (size_t i = 0; i < passes.size(); ++i) {
    const PassEntry& pass = *passes[i];
    auto out = pass.run(*result.module);
    if (!out.ok()) {
      // A pass refuses some valid input (a module past the verifier's limits once its loops
      // are unrolled): the user's error. Anything else is detrain's bug.
      const std::string message =
          std::string("pass '") + pass.name + "' failed: " + std::string(out.status().message());
      return out.status().code() == StatusCode::kInvalidArgument ? InvalidArgument(message)
                                                                 : Internal(message);
    }
    Status ok = ir::VerifyModule(**out);
    if (!ok.ok()) {
      return Internal(std::string("pass '") + pass.name +
                      "' produced an invalid module: " + ok.message());
    }
    DETRAIN_ASSIGN_OR_RETURN(std::string out_text, ir::PrintModule(**out));
    std::string out_digest = attest::Sha256Hex(out_text);
    result.records.push_back({pass.name, attest::Sha256Hex(kNoOptions), digest, out_digest});
    result.dumps.emplace_back(DumpName(i + 1, pass.name), out_text);
    result.module = std::move(*out);
    digest = std::move(out_digest);
  }
  // A pass may leave replaced instructions behind in its lists; the result holds only the
  // program, in execution order (same text, same digest).
  DETRAIN_ASSIGN_OR_RETURN(result.module, CloneModule(*result.module));
  return result;
}

}  // namespace detrain::passes
