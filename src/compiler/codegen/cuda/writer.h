// Internal to the CUDA code generator (cuda_program.h): the writer of one plan kernel's device
// functions and launches, and the helpers every emitter shares — C++ spellings of element types,
// index arithmetic with constant dimensions, and scalar programs as straight-line code.
//
// Emitters (emit_*.cc) take a KernelWriter for one plan kernel and write its functions through
// it; the writer keeps the text's indentation, turns every arena offset into an argument
// (args[i]) and records each launch with its arguments. A finished function whose text equals
// one written before (for any plan kernel) is not written again: the launch names the earlier
// one. Index variables have the kernel's index type `I` (int when every array the kernel
// touches has at most 2^30 elements, else long long).
//
// Thread safety: a writer is used by one thread. Determinism: text and launches are functions of
// the plan kernel and its buffers.
#ifndef DETRAIN_COMPILER_CODEGEN_CUDA_WRITER_H_
#define DETRAIN_COMPILER_CODEGEN_CUDA_WRITER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "compiler/codegen/cuda/cuda_program.h"
#include "compiler/ir/element_type.h"
#include "compiler/plan/reader.h"
#include "compiler/plan/scalar_program.h"
#include "schemas/plan.pb.h"

namespace detrain::codegen::cuda::internal {

// A buffer of the validated plan as the generated code sees it: its offset is in the device's
// arena (a loop's sub-plan lies at its region).
using Array = plan::Array;

// "float", "int32_t", ...; and the unsigned type of the same size ("uint8_t", "uint32_t",
// "uint64_t"), used where only bits move.
const char* CType(ir::ElementType type);
const char* BitsType(ir::ElementType type);

// Threads per block of the one-thread-per-element kernels, and the most blocks a grid-stride
// loop is launched with.
inline constexpr uint32_t kBlock = 256;
inline constexpr int64_t kMaxBlocks = 65535;

// The functions written so far for a whole program, each once.
struct ProgramText {
  std::string body;
  std::map<std::string, std::string> names;  // function text (name left out) -> its name
  int functions = 0, helpers = 0;
};

class KernelWriter {
 public:
  // `kernel` of a validated plan whose arena lies at `base` of the device's arena.
  KernelWriter(const plan::CheckedKernel& kernel, int64_t base, ProgramText* text,
               std::vector<Launch>* launches, int64_t* scratch_bytes);

  const plan::v2::Kernel& kernel() const { return *checked_.spec; }
  // The kernel as the plan reader checked it: its decoded scalar programs.
  const plan::CheckedKernel& checked() const { return checked_; }
  const std::vector<Array>& in() const { return in_; }
  const std::vector<Array>& out() const { return out_; }
  // The index type's spelling: "int" or "long long".
  const char* index_type() const { return wide_ ? "long long" : "int"; }

  // Starts `extern "C" __global__ void NAME(arena, scratch, args)` with `block` threads per
  // block; the body is written with Line until EndFunction, which returns the function's name.
  void BeginFunction(uint32_t block);
  std::string EndFunction();
  // A device helper (a combiner): `result` and `params` of its declaration; EndHelper returns
  // its name.
  void BeginHelper(const std::string& result, const std::string& params);
  std::string EndHelper();

  // "args[i]": the next argument of the current function, whose value in this launch is `value`.
  std::string Arg(int64_t value);

  // One line of the body at the current depth; Open/Close add a brace and change the depth.
  void Line(const std::string& line);
  void Open(const std::string& line);  // writes "line {"
  void Close(const std::string& tail = "");

  // `const T* name = reinterpret_cast<const T*>(arena + args[k]);` for input i (output o).
  std::string InputPointer(size_t i, const std::string& name);
  std::string OutputPointer(size_t o, const std::string& name);

  // A grid-stride loop over [0, n): `for (I var = ...; var < n; var += ...) {` (closed by Close).
  void OpenGridStride(const std::string& var, int64_t n);

  // Records launches (in call order); a kernel launch passes the arguments of the function
  // ended last.
  void LaunchKernel(const std::string& function, int64_t blocks_x, uint32_t block,
                    int64_t blocks_y = 1, int64_t blocks_z = 1);
  void LaunchCopy(int64_t src, int64_t dst, int64_t bytes);
  void LaunchConstant(int64_t dst, int64_t bytes);
  // The launch of a one-thread-per-element grid-stride kernel over n elements.
  void LaunchElementwise(const std::string& function, int64_t n);

  // Asks for `bytes` of device scratch (the largest request of any kernel is allocated).
  void NeedScratch(int64_t bytes);

  // A fresh variable name with `prefix` (unique in this kernel).
  std::string Fresh(const std::string& prefix);

 private:
  void Write(const std::string& line);
  std::string Finish(const std::string& prefix, int* counter);

  const plan::CheckedKernel& checked_;
  std::vector<Array> in_, out_;
  ProgramText* text_;
  std::string current_;  // the function or helper being written; its name is kName
  std::vector<int64_t> args_, last_args_;
  std::vector<Launch>* launches_;
  int64_t* scratch_bytes_;
  bool wide_ = false;
  int depth_ = 0;
  int fresh_ = 0;
};

// Writes lines that unravel linear index `linear` over `dims` into one variable per dim and
// returns their names ("0" for a dim of size 1, which has no variable).
std::vector<std::string> Unravel(KernelWriter& w, const std::string& linear,
                                 const std::vector<int64_t>& dims, const std::string& prefix);

// The expression sum(index[d] * strides[d]) ("0" when every term is zero).
std::string Ravel(const std::vector<std::string>& index, const std::vector<int64_t>& strides);

// The typed literal of `bits` (a constant's little-endian bits, zero-extended) in device code.
std::string Literal(ir::ElementType type, uint64_t bits);

// Writes `program` as `const T v<i> = ...;` lines and returns the result's variable name.
// `input(i)` is the expression of input i at the current index; `reduced` the REDUCED value's
// expression (empty when the program has none). `emit`, when given, limits the lines to the
// ops it marks (their arguments must be written already, e.g. before an enclosing loop); ops
// are named `<prefix>v<i>`.
std::string WriteProgram(KernelWriter& w, const plan::DecodedProgram& program,
                         const std::function<std::string(int32_t)>& input,
                         const std::string& reduced, const std::string& prefix,
                         const std::vector<uint8_t>* emit = nullptr);

// Writes a device function `T NAME(T a, T b)` evaluating `combiner` (inputs: accumulator a,
// element b) and returns its name; write it before the function that calls it.
std::string WriteCombiner(KernelWriter& w, const plan::DecodedProgram& combiner,
                          ir::ElementType type);

// The emitters, one per family of specs (emit_*.cc). Each writes the kernel's functions and
// launches for a kernel the plan reader validated; what an emitter still refuses is a limit of
// its own device code (an error naming the kernel).
Status EmitElementwise(KernelWriter& w);   // elementwise and reduction fusions
Status EmitReduce(KernelWriter& w);        // reduce
Status EmitReduceWindow(KernelWriter& w);  // reduce-window
Status EmitDot(KernelWriter& w);
Status EmitConvolution(KernelWriter& w);
Status EmitMovement(KernelWriter& w);  // transpose .. dynamic-update-slice, iota, copy, constant
Status EmitGather(KernelWriter& w);
Status EmitScatter(KernelWriter& w);
Status EmitThreefry(KernelWriter& w);

// The error for a spec the generated code cannot run.
Status BadSpec(const KernelWriter& w, const std::string& what);

}  // namespace detrain::codegen::cuda::internal

#endif  // DETRAIN_COMPILER_CODEGEN_CUDA_WRITER_H_
