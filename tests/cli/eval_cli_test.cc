// `detrain eval --backend cpu|interp`: the CPU executor's output files are byte-identical to the
// interpreter's (and to JAX's, for modules exported from JAX) on any thread count, ISA and device
// count; bad options are exit 2 with a message that says what would work.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/file_io.h"
#include "base/isa.h"
#include "base/npy.h"
#include "cli/cli_runner.h"
#include "compiler/ir/literal_npy.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "driver/compile.h"
#include "runtime/runtime_test_util.h"

namespace detrain {
namespace {

using testing::RunDetrain;

std::string Jax(const std::string& rel) {
  return std::string(DETRAIN_SOURCE_DIR) + "/tests/compiler/interp/testdata/jax/" + rel;
}

std::string Slurp(const std::string& path) {
  auto r = ReadFile(path);
  return r.ok() ? *r : "<unreadable " + path + ">";
}

TEST(EvalCli, CpuBackendEqualsJaxAndTheInterpreterOnEveryIsaAndThreadCount) {
  for (Isa isa : runtime::SupportedIsas()) {
    for (const char* threads : {"1", "2"}) {
      SCOPED_TRACE(std::string(IsaName(isa)) + " threads " + threads);
      std::string dir = testing::MakeTempDir();
      auto r = RunDetrain({"eval", Jax("data_movement/module.hlo"), "--input",
                           "x=" + Jax("data_movement/in/p0.npy"), "--input",
                           "n=" + Jax("data_movement/in/p1.npy"), "--input",
                           "i=" + Jax("data_movement/in/p2.npy"), "-o", dir, "--backend", "cpu",
                           "--threads", threads, "--isa", std::string(IsaName(isa))});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      for (int i = 0; i < 10; ++i) {
        std::string name = "out" + std::to_string(i) + ".npy";
        EXPECT_EQ(Slurp(dir + "/" + name), Slurp(Jax("data_movement/" + name))) << name;
      }
      std::filesystem::remove_all(dir);
    }
  }
}

// One train step of a program: the interpreter on stage 2, the executor on stage 4 with 4 devices.
TEST(EvalCli, TrainStepOfAProgramIsTheSameOnBothBackends) {
  std::string program = std::string(DETRAIN_SOURCE_DIR) + "/examples/breast_cancer/train.dt";
  auto compiled = driver::Compile(program, {/*backend=*/false});
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  auto step = ir::ParseAndVerify(compiled->stages.Find("hlo")->bytes);
  ASSERT_TRUE(step.ok());
  auto args = runtime::TrainStepArguments(**step, 3);
  std::string in = testing::MakeTempDir();
  std::vector<std::string> flags;
  auto params = (*step)->entry()->Parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    std::string path = in + "/p" + std::to_string(i) + ".npy";
    ASSERT_TRUE(WriteFileAtomic(path, SerializeNpy(ir::LiteralToNpy(args[i]))).ok());
    flags.push_back("--input");
    flags.push_back("p" + std::to_string(i) + "=" + path);
  }
  std::string a = testing::MakeTempDir(), b = testing::MakeTempDir();
  std::vector<std::string> interp = {"eval", program, "-o", a};
  std::vector<std::string> cpu = {"eval", program,     "-o", b,           "--backend",
                                  "cpu",  "--devices", "4",  "--threads", "2"};
  interp.insert(interp.end(), flags.begin(), flags.end());
  cpu.insert(cpu.end(), flags.begin(), flags.end());
  auto ri = RunDetrain(interp);
  ASSERT_EQ(ri.exit_code, 0) << ri.err;
  auto rc = RunDetrain(cpu);
  ASSERT_EQ(rc.exit_code, 0) << rc.err;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(a)) {
    std::string name = entry.path().filename().string();
    EXPECT_EQ(Slurp(entry.path().string()), Slurp(b + "/" + name)) << name;
    ++files;
  }
  EXPECT_EQ(files, static_cast<int>((*step)->entry()->root()->shape.tuple_elements().size()));
  EXPECT_EQ(ri.out, [&] {  // the same listing: paths differ only in the directory
    std::string s = rc.out;
    for (size_t p = s.find(b); p != std::string::npos; p = s.find(b)) s.replace(p, b.size(), a);
    return s;
  }());
  for (const std::string& d : {in, a, b}) std::filesystem::remove_all(d);
}

TEST(EvalCli, BadBackendOptionsAreExit2WithWhatWouldWork) {
  std::string program = std::string(DETRAIN_SOURCE_DIR) + "/examples/breast_cancer/train.dt";
  auto r =
      RunDetrain({"eval", Jax("data_movement/module.hlo"), "--backend", "cpu", "--devices", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("must be 1, 2, 4 or 8 and divide"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(use 1)"), std::string::npos) << r.err;
  r = RunDetrain({"eval", Jax("data_movement/module.hlo"), "--backend", "cpu", "--isa", "sse9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("expected scalar, avx2 or avx512"), std::string::npos) << r.err;
  r = RunDetrain({"eval", Jax("data_movement/module.hlo"), "--backend", "gpu"});
  EXPECT_EQ(r.exit_code, 2);
  r = RunDetrain({"eval", program, "--backend", "cpu", "--devices", "3"});
  EXPECT_EQ(r.exit_code, 2);  // refused by the option's checker, before the program is read
  EXPECT_NE(r.err.find("'3': expected 1, 2, 4 or 8"), std::string::npos) << r.err;
  for (Isa isa : kAllIsas) {
    if (IsaSupported(isa)) continue;
    r = RunDetrain({"eval", Jax("data_movement/module.hlo"), "--backend", "cpu", "--isa",
                    std::string(IsaName(isa))});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("is not supported by this CPU"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace detrain
