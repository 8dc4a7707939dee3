// A plan is a file, and files lie (issue 13's rule for every reader): the executor — through the
// one plan reader, compiler/plan/reader.h — must refuse a malformed or inconsistent plan with an
// error, or run it within its buffers — never crash, read or write outside the arena, or
// allocate what a lying size asks for. Byte-level and field-level mutations of real plans; the
// sanitizer build makes any stray access fatal.
#include <gtest/gtest.h>

#include <random>

#include "compiler/codegen/cuda/cuda_program.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/plan/reader.h"
#include "driver/compile.h"
#include "runtime/executor.h"
#include "runtime_test_util.h"
#include "schemas/plan.pb.h"

namespace detrain::runtime {
namespace {

struct Example {
  std::string plan;
  std::vector<ir::Literal> args;
};

Example Load(const std::string& name) {
  auto compiled =
      driver::Compile(std::string(DETRAIN_SOURCE_DIR) + "/examples/" + name + "/train.dt", {});
  EXPECT_TRUE(compiled.ok()) << compiled.status().message();
  auto step = ir::ParseAndVerify(compiled->stages.Find("hlo")->bytes);
  return {compiled->stages.Find("plan")->bytes, TrainStepArguments(**step, 5)};
}

std::string Serialize(const plan::v2::Plan& p) {
  std::string s;
  p.SerializeToString(&s);
  return s;
}

// Create and, if that succeeds, run: either may fail, neither may crash. A plan the reader
// accepts also goes to the CUDA code generator, which trusts the reader's checks.
void TryPlan(const std::string& bytes, const std::vector<ir::Literal>& args, int devices) {
  if (auto read = plan::ReadPlan(bytes); read.ok()) {
    auto program = codegen::cuda::GenerateCuda(*read);
    if (!program.ok()) EXPECT_FALSE(program.status().message().empty());
  }
  ExecutorOptions o;
  o.devices = devices;
  auto e = Executor::Create(bytes, o);
  if (!e.ok()) {
    EXPECT_FALSE(e.status().message().empty());
    return;
  }
  auto r = (*e)->Run({args});
  if (!r.ok()) {
    EXPECT_FALSE(r.status().message().empty());
  }
}

TEST(PlanReader, RefusesGarbageAndUnknownVersions) {
  EXPECT_FALSE(Executor::Create("", {}).ok());
  EXPECT_FALSE(Executor::Create(std::string("\xff\xff\xff\xff\x0f", 5), {}).ok());
  Example e = Load("breast_cancer");
  plan::v2::Plan p;
  ASSERT_TRUE(p.ParseFromString(e.plan));
  p.set_format_version(plan::kPlanFormatVersion + 1);
  auto r = Executor::Create(Serialize(p), {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.status().message().find("format version " + std::to_string(plan::kPlanFormatVersion + 1)),
      std::string::npos);
  p.set_format_version(plan::kPlanFormatVersion);
  plan::v2::Plan misaligned = p;
  misaligned.mutable_buffers(1)->set_offset(misaligned.buffers(1).offset() + 2);
  r = Executor::Create(Serialize(misaligned), {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not fit the arena"), std::string::npos)
      << r.status().message();
  p.set_arena_bytes(int64_t{1} << 62);  // a lying size is refused before any allocation
  EXPECT_FALSE(Executor::Create(Serialize(p), {}).ok());
}

TEST(PlanReader, ByteMutationsNeverCrash) {
  Example e = Load("breast_cancer");
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes = e.plan;
    switch (trial % 3) {
      case 0:
        bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
        break;
      case 1:
        bytes.resize(rng() % bytes.size());
        break;
      default:
        for (int k = 0; k < 8; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    TryPlan(bytes, e.args, trial % 2 ? 2 : 1);
  }
}

// Field mutations: sizes, offsets, dims, ids, spec numbers set to hostile values.
TEST(PlanReader, FieldMutationsNeverCrash) {
  for (const char* name : {"breast_cancer", "digits"}) {
    Example e = Load(name);
    plan::v2::Plan base;
    ASSERT_TRUE(base.ParseFromString(e.plan));
    std::mt19937_64 rng(7);
    const int64_t hostile[] = {-1,        0,        1, 2, 7, 1 << 20, INT32_MAX, int64_t{1} << 40,
                               INT64_MAX, INT64_MIN};
    auto pick = [&] { return hostile[rng() % (sizeof(hostile) / sizeof(hostile[0]))]; };
    for (int trial = 0; trial < 200; ++trial) {
      plan::v2::Plan p = base;
      plan::v2::Buffer* b = p.mutable_buffers(static_cast<int>(rng() % p.buffers_size()));
      plan::v2::Kernel* k = p.mutable_kernels(static_cast<int>(rng() % p.kernels_size()));
      switch (trial % 10) {
        case 0:
          b->set_offset(pick());
          break;
        case 1:
          b->set_size(pick());
          break;
        case 2:
          if (b->dims_size() > 0)
            b->set_dims(0, pick());
          else
            b->add_dims(pick());
          break;
        case 3:
          b->set_defined_by(static_cast<int32_t>(pick()));
          break;
        case 4:
          if (k->operands_size() > 0 && k->operands(0).buffers_size() > 0)
            k->mutable_operands(0)->set_buffers(0, static_cast<int32_t>(rng() % p.buffers_size()));
          break;
        case 5:
          if (k->outputs_size() > 0)
            k->set_outputs(0, static_cast<int32_t>(rng() % p.buffers_size()));
          break;
        case 6:
          k->set_shard_lo(pick());
          k->set_shard_hi(pick());
          break;
        case 7:
          if (k->has_dot()) k->mutable_dot()->set_k(pick());
          if (k->has_slice() && k->slice().starts_size() > 0)
            k->mutable_slice()->set_starts(0, pick());
          if (k->has_reduce() && k->reduce().dimensions_size() > 0)
            k->mutable_reduce()->set_dimensions(0, pick());
          if (k->has_broadcast() && k->broadcast().dimensions_size() > 0)
            k->mutable_broadcast()->set_dimensions(0, pick());
          if (k->has_transpose() && k->transpose().permutation_size() > 0)
            k->mutable_transpose()->set_permutation(0, pick());
          if (k->has_convolution()) k->mutable_convolution()->set_in_feature(pick());
          if (k->has_pad() && k->pad().lo_size() > 0) k->mutable_pad()->set_lo(0, pick());
          if (k->has_reduce_window() && k->reduce_window().window_size() > 0)
            k->mutable_reduce_window()->mutable_window(0)->set_stride(pick());
          break;
        case 8:
          if (k->has_elementwise() && k->elementwise().program().ops_size() > 0) {
            auto* op = k->mutable_elementwise()->mutable_program()->mutable_ops(
                static_cast<int>(rng() % k->elementwise().program().ops_size()));
            op->set_input(static_cast<int32_t>(pick()));
            if (op->args_size() > 0) op->set_args(0, static_cast<int32_t>(pick()));
          }
          break;
        default:
          p.set_shards(pick());
          if (p.parameters_size() > 0)
            p.mutable_parameters(0)->set_buffers(0, static_cast<int32_t>(pick()));
      }
      TryPlan(Serialize(p), e.args, trial % 3 == 0 ? 2 : 1);
    }
  }
}

}  // namespace
}  // namespace detrain::runtime
