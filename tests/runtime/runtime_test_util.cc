// See runtime_test_util.h.
#include "runtime_test_util.h"

#include "compiler/passes/pipeline.h"
#include "compiler/plan/builder.h"

namespace detrain::runtime {

Result<std::string> OptimizedPlan(const ir::Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(passes::PipelineResult optimized,
                           passes::RunPipeline(module, passes::kDefaultPipeline, {}));
  DETRAIN_ASSIGN_OR_RETURN(plan::BuiltPlan built, plan::BuildPlan(*optimized.module));
  return std::move(built.bytes);
}

std::vector<ir::Literal> TrainStepArguments(const ir::Module& step, uint64_t seed) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  std::vector<ir::Literal> args;
  for (const ir::Instruction* p : step.entry()->Parameters()) {
    ir::Literal lit(p->shape);
    for (int64_t i = 0; i < lit.element_count(); ++i) {
      switch (p->shape.type()) {
        case ir::ElementType::kF32:
          lit.Set<float>(
              i, static_cast<float>(static_cast<int64_t>(next() >> 40) - (int64_t{1} << 23)) /
                     8388608.0f);
          break;
        case ir::ElementType::kS32:
          lit.Set<int32_t>(i, static_cast<int32_t>(next() & 1));
          break;
        case ir::ElementType::kU32:
          lit.Set<uint32_t>(i, static_cast<uint32_t>(next()));
          break;
        default:
          break;
      }
    }
    if (p->name == "count") lit.Set<int32_t>(0, 0);
    if (p->name == "learning_rate") lit.Set<float>(0, 1e-3f);
    args.push_back(std::move(lit));
  }
  return args;
}

}  // namespace detrain::runtime
