// See pass_test_util.h.
#include "pass_test_util.h"

#include <filesystem>

#include "base/file_io.h"
#include "compiler/interp/interpreter.h"
#include "compiler/testing/random_module.h"
#include "frontend/check.h"
#include "frontend/parser.h"
#include "frontend/train_step.h"

namespace detrain::testing {

std::vector<ir::Literal> EvaluateRandom(const ir::Module& module, uint64_t seed, int replicas,
                                        std::string* error) {
  std::vector<std::vector<ir::Literal>> args;
  for (int r = 0; r < replicas; ++r)
    args.push_back(RandomArguments(module, seed * 16 + static_cast<uint64_t>(r)));
  auto results = interp::EvaluateReplicated(module, args);
  if (!results.ok()) {
    *error = results.status().message();
    return {};
  }
  return std::move(*results);
}

std::unique_ptr<ir::Module> LowerExample(const std::string& name, std::string* skip,
                                         std::string* error) {
  std::string path = std::string(DETRAIN_SOURCE_DIR) + "/examples/" + name + "/train.dt";
  if (!std::filesystem::exists(path)) {
    *skip = "examples/" + name + "/train.dt does not exist yet";
    return nullptr;
  }
  auto text = ReadFile(path);
  if (!text.ok()) {
    *error = text.status().message();
    return nullptr;
  }
  // The checked program refers to the source and the AST; the lowered module does not.
  auto source = std::make_unique<frontend::SourceFile>(path, *text);
  auto parsed = frontend::Parse(*source);
  if (!parsed.ok()) {
    *error = parsed.status().message();
    return nullptr;
  }
  auto program = std::make_unique<frontend::Program>(std::move(*parsed));
  auto checked = frontend::Check(*source, *program);
  if (!checked.ok()) {
    *error = checked.status().message();
    return nullptr;
  }
  auto step = frontend::LowerTrainStep(*checked);
  if (!step.ok()) {
    *error = step.status().message();
    return nullptr;
  }
  return std::move(*step);
}

}  // namespace detrain::testing
