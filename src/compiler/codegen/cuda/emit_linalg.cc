// dot and convolution as one tiled SIMT GEMM (docs/cuda.md "GEMM"): a block of 256 threads owns
// a 64 x 64 tile of outputs, each thread a 4 x 4 register tile (rows ty + 16 r, columns
// tx + 16 c); k advances in steps of 16 through shared-memory tiles of both operands. Every
// output's value is one chain acc = fmaf(a[k], b[k], acc) from +0 over k ascending — tiles and
// threads split only outputs, and a k tile shorter than 16 runs only its kc steps, so no padding
// term enters a chain. A chain that ends in NaN is recomputed with semantics::Fma, which fixes
// the NaN's payload (the hardware's is not IEEE-specified). No tensor cores: they do not round
// each step.
//
// A convolution is the same GEMM over its im2col view (semantics/orders.h): rows are output
// positions (batch, then spatial row-major), k is (window tap row-major, then input feature),
// columns are output features; the input reads +0 at padding and dilation holes.
#include <algorithm>

#include "compiler/codegen/cuda/writer.h"
#include "compiler/ir/shape.h"
#include "compiler/plan/dot_view.h"

namespace detrain::codegen::cuda::internal {
namespace {

namespace pb = plan::v2;

constexpr int64_t kTile = 64;  // outputs per block side
constexpr int64_t kStep = 16;  // k per shared tile; also threads per block side
constexpr int64_t kRegs = 4;   // outputs per thread side

std::string Num(int64_t v) { return std::to_string(v); }

// Writes the index lines of an operand element and returns its load expression; `guard`
// receives an extra condition that must hold for the load (convolution padding), or stays empty.
using Element = std::function<std::string(KernelWriter&, const std::string& b, const std::string& x,
                                          const std::string& y, std::string* guard)>;

struct Gemm {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  ir::ElementType type = ir::ElementType::kF32;
  Element a;      // (b, i, kk)
  Element b;      // (b, kk, j)
  Element store;  // (b, i, j): the output element's lvalue
  // The sizes as the function spells them: constants, or names of arguments the pointers
  // callback declares (then one function serves every size).
  std::string batch_expr, m_expr, n_expr, k_expr;
};

// `guard ? load : 0` with the guard's parts joined.
std::string Guarded(const std::string& bounds, const std::string& guard, const std::string& load,
                    const std::string& zero) {
  const std::string cond = guard.empty() ? bounds : bounds + " && " + guard;
  return "(" + cond + ") ? " + load + " : " + zero;
}

void WriteGemm(KernelWriter& w, const Gemm& g, const std::function<void(KernelWriter&)>& pointers) {
  const std::string t = CType(g.type);
  const bool f32 = g.type == ir::ElementType::kF32;
  const std::string zero = f32 ? "0.0f" : "static_cast<" + t + ">(0)";
  const int64_t row_tiles = (g.m + kTile - 1) / kTile, col_tiles = (g.n + kTile - 1) / kTile;
  const std::string B = g.batch_expr.empty() ? Num(g.batch) : g.batch_expr;
  const std::string M = g.m_expr.empty() ? Num(g.m) : g.m_expr;
  const std::string N = g.n_expr.empty() ? Num(g.n) : g.n_expr;
  const std::string K = g.k_expr.empty() ? Num(g.k) : g.k_expr;
  const std::string rows = g.m_expr.empty() ? Num(row_tiles) : "(" + M + " + 63) / 64";
  const std::string cols = g.n_expr.empty() ? Num(col_tiles) : "(" + N + " + 63) / 64";
  w.BeginFunction(kStep * kStep);
  pointers(w);
  w.Line("__shared__ " + t + " As[" + Num(kStep) + "][" + Num(kTile) + "];");
  w.Line("__shared__ " + t + " Bs[" + Num(kStep) + "][" + Num(kTile) + "];");
  w.Line("const I tx = static_cast<I>(threadIdx.x) % " + Num(kStep) + ";");
  w.Line("const I ty = static_cast<I>(threadIdx.x) / " + Num(kStep) + ";");
  w.Open("for (I b = static_cast<I>(blockIdx.z); b < " + B + "; b += static_cast<I>(gridDim.z))");
  w.Open("for (I by = static_cast<I>(blockIdx.y); by < " + rows +
         "; by += static_cast<I>(gridDim.y))");
  w.Open("for (I bx = static_cast<I>(blockIdx.x); bx < " + cols +
         "; bx += static_cast<I>(gridDim.x))");
  w.Line("const I i0 = by * " + Num(kTile) + ", j0 = bx * " + Num(kTile) + ";");
  w.Line(t + " acc[" + Num(kRegs) + "][" + Num(kRegs) + "];");
  w.Line("for (int r = 0; r < " + Num(kRegs) + "; ++r) for (int c = 0; c < " + Num(kRegs) +
         "; ++c) acc[r][c] = " + zero + ";");
  w.Open("for (I k0 = 0; k0 < " + K + "; k0 += " + Num(kStep) + ")");
  w.Line("const I kc = " + K + " - k0 < " + Num(kStep) + " ? " + K + " - k0 : " + Num(kStep) + ";");
  // The A tile, k fastest (a row-major operand's contiguous direction), then the B tile, j
  // fastest.
  w.Open("for (I e = static_cast<I>(threadIdx.x); e < " + Num(kTile * kStep) +
         "; e += " + Num(kStep * kStep) + ")");
  w.Line("const I ai = e / " + Num(kStep) + ", ak = e % " + Num(kStep) + ";");
  w.Line("const I i = i0 + ai, kk = k0 + ak;");
  {
    std::string guard;
    const std::string load = g.a(w, "b", "i", "kk", &guard);
    w.Line("As[ak][ai] = " + Guarded("i < " + M + " && ak < kc", guard, load, zero) + ";");
  }
  w.Close();
  w.Open("for (I e = static_cast<I>(threadIdx.x); e < " + Num(kTile * kStep) +
         "; e += " + Num(kStep * kStep) + ")");
  w.Line("const I bk = e / " + Num(kTile) + ", bj = e % " + Num(kTile) + ";");
  w.Line("const I kk = k0 + bk, j = j0 + bj;");
  {
    std::string guard;
    const std::string load = g.b(w, "b", "kk", "j", &guard);
    w.Line("Bs[bk][bj] = " + Guarded("j < " + N + " && bk < kc", guard, load, zero) + ";");
  }
  w.Close();
  w.Line("__syncthreads();");
  w.Open("for (I kk = 0; kk < kc; ++kk)");
  w.Line(t + " av[" + Num(kRegs) + "], bv[" + Num(kRegs) + "];");
  w.Line("for (int r = 0; r < " + Num(kRegs) + "; ++r) av[r] = As[kk][ty + " + Num(kStep) +
         " * r];");
  w.Line("for (int c = 0; c < " + Num(kRegs) + "; ++c) bv[c] = Bs[kk][tx + " + Num(kStep) +
         " * c];");
  w.Line("for (int r = 0; r < " + Num(kRegs) + "; ++r) for (int c = 0; c < " + Num(kRegs) +
         "; ++c) acc[r][c] = " +
         (f32 ? std::string("fmaf(av[r], bv[c], acc[r][c]);")
              : "sem::MultiplyAccumulate<" + t + ">(av[r], bv[c], acc[r][c]);"));
  w.Close();
  w.Line("__syncthreads();");
  w.Close();  // k0
  w.Open("for (int r = 0; r < " + Num(kRegs) + "; ++r)");
  w.Open("for (int c = 0; c < " + Num(kRegs) + "; ++c)");
  w.Line("const I i = i0 + ty + " + Num(kStep) + " * r, j = j0 + tx + " + Num(kStep) + " * c;");
  w.Line("if (i >= " + M + " || j >= " + N + ") continue;");
  w.Line(t + " v = acc[r][c];");
  if (f32) {
    // A NaN result: the chain again with the defined NaN rule (semantics::Fma).
    w.Open("if (v != v)");
    w.Line("v = 0.0f;");
    w.Open("for (I kk = 0; kk < " + K + "; ++kk)");
    std::string ga, gb;
    const std::string la = g.a(w, "b", "i", "kk", &ga);
    const std::string lb = g.b(w, "b", "kk", "j", &gb);
    const std::string xa = ga.empty() ? la : "(" + ga + ") ? " + la + " : 0.0f";
    const std::string xb = gb.empty() ? lb : "(" + gb + ") ? " + lb + " : 0.0f";
    w.Line("v = sem::Fma(" + xa + ", " + xb + ", v);");
    w.Close();
    w.Close();
  }
  std::string unused;
  const std::string target = g.store(w, "b", "i", "j", &unused);
  w.Line(target + " = v;");
  w.Close();
  w.Close();
  w.Close();  // bx
  w.Close();  // by
  w.Close();  // b
  const std::string f = w.EndFunction();
  w.LaunchKernel(f, std::min<int64_t>(col_tiles, INT32_MAX), kStep * kStep,
                 std::min(row_tiles, kMaxBlocks), std::min(g.batch, kMaxBlocks));
}

// The offset expression of element (x0, x1, x2) of a dot operand's canonical view.
std::string ViewOffset(KernelWriter& w, const Array& a, const std::vector<int64_t>& perm,
                       const std::array<int64_t, 3>& sizes, const std::string& x0,
                       const std::string& x1, const std::string& x2) {
  if (auto s = plan::DotGroupStrides(a.dims, perm, sizes)) {
    return Ravel({x0, x1, x2}, {(*s)[0], (*s)[1], (*s)[2]});
  }
  // The general view: the linear view index unravelled over the permuted dims.
  std::vector<int64_t> permuted, strides;
  const std::vector<int64_t> operand_strides = ir::RowMajorStrides(a.dims);
  for (int64_t p : perm) {
    permuted.push_back(a.dims[static_cast<size_t>(p)]);
    strides.push_back(operand_strides[static_cast<size_t>(p)]);
  }
  const std::string linear = "((" + x0 + ") * " + std::to_string(sizes[1]) + " + (" + x1 + ")) * " +
                             std::to_string(sizes[2]) + " + (" + x2 + ")";
  return Ravel(Unravel(w, linear, permuted, "v"), strides);
}

}  // namespace

Status EmitDot(KernelWriter& w) {
  const pb::DotSpec& s = w.kernel().dot();
  const Array& lhs = w.in()[0];
  const Array& rhs = w.in()[1];
  const Array& out = w.out()[0];
  std::vector<int64_t> lp(s.lhs_permutation().begin(), s.lhs_permutation().end());
  std::vector<int64_t> rp(s.rhs_permutation().begin(), s.rhs_permutation().end());
  if (out.elements == 0) return Status::Ok();
  Gemm g;
  g.batch = s.batch();
  g.m = s.m();
  g.n = s.n();
  g.k = s.k();
  g.type = out.type;
  const std::array<int64_t, 3> ls{s.batch(), s.m(), s.k()}, rs{s.batch(), s.k(), s.n()};
  const auto lstrides = plan::DotGroupStrides(lhs.dims, lp, ls);
  const auto rstrides = plan::DotGroupStrides(rhs.dims, rp, rs);
  if (lstrides && rstrides) {
    // Both operands are strided views: one function for every dot of this element type, its
    // sizes and strides arguments.
    g.batch_expr = "B";
    g.m_expr = "M";
    g.n_expr = "N";
    g.k_expr = "K";
    g.a = [](KernelWriter&, const std::string& b, const std::string& i, const std::string& kk,
             std::string*) { return "lhs[" + b + " * a_b + " + i + " * a_m + " + kk + " * a_k]"; };
    g.b = [](KernelWriter&, const std::string& b, const std::string& kk, const std::string& j,
             std::string*) { return "rhs[" + b + " * b_b + " + kk + " * b_k + " + j + " * b_n]"; };
    g.store = [](KernelWriter&, const std::string& b, const std::string& i, const std::string& j,
                 std::string*) { return "out[(" + b + " * M + " + i + ") * N + " + j + "]"; };
    WriteGemm(w, g, [&](KernelWriter& kw) {
      kw.InputPointer(0, "lhs");
      kw.InputPointer(1, "rhs");
      kw.OutputPointer(0, "out");
      // One argument per statement: the order of Arg calls is the arguments' order.
      const std::vector<int64_t> values = {
          s.batch(),      s.m(),          s.n(),          s.k(),          (*lstrides)[0],
          (*lstrides)[1], (*lstrides)[2], (*rstrides)[0], (*rstrides)[1], (*rstrides)[2]};
      const char* names[] = {"B", "M", "N", "K", "a_b", "a_m", "a_k", "b_b", "b_k", "b_n"};
      for (size_t i = 0; i < values.size(); ++i) {
        const std::string arg = kw.Arg(values[i]);
        kw.Line(std::string("const I ") + names[i] + " = static_cast<I>(" + arg + ");");
      }
    });
    return Status::Ok();
  }
  g.a = [&, lp, ls](KernelWriter& kw, const std::string& b, const std::string& i,
                    const std::string& kk,
                    std::string*) { return "lhs[" + ViewOffset(kw, lhs, lp, ls, b, i, kk) + "]"; };
  g.b = [&, rp, rs](KernelWriter& kw, const std::string& b, const std::string& kk,
                    const std::string& j,
                    std::string*) { return "rhs[" + ViewOffset(kw, rhs, rp, rs, b, kk, j) + "]"; };
  g.store = [&](KernelWriter&, const std::string& b, const std::string& i, const std::string& j,
                std::string*) {
    return "out[" + Ravel({b, i, j}, {s.m() * s.n(), s.n(), 1}) + "]";
  };
  WriteGemm(w, g, [](KernelWriter& kw) {
    kw.InputPointer(0, "lhs");
    kw.InputPointer(1, "rhs");
    kw.OutputPointer(0, "out");
  });
  return Status::Ok();
}

Status EmitConvolution(KernelWriter& w) {
  const pb::ConvolutionSpec& s = w.kernel().convolution();
  const Array& in = w.in()[0];
  const Array& kernel = w.in()[1];
  const Array& out = w.out()[0];
  const size_t rank = in.dims.size();
  const size_t ns = static_cast<size_t>(s.window_size());
  if (out.elements == 0) return Status::Ok();
  // Rows: (batch, output spatial...) row-major; k: (taps..., feature); columns: output features.
  std::vector<int64_t> row_dims{out.dims[static_cast<size_t>(s.out_batch())]};
  std::vector<int64_t> k_dims;
  for (size_t i = 0; i < ns; ++i) {
    row_dims.push_back(out.dims[static_cast<size_t>(s.out_spatial(static_cast<int>(i)))]);
    k_dims.push_back(s.window(static_cast<int>(i)).size());
  }
  const int64_t features = in.dims[static_cast<size_t>(s.in_feature())];
  k_dims.push_back(features);
  Gemm g;
  g.m = 1;
  for (int64_t d : row_dims) g.m *= d;
  g.k = 1;
  for (int64_t d : k_dims) g.k *= d;
  g.n = out.dims[static_cast<size_t>(s.out_feature())];
  g.type = ir::ElementType::kF32;
  const std::vector<int64_t> in_strides = ir::RowMajorStrides(in.dims),
                             k_strides = ir::RowMajorStrides(kernel.dims),
                             out_strides = ir::RowMajorStrides(out.dims);
  g.a = [&, row_dims, k_dims, in_strides](KernelWriter& kw, const std::string&,
                                          const std::string& i, const std::string& kk,
                                          std::string* guard) {
    const std::vector<std::string> row = Unravel(kw, i, row_dims, "m");
    const std::vector<std::string> tap = Unravel(kw, kk, k_dims, "k");
    std::vector<std::string> index(rank, "0");
    index[static_cast<size_t>(s.in_batch())] = row[0];
    index[static_cast<size_t>(s.in_feature())] = tap[ns];
    std::string cond;
    for (size_t d = 0; d < ns; ++d) {
      const pb::WindowDim& wd = s.window(static_cast<int>(d));
      const std::string p = kw.Fresh("x");
      kw.Line("const long long " + p + " = static_cast<long long>(" + row[d + 1] + ") * " +
              Num(wd.stride()) + " + static_cast<long long>(" + tap[d] + ") * " +
              Num(wd.rhs_dilate()) + " - " + Num(wd.pad_lo()) + ";");
      const int64_t limit = in.dims[static_cast<size_t>(s.in_spatial(static_cast<int>(d)))];
      std::string c = p + " >= 0";
      if (wd.lhs_dilate() != 1) c += " && " + p + " % " + Num(wd.lhs_dilate()) + " == 0";
      c += " && " + p + " / " + Num(wd.lhs_dilate()) + " < " + Num(limit);
      cond += (cond.empty() ? "" : " && ") + c;
      index[static_cast<size_t>(s.in_spatial(static_cast<int>(d)))] =
          wd.lhs_dilate() == 1 ? p : "(" + p + " / " + Num(wd.lhs_dilate()) + ")";
    }
    *guard = cond;
    return "in[" + Ravel(index, in_strides) + "]";
  };
  g.b = [&, k_dims, k_strides](KernelWriter& kw, const std::string&, const std::string& kk,
                               const std::string& j, std::string*) {
    const std::vector<std::string> tap = Unravel(kw, kk, k_dims, "k");
    std::vector<std::string> index(rank, "0");
    for (size_t d = 0; d < ns; ++d)
      index[static_cast<size_t>(s.k_spatial(static_cast<int>(d)))] = tap[d];
    index[static_cast<size_t>(s.k_in())] = tap[ns];
    index[static_cast<size_t>(s.k_out())] = j;
    return "w[" + Ravel(index, k_strides) + "]";
  };
  g.store = [&, row_dims, out_strides](KernelWriter& kw, const std::string&, const std::string& i,
                                       const std::string& j, std::string*) {
    const std::vector<std::string> row = Unravel(kw, i, row_dims, "m");
    std::vector<std::string> index(rank, "0");
    index[static_cast<size_t>(s.out_batch())] = row[0];
    for (size_t d = 0; d < ns; ++d)
      index[static_cast<size_t>(s.out_spatial(static_cast<int>(d)))] = row[d + 1];
    index[static_cast<size_t>(s.out_feature())] = j;
    return "out[" + Ravel(index, out_strides) + "]";
  };
  WriteGemm(w, g, [](KernelWriter& kw) {
    kw.InputPointer(0, "in");
    kw.InputPointer(1, "w");
    kw.OutputPointer(0, "out");
  });
  return Status::Ok();
}

}  // namespace detrain::codegen::cuda::internal
