// Generated loops for the CPU's elementwise kernels (docs/fused-loops.md): the programs the
// evaluator (isa_kernels.inc) would run op by op, written as C++ by codegen/cpu/fused_loop.h,
// compiled at load time by the C++ compiler detrain was built with, and loaded into the process.
// A kernel whose program the generator cannot write keeps the evaluator. Either way every
// element has the semantics' bits: the choice changes no bit, and so is not hashed.
//
// Load time, in two phases: each kernel asks for its programs' loops (Request, with the slot the
// function pointer goes to), then one Build compiles every distinct function not compiled
// before (one shared library per Build), loads it and fills the slots. The library stays loaded
// while the FusedLoops lives: kernels holding its functions must keep it (a shared_ptr). A
// compiled library is cached ($XDG_CACHE_HOME or ~/.cache/detrain/loops, private to the user,
// named by the SHA-256 of the source, the flags and the compiler's identity): the next load of
// the same functions dlopens it instead of compiling.
//
// Thread safety: Request and Build from one thread; the loaded functions are pure and may run on
// any thread. Determinism: the source is a function of the requests; nothing machine-dependent
// reaches a result.
#ifndef DETRAIN_RUNTIME_CPU_FUSED_LOOPS_H_
#define DETRAIN_RUNTIME_CPU_FUSED_LOOPS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/isa.h"
#include "base/status.h"
#include "compiler/codegen/cpu/fused_loop.h"

namespace detrain::runtime::cpu {

// The generated functions' environment (LoopPrelude's DtLoopEnv, the same layout).
struct DtLoopEnv {
  void (*unary)(int op, const float* in, float* out, int64_t n);
  void (*rule)(void* ctx, int64_t begin, int64_t n);  // the evaluator (the caller's ctx)
};

// A generated loop (codegen::cpu::LoopFunction).
using LoopFn = void (*)(const uint8_t* const* in, uint8_t* out, int64_t begin, int64_t end,
                        const DtLoopEnv* env, void* ctx);

class FusedLoops {
 public:
  // Loops compiled for `isa` (their crmath calls take that ISA's array forms) by `compiler`.
  explicit FusedLoops(Isa isa, std::string compiler = Compiler());
  ~FusedLoops();
  FusedLoops(const FusedLoops&) = delete;
  FusedLoops& operator=(const FusedLoops&) = delete;

  // The compiler run (DETRAIN_CXX_COMPILER, the one detrain was built with) and its flags.
  static std::string Compiler();

  // Asks for the loop of `spec` (codegen::cpu::CanGenerate holds for its program); Build writes
  // it to *slot, which must stay valid until then.
  void Request(const codegen::cpu::LoopSpec& spec, LoopFn* slot);

  // Compiles the functions requested since the last Build, loads them and fills their slots. An
  // error (no compiler, a failed compile: kUnavailable) leaves every slot of this Build as it
  // was; either way the requests are done with.
  Status Build();

  // crmath's array forms on the ISA (`unary` of the loops' environment; the caller adds `rule`).
  void (*unary() const)(int, const float*, float*, int64_t) { return unary_; }
  // The distinct functions requested so far, and the requests (kernels' programs).
  int64_t functions() const { return static_cast<int64_t>(names_.size()); }
  int64_t requests() const { return requests_; }
  // Functions loaded so far, and the compiles run (a Build the cache answered runs none).
  int64_t loaded() const { return static_cast<int64_t>(loaded_.size()); }
  int64_t compiles() const { return compiles_; }

 private:
  Status Compile();  // the unbuilt functions into a loaded library

  Isa isa_;
  std::string compiler_;
  void (*unary_)(int, const float*, float*, int64_t);
  std::map<std::string, std::string> names_;                  // function text (unnamed) -> its name
  std::map<std::string, LoopFn> loaded_;                      // name -> function
  std::vector<std::pair<std::string, LoopFn*>> pending_;      // (name, slot) since the last Build
  std::vector<std::pair<std::string, std::string>> unbuilt_;  // (name, text) since the last Build
  std::vector<void*> handles_;                                // dlopen'ed libraries
  int64_t requests_ = 0;
  int64_t compiles_ = 0;
};

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_FUSED_LOOPS_H_
