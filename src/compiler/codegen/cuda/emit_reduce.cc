// Elementwise kernels, reductions (reduce and reduction fusions) and reduce-window as device
// code. The canonical reduce order (semantics/orders.h, kPairwise64) is kept exactly:
//
//   - at most 64 reduced elements (one leaf): one thread per output, init combined with the
//     elements left to right;
//   - up to kMaxSharedLeaves leaves: one block per output; thread t computes leaves t, t + B,
//     ... (each init combined with its 64 elements left to right) into shared memory, then the
//     pairwise tree runs level by level — pairs (2j, 2j + 1) in index order, an odd last value
//     carried — between two shared arrays, with a barrier per level;
//   - more leaves: the leaves are computed by a grid over (output, leaf) into device scratch,
//     and a second kernel runs the same tree per output in scratch.
//
// reduce-window runs one thread per output: the window's taps in row-major order, padding
// skipped, in leaves of 64 and the tree over them (the window is small and its size known here).
#include <algorithm>

#include "compiler/codegen/cuda/writer.h"
#include "compiler/ir/shape.h"

namespace detrain::codegen::cuda::internal {
namespace {

namespace pb = plan::v2;

constexpr int64_t kLeaf = 64;  // semantics::kReduceLeafSize
constexpr int64_t kMaxSharedLeaves = 1024;

std::string Num(int64_t v) { return std::to_string(v); }

// A reduction of an operand index space to an output space, with callbacks for how an operand
// element is read, the initial value, and what is stored at an output.
struct Reduction {
  ir::ElementType type = ir::ElementType::kF32;
  std::vector<int64_t> operand_dims;
  std::vector<int64_t> reduced;  // ascending
  const plan::DecodedProgram* combiner = nullptr;
  std::function<void(KernelWriter&)> pointers;  // declarations at the top of each function
  std::function<std::string(KernelWriter&, const std::string&)> load;  // element at an index
  std::function<std::string(KernelWriter&)> init;                      // the initial value
  std::function<void(KernelWriter&, const std::string&, const std::string&)> store;  // (o, v)
};

struct ReduceShape {
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides;
  int64_t outputs = 1, per_output = 1;
  bool trailing = true;  // the reduced dims are exactly the trailing ones: contiguous runs
};

ReduceShape Shape(const Reduction& r) {
  ReduceShape s;
  const std::vector<int64_t> strides = ir::RowMajorStrides(r.operand_dims);
  std::vector<bool> red(r.operand_dims.size(), false);
  for (int64_t d : r.reduced) red[static_cast<size_t>(d)] = true;
  for (size_t d = 0; d < r.operand_dims.size(); ++d) {
    if (red[d]) {
      s.red_dims.push_back(r.operand_dims[d]);
      s.red_strides.push_back(strides[d]);
      s.per_output *= r.operand_dims[d];
    } else {
      s.kept_dims.push_back(r.operand_dims[d]);
      s.kept_strides.push_back(strides[d]);
      s.outputs *= r.operand_dims[d];
      if (d > 0 && red[d - 1]) s.trailing = false;
    }
  }
  return s;
}

// The operand offset of output `o`'s first element.
std::string Base(KernelWriter& w, const ReduceShape& s, const std::string& o) {
  if (s.trailing) return s.per_output == 1 ? o : o + " * " + Num(s.per_output);
  return Ravel(Unravel(w, o, s.kept_dims, "q"), s.kept_strides);
}

// The operand index of reduced element `r` of the output at `base`.
std::string At(KernelWriter& w, const ReduceShape& s, const std::string& base,
               const std::string& r) {
  if (s.trailing) return base == "0" ? r : base + " + " + r;
  return base + " + " + Ravel(Unravel(w, r, s.red_dims, "e"), s.red_strides);
}

// Writes the loop folding reduced elements [first, limit) of the output at `base` into `acc`.
void LeafLoop(KernelWriter& w, const Reduction& r, const ReduceShape& s, const std::string& first,
              const std::string& limit, const std::string& combine) {
  w.Open("for (I r = " + first + "; r < " + limit + "; ++r)");
  const std::string x = r.load(w, At(w, s, "base", "r"));
  w.Line("acc = " + combine + "(acc, " + x + ");");
  w.Close();
}

// Writes the pairwise tree over leaves[0][0, n) (two arrays of `stride` values each, at
// `src[k]` / `dst[k]` spelled by `at(level parity, index)`), a barrier after each level; returns
// the parity of the array that holds the root.
int WriteTree(KernelWriter& w, int64_t n, const std::string& combine,
              const std::function<std::string(int, const std::string&)>& at) {
  int src = 0;
  while (n > 1) {
    const int64_t pairs = n / 2;
    const int dst = src ^ 1;
    w.Line("for (I j = static_cast<I>(threadIdx.x); j < " + Num(pairs) +
           "; j += static_cast<I>(blockDim.x)) " + at(dst, "j") + " = " + combine + "(" +
           at(src, "2 * j") + ", " + at(src, "2 * j + 1") + ");");
    if (n % 2 == 1)
      w.Line("if (threadIdx.x == 0) " + at(dst, Num(pairs)) + " = " + at(src, Num(n - 1)) + ";");
    w.Line("__syncthreads();");
    n = pairs + n % 2;
    src = dst;
  }
  return src;
}

uint32_t TreeBlock(int64_t leaves) {
  uint32_t b = 32;
  while (b < kBlock && b < leaves) b *= 2;
  return b;
}

Status WriteReduction(KernelWriter& w, const Reduction& r) {
  const ReduceShape s = Shape(r);
  if (s.outputs == 0) return Status::Ok();
  const std::string t = CType(r.type);
  const std::string combine = WriteCombiner(w, *r.combiner, r.type);
  const int64_t leaves = (s.per_output + kLeaf - 1) / kLeaf;
  if (leaves <= 1) {
    w.BeginFunction(kBlock);
    r.pointers(w);
    w.Line("const " + t + " init = " + r.init(w) + ";");
    w.OpenGridStride("o", s.outputs);
    w.Line("const I base = " + Base(w, s, "o") + ";");
    w.Line(t + " acc = init;");
    LeafLoop(w, r, s, "0", Num(s.per_output), combine);
    r.store(w, "o", "acc");
    w.Close();
    const std::string f = w.EndFunction();
    w.LaunchElementwise(f, s.outputs);
    return Status::Ok();
  }
  auto leaf_body = [&](const std::string& leaf, const std::string& target) {
    w.Line(t + " acc = init;");
    w.Line("const I first = " + leaf + " * " + Num(kLeaf) + ";");
    w.Line("const I limit = first + " + Num(kLeaf) + " < " + Num(s.per_output) + " ? first + " +
           Num(kLeaf) + " : " + Num(s.per_output) + ";");
    LeafLoop(w, r, s, "first", "limit", combine);
    w.Line(target + " = acc;");
  };
  if (leaves <= kMaxSharedLeaves) {
    const uint32_t block = TreeBlock(leaves);
    w.BeginFunction(block);
    r.pointers(w);
    w.Line("const " + t + " init = " + r.init(w) + ";");
    w.Line("__shared__ " + t + " leaves[2][" + Num(leaves) + "];");
    w.Open("for (I o = static_cast<I>(blockIdx.x); o < " + Num(s.outputs) +
           "; o += static_cast<I>(gridDim.x))");
    w.Line("const I base = " + Base(w, s, "o") + ";");
    w.Open("for (I l = static_cast<I>(threadIdx.x); l < " + Num(leaves) +
           "; l += static_cast<I>(blockDim.x))");
    leaf_body("l", "leaves[0][l]");
    w.Close();
    w.Line("__syncthreads();");
    const int root = WriteTree(w, leaves, combine, [](int p, const std::string& k) {
      return "leaves[" + std::to_string(p) + "][" + k + "]";
    });
    w.Open("if (threadIdx.x == 0)");
    r.store(w, "o", "leaves[" + std::to_string(root) + "][0]");
    w.Close();
    w.Line("__syncthreads();");
    w.Close();
    const std::string f = w.EndFunction();
    w.LaunchKernel(f, std::min(s.outputs, kMaxBlocks), block);
    return Status::Ok();
  }
  // Leaves in scratch: [outputs][leaves], then the tree's odd levels in [outputs][half].
  const int64_t size = ir::ElementTypeByteSize(r.type);
  const int64_t half = (leaves + 1) / 2;
  w.NeedScratch((s.outputs * leaves + s.outputs * half) * size);
  w.BeginFunction(kBlock);
  r.pointers(w);
  w.Line("const " + t + " init = " + r.init(w) + ";");
  w.Line(t + "* __restrict__ leaves = reinterpret_cast<" + t + "*>(scratch);");
  w.OpenGridStride("task", s.outputs * leaves);
  w.Line("const I o = task / " + Num(leaves) + ";");
  w.Line("const I base = " + Base(w, s, "o") + ";");
  leaf_body("(task % " + Num(leaves) + ")", "leaves[task]");
  w.Close();
  const std::string fl = w.EndFunction();
  w.LaunchElementwise(fl, s.outputs * leaves);
  w.BeginFunction(kBlock);
  r.pointers(w);
  w.Line(t + "* __restrict__ leaves = reinterpret_cast<" + t + "*>(scratch);");
  w.Line(t + "* __restrict__ odd = leaves + " + Num(s.outputs * leaves) + ";");
  w.Open("for (I o = static_cast<I>(blockIdx.x); o < " + Num(s.outputs) +
         "; o += static_cast<I>(gridDim.x))");
  w.Line(t + "* level[2] = {leaves + o * " + Num(leaves) + ", odd + o * " + Num(half) + "};");
  const int root = WriteTree(w, leaves, combine, [](int p, const std::string& k) {
    return "level[" + std::to_string(p) + "][" + k + "]";
  });
  w.Open("if (threadIdx.x == 0)");
  r.store(w, "o", "level[" + std::to_string(root) + "][0]");
  w.Close();
  w.Line("__syncthreads();");
  w.Close();
  const std::string ft = w.EndFunction();
  w.LaunchKernel(ft, std::min(s.outputs, kMaxBlocks), kBlock);
  return Status::Ok();
}

// Pointers to every input; a one-element input is read once into s<i>.
void InputPointers(KernelWriter& w) {
  for (size_t i = 0; i < w.in().size(); ++i) {
    w.InputPointer(i, "in" + std::to_string(i));
    if (w.in()[i].elements == 1) {
      w.Line(std::string("const ") + CType(w.in()[i].type) + " s" + std::to_string(i) + " = in" +
             std::to_string(i) + "[0];");
    }
  }
  w.OutputPointer(0, "out");
}

// Input i at index `at` (s<i> for a one-element input).
std::string InputAt(const KernelWriter& w, int32_t i, const std::string& at) {
  return w.in()[static_cast<size_t>(i)].elements == 1 ? "s" + std::to_string(i)
                                                      : "in" + std::to_string(i) + "[" + at + "]";
}

// The reduction of a reduce spec the plan reader checked, with its decoded `combiner`.
Reduction MakeReduction(const pb::ReduceSpec& spec, ir::ElementType type,
                        const plan::DecodedProgram* combiner) {
  Reduction r;
  r.type = type;
  r.operand_dims.assign(spec.operand_dims().begin(), spec.operand_dims().end());
  r.reduced.assign(spec.dimensions().begin(), spec.dimensions().end());
  r.combiner = combiner;
  return r;
}

}  // namespace

Status EmitElementwise(KernelWriter& w) {
  const pb::ElementwiseSpec& spec = w.kernel().elementwise();
  const Array& out = w.out()[0];
  if (spec.has_reduce()) {
    const plan::DecodedProgram& pre = w.checked().pre;
    const plan::DecodedProgram& init = w.checked().init;
    const plan::DecodedProgram& post = w.checked().program;
    const ir::ElementType rtype = pre.ops[static_cast<size_t>(pre.result)].type;
    Reduction r = MakeReduction(spec.reduce(), rtype, &w.checked().combiner);
    r.pointers = InputPointers;
    r.load = [&pre](KernelWriter& kw, const std::string& at) {
      const std::string p = kw.Fresh("p");
      return WriteProgram(
          kw, pre, [&](int32_t i) { return InputAt(kw, i, at); }, "", p);
    };
    r.init = [&init](KernelWriter& kw) {
      return WriteProgram(
          kw, init, [&](int32_t i) { return "in" + std::to_string(i) + "[0]"; }, "", "i");
    };
    r.store = [&post](KernelWriter& kw, const std::string& o, const std::string& value) {
      const std::string p = kw.Fresh("y");
      const std::string result = WriteProgram(
          kw, post, [&](int32_t i) { return InputAt(kw, i, o); }, value, p);
      kw.Line("out[" + o + "] = " + result + ";");
    };
    return WriteReduction(w, r);
  }
  const plan::DecodedProgram& program = w.checked().program;
  if (out.elements == 0) return Status::Ok();
  std::vector<int64_t> elements;
  for (const Array& a : w.in()) elements.push_back(a.elements == 1 ? 1 : out.elements);
  const std::vector<uint8_t> uniform = plan::UniformOps(program, elements);
  std::vector<uint8_t> varying(uniform.size());
  for (size_t i = 0; i < uniform.size(); ++i) varying[i] = !uniform[i];
  w.BeginFunction(kBlock);
  InputPointers(w);
  auto input = [&](int32_t i) { return InputAt(w, i, "i"); };
  WriteProgram(w, program, input, "", "", &uniform);
  w.OpenGridStride("i", out.elements);
  const std::string result = WriteProgram(w, program, input, "", "", &varying);
  w.Line("out[i] = " + result + ";");
  w.Close();
  const std::string f = w.EndFunction();
  w.LaunchElementwise(f, out.elements);
  return Status::Ok();
}

Status EmitReduce(KernelWriter& w) {
  Reduction r = MakeReduction(w.kernel().reduce(), w.in()[0].type, &w.checked().combiner);
  r.pointers = [](KernelWriter& kw) {
    kw.InputPointer(0, "in0");
    kw.InputPointer(1, "in1");
    kw.OutputPointer(0, "out");
  };
  r.load = [](KernelWriter&, const std::string& at) { return "in0[" + at + "]"; };
  r.init = [](KernelWriter&) { return std::string("in1[0]"); };
  r.store = [](KernelWriter& kw, const std::string& o, const std::string& value) {
    kw.Line("out[" + o + "] = " + value + ";");
  };
  return WriteReduction(w, r);
}

Status EmitReduceWindow(KernelWriter& w) {
  const pb::ReduceWindowSpec& spec = w.kernel().reduce_window();
  const Array& in = w.in()[0];
  const Array& out = w.out()[0];
  const size_t rank = in.dims.size();
  // Each thread keeps a window's leaves in a local array: at most 2^20 taps.
  int64_t taps = 1;
  std::vector<int64_t> sizes;
  for (const pb::WindowDim& d : spec.window()) {
    if (taps > (int64_t{1} << 20) / d.size()) return BadSpec(w, "reduce-window window");
    taps *= d.size();
    sizes.push_back(d.size());
  }
  const ir::ElementType type = w.in()[0].type;
  const plan::DecodedProgram& combiner = w.checked().combiner;
  if (out.elements == 0) return Status::Ok();
  const std::string t = CType(type);
  const std::string combine = WriteCombiner(w, combiner, type);
  const int64_t leaves = (taps + kLeaf - 1) / kLeaf;
  w.BeginFunction(kBlock);
  w.InputPointer(0, "in0");
  w.InputPointer(1, "in1");
  w.OutputPointer(0, "out");
  w.Line("const " + t + " init = in1[0];");
  w.OpenGridStride("o", out.elements);
  const std::vector<std::string> oi = Unravel(w, "o", out.dims, "q");
  // The window's taps, row-major; valid ones fold into the current leaf, which is closed every
  // 64 values (semantics::CanonicalReduce over the valid values).
  w.Line(t + " leaves[" + Num(leaves) + "];");
  w.Line("I count = 0;");
  w.Line(t + " acc = init;");
  w.Open("for (I tap = 0; tap < " + Num(taps) + "; ++tap)");
  const std::vector<std::string> ti = Unravel(w, "tap", sizes, "t");
  const std::vector<int64_t> strides = ir::RowMajorStrides(in.dims);
  std::vector<std::string> pos(rank);
  for (size_t d = 0; d < rank; ++d) {
    const pb::WindowDim& wd = spec.window(static_cast<int>(d));
    pos[d] = w.Fresh("p");
    w.Line("const long long " + pos[d] + " = static_cast<long long>(" + oi[d] + ") * " +
           Num(wd.stride()) + " + static_cast<long long>(" + ti[d] + ") * " + Num(wd.rhs_dilate()) +
           " - " + Num(wd.pad_lo()) + ";");
    std::string inside = pos[d] + " < 0";
    if (wd.lhs_dilate() != 1) inside += " || " + pos[d] + " % " + Num(wd.lhs_dilate()) + " != 0";
    inside += " || " + pos[d] + " / " + Num(wd.lhs_dilate()) + " >= " + Num(in.dims[d]);
    w.Line("if (" + inside + ") continue;");
  }
  std::vector<std::string> src(rank);
  for (size_t d = 0; d < rank; ++d) {
    const pb::WindowDim& wd = spec.window(static_cast<int>(d));
    src[d] = wd.lhs_dilate() == 1 ? pos[d] : "(" + pos[d] + " / " + Num(wd.lhs_dilate()) + ")";
  }
  w.Line("acc = " + combine + "(acc, in0[" + Ravel(src, strides) + "]);");
  w.Open("if (++count % " + Num(kLeaf) + " == 0)");
  w.Line("leaves[count / " + Num(kLeaf) + " - 1] = acc;");
  w.Line("acc = init;");
  w.Close();
  w.Close();
  // The last, partial leaf; no valid value at all gives init.
  w.Line("I n = (count + " + Num(kLeaf - 1) + ") / " + Num(kLeaf) + ";");
  w.Line("if (count % " + Num(kLeaf) + " != 0) leaves[n - 1] = acc;");
  w.Line("if (n == 0) leaves[n++] = init;");
  w.Line("out[o] = sem::PairwiseTreeInPlace(leaves, static_cast<int64_t>(n), " + combine + ");");
  w.Close();
  const std::string f = w.EndFunction();
  w.LaunchElementwise(f, out.elements);
  return Status::Ok();
}

}  // namespace detrain::codegen::cuda::internal
