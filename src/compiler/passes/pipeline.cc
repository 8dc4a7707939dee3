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

// A pass's version changes whenever the pass gives some module another output text (docs/passes.md
// "Pass versions"): a spec names version N > 1 as "name@N", and a pipeline runs a pass only at
// the version this detrain has, so that a recorded spec either reproduces its stage 3 byte for
// byte or is known not to (PipelineGap).
struct PassEntry {
  const char* name;
  Status (*run)(ir::Module&);  // edits the pipeline's module in place
  int version;
};

const PassEntry kPasses[] = {
    {"unroll-while", UnrollLoopsInPlace, 1},
    {"inline", InlineCallsInPlace, 1},
    {"cse", EliminateCommonSubexpressionsInPlace, 1},
    {"fold-constants", FoldConstantsInPlace, 1},
    {"simplify", SimplifyInPlace, 1},
    {"fuse", FuseInPlace, 1},
    {"combine-all-reduce", CombineAllReducesInPlace, 1},
    {"merge-dots", MergeDotsInPlace, 1},
    {"merge-rows", MergeRowsInPlace, 1},
};

// Former passes that could never change the canonical text, and where their work happens now.
struct RemovedPass {
  const char* name;
  const char* why;
};
const RemovedPass kRemovedPasses[] = {
    {"dce", "every pass keeps only live code (Compact), so it is no separate pass"},
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

// "name" or "name@N" (N a version > 1, without leading zeros) split into its name and version;
// version 0 when the suffix is malformed.
std::pair<std::string_view, int> SplitVersion(std::string_view element) {
  const size_t at = element.find('@');
  if (at == std::string_view::npos) return {element, 1};
  std::string_view digits = element.substr(at + 1);
  int version = 0;
  const bool ok = !digits.empty() && digits.size() <= 6 && digits[0] != '0' &&
                  digits.find_first_not_of("0123456789") == std::string_view::npos;
  if (ok) {
    for (char c : digits) version = version * 10 + (c - '0');
  }
  return {element.substr(0, at), ok && version > 1 ? version : 0};
}

struct SpecPass {
  const PassEntry* entry;
  std::string element;  // as the spec writes it: recorded as the pass's name
};

// `unavailable`: spec elements to refuse as passes this detrain no longer runs (PipelineGap).
Result<std::vector<SpecPass>> ParseSpec(std::string_view spec,
                                        const std::vector<std::string>& unavailable = {}) {
  std::vector<SpecPass> passes;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view element = spec.substr(start, comma - start);
    auto [name, version] = SplitVersion(element);
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
    if (version != p->version) {
      const std::string here =
          p->version == 1 ? p->name : std::string(p->name) + "@" + std::to_string(p->version);
      return InvalidArgument("pass '" + std::string(element) + "' in pipeline '" +
                             std::string(spec) + "' is not a version this detrain runs: it has " +
                             here + " (docs/passes.md, pass versions)");
    }
    for (const std::string& gone : unavailable) {
      if (element == gone) {
        return InvalidArgument("pass '" + std::string(element) +
                               "' is one this detrain no longer runs");
      }
    }
    passes.push_back({p, std::string(element)});
    if (passes.size() > kMaxPipelinePasses) {
      return InvalidArgument("pipeline has more than " + std::to_string(kMaxPipelinePasses) +
                             " passes (a bundle's recorded pipeline is input too)");
    }
    start = comma + 1;
  }
  return passes;
}

}  // namespace

const char kDefaultPipeline[] =
    "inline,unroll-while,inline,cse,fold-constants,simplify,cse,fold-constants,merge-dots,fuse,"
    "combine-all-reduce,cse";

std::string DumpName(size_t index, std::string_view pass) {
  char number[24];
  std::snprintf(number, sizeof(number), "%02zu", index);
  return std::string(number) + "." + std::string(pass) + ".hlo";
}

std::string PipelineGap(std::string_view spec, const std::vector<std::string>& unavailable) {
  Result<std::vector<SpecPass>> parsed = ParseSpec(spec, unavailable);
  return parsed.ok() ? std::string() : std::string(parsed.status().message());
}

std::vector<std::string> KnownPasses() {
  std::vector<std::string> names;
  for (const PassEntry& p : kPasses) names.push_back(p.name);
  return names;
}

Result<PipelineResult> RunPipeline(const ir::Module& module, std::string_view spec,
                                   const PipelineOptions& options) {
  (void)options.threads;  // no pass is parallel yet; results must never depend on it anyway
  DETRAIN_ASSIGN_OR_RETURN(auto passes, ParseSpec(spec));
  auto verified = ir::VerifyModuleInOrder(module);
  if (!verified.ok()) return InvalidArgument("pipeline input: " + verified.status().message());
  std::string text = ir::PrintModule(module, *verified);
  std::string digest = attest::Sha256Hex(text);
  PipelineResult result;
  DETRAIN_ASSIGN_OR_RETURN(result.module, CloneModule(module));
  for (size_t i = 0; i < passes.size(); ++i) {
    const PassEntry& pass = *passes[i].entry;
    ir::Module& module_now = *result.module;  // the pass edits it; its input was printed
    Status out = pass.run(module_now);
    if (!out.ok()) {
      // A pass refuses some valid input (a module past the verifier's limits once its loops
      // are unrolled): the user's error. Anything else is detrain's bug.
      const std::string message =
          std::string("pass '") + pass.name + "' failed: " + std::string(out.message());
      return out.code() == StatusCode::kInvalidArgument ? InvalidArgument(message)
                                                        : Internal(message);
    }
    auto order = options.verify_each_pass ? ir::VerifyModuleInOrder(module_now)
                                          : module_now.CanonicalOrder();
    if (!order.ok()) {
      return Internal(std::string("pass '") + pass.name +
                      "' produced an invalid module: " + order.status().message());
    }
    std::string out_text = ir::PrintModule(module_now, *order);
    std::string out_digest = attest::Sha256Hex(out_text);
    result.records.push_back(
        {passes[i].element, attest::Sha256Hex(kNoOptions), digest, out_digest});
    result.dumps.emplace_back(DumpName(i + 1, passes[i].element), out_text);
    digest = std::move(out_digest);
  }
  if (!options.verify_each_pass && !passes.empty()) {
    Status last = ir::VerifyModuleInOrder(*result.module).status();
    if (!last.ok()) {
      // A pass made an invalid module: the pipeline again, every pass verified, names it.
      PipelineOptions each = options;
      each.verify_each_pass = true;
      Result<PipelineResult> again = RunPipeline(module, spec, each);
      if (!again.ok()) return again.status();
      return Internal("the pipeline produced an invalid module: " + std::string(last.message()));
    }
  }
  // Every pass leaves the module compact, and so does the first copy: the result holds only
  // the program, in execution order.
  return result;
}

}  // namespace detrain::passes
