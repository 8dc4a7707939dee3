// Data movement, indexing and threefry as device code. Every element of the result is written
// by one thread from the element it copies (bits only, typed by size): transpose, broadcast,
// slice, reverse, dynamic-slice, pad, concatenate, dynamic-update-slice and gather map an output
// index to its source; iota writes its index; reshape and constants are copies. Index semantics
// are the interpreter's (docs/ir.md): dynamic starts and gather starts are clamped so that the
// window fits; scatter skips an update whose window would leave the operand.
//
// scatter applies its combiner once per update in row-major update order (kUpdateOrder). When
// the index vectors address only inserted dims, every update element's target is fixed by its
// window position, so one thread per window position walks the updates in order and the targets
// of different threads are disjoint; otherwise one thread applies every update in order.
#include <algorithm>

#include "compiler/codegen/cuda/writer.h"
#include "compiler/ir/shape.h"

namespace detrain::codegen::cuda::internal {
namespace {

namespace pb = plan::v2;

std::string Num(int64_t v) { return std::to_string(v); }

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// `const B* in<i>` for the first `inputs` inputs and `B* out`, with B the bits type of the
// element size.
void BitsPointers(KernelWriter& w, size_t inputs) {
  for (size_t i = 0; i < inputs; ++i) {
    const Array& a = w.in()[i];
    const char* t = BitsType(a.type);
    w.Line(std::string("const ") + t + "* __restrict__ in" + std::to_string(i) +
           " = reinterpret_cast<const " + t + "*>(arena + " + w.Arg(a.offset) + ");");
  }
  const char* t = BitsType(w.out()[0].type);
  w.Line(std::string(t) + "* __restrict__ out = reinterpret_cast<" + t + "*>(arena + " +
         w.Arg(w.out()[0].offset) + ");");
}

// The index value of one-element integer input `i`, as the interpreter's ReadIndex reads it.
std::string IndexScalar(KernelWriter& w, size_t i) {
  return std::string("dt::IndexValue(*reinterpret_cast<const ") + CType(w.in()[i].type) +
         "*>(arena + " + w.Arg(w.in()[i].offset) + "))";
}

// A one-thread-per-output kernel reading its first `inputs` inputs as data: `body` writes the
// lines that set `out[o]` from the output index variables.
void PerOutput(KernelWriter& w, size_t inputs,
               const std::function<void(KernelWriter&, const std::vector<std::string>&)>& body,
               const std::function<void(KernelWriter&)>& prologue = nullptr) {
  const Array& out = w.out()[0];
  if (out.elements == 0) return;
  w.BeginFunction(kBlock);
  BitsPointers(w, inputs);
  if (prologue) prologue(w);
  w.OpenGridStride("o", out.elements);
  body(w, Unravel(w, "o", out.dims, "q"));
  w.Close();
  const std::string f = w.EndFunction();
  w.LaunchElementwise(f, out.elements);
}

// Clamped dynamic starts of inputs [first, first + rank) for a window of `sizes` in `dims`,
// written as `const long long d<k>` lines in the prologue.
void DynamicStarts(KernelWriter& w, size_t first, const std::vector<int64_t>& dims,
                   const std::vector<int64_t>& sizes) {
  for (size_t d = 0; d < dims.size(); ++d) {
    w.Line("const long long d" + Num(static_cast<int64_t>(d)) + " = dt::Clamp(" +
           IndexScalar(w, first + d) + ", 0ll, " + Num(dims[d] - sizes[d]) + "ll);");
  }
}

Status EmitAffine(KernelWriter& w) {
  const pb::Kernel& k = w.kernel();
  const Array& src = w.in()[0];
  const Array& out = w.out()[0];
  const size_t rank = out.dims.size();
  const std::vector<int64_t> strides = ir::RowMajorStrides(src.dims);
  if (k.has_broadcast()) {
    const auto& dims = k.broadcast().dimensions();
    PerOutput(w, 1, [&](KernelWriter& kw, const std::vector<std::string>& idx) {
      std::vector<std::string> from;
      for (int64_t d : dims) from.push_back(idx[static_cast<size_t>(d)]);
      kw.Line("out[o] = in0[" + Ravel(from, strides) + "];");
    });
    return Status::Ok();
  }
  if (k.has_transpose()) {
    std::vector<int64_t> perm(k.transpose().permutation().begin(),
                              k.transpose().permutation().end());
    PerOutput(w, 1, [&](KernelWriter& kw, const std::vector<std::string>& idx) {
      std::vector<std::string> from(rank);
      for (size_t i = 0; i < rank; ++i) from[static_cast<size_t>(perm[i])] = idx[i];
      kw.Line("out[o] = in0[" + Ravel(from, strides) + "];");
    });
    return Status::Ok();
  }
  if (k.has_slice()) {
    const pb::SliceSpec& s = k.slice();
    PerOutput(w, 1, [&](KernelWriter& kw, const std::vector<std::string>& idx) {
      std::vector<std::string> from(rank);
      int64_t base = 0;
      std::vector<int64_t> step(rank);
      for (size_t d = 0; d < rank; ++d) {
        base += s.starts(static_cast<int>(d)) * strides[d];
        step[d] = strides[d] * s.strides(static_cast<int>(d));
      }
      const std::string r = Ravel(idx, step);
      kw.Line("out[o] = in0[" + (base == 0 ? r : Num(base) + " + " + r) + "];");
    });
    return Status::Ok();
  }
  if (k.has_reverse()) {
    std::vector<bool> reversed(rank, false);
    for (int64_t d : k.reverse().dimensions()) reversed[static_cast<size_t>(d)] = true;
    PerOutput(w, 1, [&](KernelWriter& kw, const std::vector<std::string>& idx) {
      std::vector<std::string> from(rank);
      for (size_t d = 0; d < rank; ++d) {
        from[d] = reversed[d] && out.dims[d] > 1 ? "(" + Num(out.dims[d] - 1) + " - " + idx[d] + ")"
                                                 : idx[d];
      }
      kw.Line("out[o] = in0[" + Ravel(from, strides) + "];");
    });
    return Status::Ok();
  }
  // dynamic-slice
  PerOutput(
      w, 1,
      [&](KernelWriter& kw, const std::vector<std::string>& idx) {
        std::vector<std::string> from(rank);
        for (size_t d = 0; d < rank; ++d)
          from[d] = "(d" + Num(static_cast<int64_t>(d)) + " + " + idx[d] + ")";
        kw.Line("out[o] = in0[" + Ravel(from, strides) + "];");
      },
      [&](KernelWriter& kw) { DynamicStarts(kw, 1, src.dims, out.dims); });
  return Status::Ok();
}

Status EmitPad(KernelWriter& w) {
  const pb::PadSpec& p = w.kernel().pad();
  const Array& out = w.out()[0];
  const size_t rank = out.dims.size();
  const Array& src = w.in()[0];
  const std::vector<int64_t> strides = ir::RowMajorStrides(src.dims);
  PerOutput(w, 2, [&](KernelWriter& kw, const std::vector<std::string>& idx) {
    // Output index x holds operand element (x - lo) / (interior + 1) when that divides exactly
    // and lands inside the operand; every other element is the padding value.
    std::string inside;
    std::vector<std::string> from(rank);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t lo = p.lo(static_cast<int>(d)), step = p.interior(static_cast<int>(d)) + 1;
      const std::string x = kw.Fresh("x");
      kw.Line("const long long " + x + " = static_cast<long long>(" + idx[d] + ") - (" + Num(lo) +
              "ll);");
      std::string c = x + " >= 0";
      if (step != 1) c += " && " + x + " % " + Num(step) + " == 0";
      c += " && " + x + " / " + Num(step) + " < " + Num(src.dims[d]);
      inside += (inside.empty() ? "" : " && ") + c;
      from[d] = step == 1 ? x : "(" + x + " / " + Num(step) + ")";
    }
    kw.Line("out[o] = (" + (inside.empty() ? std::string("true") : inside) + ") ? in0[" +
            Ravel(from, strides) + "] : in1[0];");
  });
  return Status::Ok();
}

Status EmitConcatenate(KernelWriter& w) {
  const Array& out = w.out()[0];
  const int64_t dim = w.kernel().concatenate();
  const int64_t total = out.dims[static_cast<size_t>(dim)];  // the operands' sizes' sum
  PerOutput(w, w.in().size(), [&](KernelWriter& kw, const std::vector<std::string>& idx) {
    int64_t first = 0;
    const std::string at = idx[static_cast<size_t>(dim)];
    for (size_t i = 0; i < kw.in().size(); ++i) {
      const Array& a = kw.in()[i];
      const int64_t size = a.dims[static_cast<size_t>(dim)];
      if (size == 0) continue;
      std::vector<std::string> from = idx;
      from[static_cast<size_t>(dim)] = first == 0 ? at : "(" + at + " - " + Num(first) + ")";
      const std::string load =
          "out[o] = in" + std::to_string(i) + "[" + Ravel(from, ir::RowMajorStrides(a.dims)) + "];";
      const bool last = first + size == total;
      if (first == 0 && last) {
        kw.Line(load);
      } else if (first == 0) {
        kw.Line("if (" + at + " < " + Num(size) + ") " + load);
      } else if (last) {
        kw.Line("else " + load);
      } else {
        kw.Line("else if (" + at + " < " + Num(first + size) + ") " + load);
      }
      first += size;
    }
  });
  return Status::Ok();
}

Status EmitDynamicUpdateSlice(KernelWriter& w) {
  const Array& out = w.out()[0];
  const size_t rank = out.dims.size();
  const Array& update = w.in()[1];
  const std::vector<int64_t> strides = ir::RowMajorStrides(update.dims);
  if (w.in()[0].offset == out.offset) {
    // In place (plan format 4): the operand's values are the result's already; write the window.
    if (update.elements == 0) return Status::Ok();
    const std::vector<int64_t> out_strides = ir::RowMajorStrides(out.dims);
    w.BeginFunction(kBlock);
    BitsPointers(w, 2);
    DynamicStarts(w, 2, out.dims, update.dims);
    w.OpenGridStride("o", update.elements);
    std::vector<std::string> to = Unravel(w, "o", update.dims, "q");
    for (size_t d = 0; d < rank; ++d)
      to[d] = "(d" + Num(static_cast<int64_t>(d)) + " + " + to[d] + ")";
    w.Line("out[" + Ravel(to, out_strides) + "] = in1[o];");
    w.Close();
    const std::string f = w.EndFunction();
    w.LaunchElementwise(f, update.elements);
    return Status::Ok();
  }
  PerOutput(
      w, 2,
      [&](KernelWriter& kw, const std::vector<std::string>& idx) {
        std::string inside;
        std::vector<std::string> from(rank);
        for (size_t d = 0; d < rank; ++d) {
          const std::string x = kw.Fresh("x");
          kw.Line("const long long " + x + " = static_cast<long long>(" + idx[d] + ") - d" +
                  Num(static_cast<int64_t>(d)) + ";");
          inside +=
              (inside.empty() ? "" : " && ") + x + " >= 0 && " + x + " < " + Num(update.dims[d]);
          from[d] = x;
        }
        kw.Line("out[o] = (" + (inside.empty() ? std::string("true") : inside) + ") ? in1[" +
                Ravel(from, strides) + "] : in0[o];");
      },
      [&](KernelWriter& kw) { DynamicStarts(kw, 2, out.dims, update.dims); });
  return Status::Ok();
}

Status EmitIota(KernelWriter& w) {
  const Array& out = w.out()[0];
  const int64_t dim = w.kernel().iota();
  if (out.elements == 0) return Status::Ok();
  w.BeginFunction(kBlock);
  w.OutputPointer(0, "out");
  w.OpenGridStride("o", out.elements);
  const std::vector<std::string> idx = Unravel(w, "o", out.dims, "q");
  w.Line(std::string("out[o] = static_cast<") + CType(out.type) + ">(static_cast<int64_t>(" +
         idx[static_cast<size_t>(dim)] + "));");
  w.Close();
  const std::string f = w.EndFunction();
  w.LaunchElementwise(f, out.elements);
  return Status::Ok();
}

// The index vector of `indices` (input 1) at batch position `batch` (its dims without the index
// vector dim): its `count` components as lines `const long long <name>k = ...`.
std::vector<std::string> IndexVector(KernelWriter& w, int64_t ivd,
                                     const std::vector<std::string>& batch, int64_t count) {
  const Array& indices = w.in()[1];
  const std::vector<int64_t> strides = ir::RowMajorStrides(indices.dims);
  std::vector<std::string> full;
  size_t b = 0;
  for (int64_t d = 0; d < static_cast<int64_t>(indices.dims.size()); ++d)
    full.push_back(d == ivd ? "0" : batch[b++]);
  std::vector<std::string> out;
  for (int64_t k = 0; k < count; ++k) {
    if (ivd < static_cast<int64_t>(indices.dims.size())) full[static_cast<size_t>(ivd)] = Num(k);
    const std::string name = w.Fresh("iv");
    w.Line("const long long " + name + " = dt::IndexValue(ix[" + Ravel(full, strides) + "]);");
    out.push_back(name);
  }
  return out;
}

void IndexPointer(KernelWriter& w) {
  const char* t = CType(w.in()[1].type);
  w.Line(std::string("const ") + t + "* __restrict__ ix = reinterpret_cast<const " + t +
         "*>(arena + " + w.Arg(w.in()[1].offset) + ");");
}

}  // namespace

Status EmitMovement(KernelWriter& w) {
  const pb::Kernel& k = w.kernel();
  const Array& out = w.out()[0];
  if (k.has_constant()) {
    if (out.bytes > 0) w.LaunchConstant(out.offset, out.bytes);
    return Status::Ok();
  }
  if (k.has_iota()) return EmitIota(w);
  if (k.has_copy()) {
    if (out.bytes > 0) w.LaunchCopy(w.in()[0].offset, out.offset, out.bytes);
    return Status::Ok();
  }
  if (k.has_broadcast() || k.has_transpose() || k.has_slice() || k.has_reverse() ||
      k.has_dynamic_slice())
    return EmitAffine(w);
  if (k.has_pad()) return EmitPad(w);
  if (k.has_concatenate()) return EmitConcatenate(w);
  return EmitDynamicUpdateSlice(w);
}

Status EmitGather(KernelWriter& w) {
  const pb::GatherSpec& g = w.kernel().gather();
  const Array& in = w.in()[0];
  const Array& indices = w.in()[1];
  const std::vector<int64_t> offset_dims(g.offset_dims().begin(), g.offset_dims().end());
  const std::vector<int64_t> collapsed(g.collapsed_slice_dims().begin(),
                                       g.collapsed_slice_dims().end());
  const std::vector<int64_t> start_map(g.start_index_map().begin(), g.start_index_map().end());
  const std::vector<int64_t> sizes(g.slice_sizes().begin(), g.slice_sizes().end());
  const int64_t ivd = g.index_vector_dim();
  const int64_t in_rank = static_cast<int64_t>(in.dims.size());
  std::vector<int64_t> window_dims;  // operand dims that appear as offset dims
  for (int64_t d = 0; d < in_rank; ++d) {
    if (!Contains(collapsed, d)) window_dims.push_back(d);
  }
  const int64_t vector_len =
      ivd == static_cast<int64_t>(indices.dims.size()) ? 1 : indices.dims[static_cast<size_t>(ivd)];
  const std::vector<int64_t> strides = ir::RowMajorStrides(in.dims);
  PerOutput(
      w, 1,
      [&](KernelWriter& kw, const std::vector<std::string>& idx) {
        std::vector<std::string> batch, offset;
        for (size_t d = 0; d < idx.size(); ++d)
          (Contains(offset_dims, static_cast<int64_t>(d)) ? offset : batch).push_back(idx[d]);
        const std::vector<std::string> vec = IndexVector(kw, ivd, batch, vector_len);
        std::vector<std::string> src(in.dims.size(), "0ll");
        for (size_t k = 0; k < start_map.size(); ++k)
          src[static_cast<size_t>(start_map[k])] = vec[k];
        for (size_t d = 0; d < src.size(); ++d)
          src[d] = "dt::Clamp(" + src[d] + ", 0ll, " + Num(in.dims[d] - sizes[d]) + "ll)";
        for (size_t k = 0; k < offset.size(); ++k) {
          std::string& s = src[static_cast<size_t>(window_dims[k])];
          s = "(" + s + " + " + offset[k] + ")";
        }
        kw.Line("out[o] = in0[" + Ravel(src, strides) + "];");
      },
      IndexPointer);
  return Status::Ok();
}

Status EmitScatter(KernelWriter& w) {
  const pb::ScatterSpec& s = w.kernel().scatter();
  const Array& out = w.out()[0];
  const Array& indices = w.in()[1];
  const Array& updates = w.in()[2];
  const std::vector<int64_t> window(s.update_window_dims().begin(), s.update_window_dims().end());
  const std::vector<int64_t> inserted(s.inserted_window_dims().begin(),
                                      s.inserted_window_dims().end());
  const std::vector<int64_t> to_operand(s.scatter_dims_to_operand_dims().begin(),
                                        s.scatter_dims_to_operand_dims().end());
  const int64_t ivd = s.index_vector_dim();
  const size_t rank = out.dims.size();
  std::vector<int64_t> window_operand_dims, window_sizes(rank, 1);
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d) {
    if (!Contains(inserted, d)) window_operand_dims.push_back(d);
  }
  for (size_t k = 0; k < window.size(); ++k) {
    window_sizes[static_cast<size_t>(window_operand_dims[k])] =
        updates.dims[static_cast<size_t>(window[k])];
  }
  const int64_t vector_len =
      ivd == static_cast<int64_t>(indices.dims.size()) ? 1 : indices.dims[static_cast<size_t>(ivd)];
  const plan::DecodedProgram& combiner = w.checked().combiner;
  if (out.bytes > 0) w.LaunchCopy(w.in()[0].offset, out.offset, out.bytes);
  if (updates.elements == 0 || out.elements == 0) return Status::Ok();
  // Update dims split into batch dims (walked in order) and window dims.
  std::vector<int64_t> batch_dims, win_dims;
  std::vector<size_t> batch_pos, win_pos;
  for (size_t d = 0; d < updates.dims.size(); ++d) {
    if (Contains(window, static_cast<int64_t>(d))) {
      win_dims.push_back(updates.dims[d]);
      win_pos.push_back(d);
    } else {
      batch_dims.push_back(updates.dims[d]);
      batch_pos.push_back(d);
    }
  }
  int64_t batches = 1, positions = 1;
  for (int64_t d : batch_dims) batches *= d;
  for (int64_t d : win_dims) positions *= d;
  bool by_position = true;  // targets fixed by window position (see the file comment)
  for (int64_t d : to_operand) by_position = by_position && Contains(inserted, d);
  const std::string combine = WriteCombiner(w, combiner, out.type);
  w.BeginFunction(kBlock);
  w.InputPointer(2, "upd");
  IndexPointer(w);
  w.OutputPointer(0, "out");
  const std::vector<int64_t> ustrides = ir::RowMajorStrides(updates.dims),
                             ostrides = ir::RowMajorStrides(out.dims);
  auto apply = [&](const std::string& b, const std::string& p) {
    const std::vector<std::string> bi = Unravel(w, b, batch_dims, "b");
    const std::vector<std::string> wi = Unravel(w, p, win_dims, "w");
    std::vector<std::string> uidx(updates.dims.size(), "0");
    for (size_t k = 0; k < batch_pos.size(); ++k) uidx[batch_pos[k]] = bi[k];
    for (size_t k = 0; k < win_pos.size(); ++k) uidx[win_pos[k]] = wi[k];
    const std::vector<std::string> vec = IndexVector(w, ivd, bi, vector_len);
    std::vector<std::string> dst(rank, "0ll");
    for (size_t k = 0; k < to_operand.size(); ++k) dst[static_cast<size_t>(to_operand[k])] = vec[k];
    std::string in_bounds;
    for (size_t d = 0; d < rank; ++d) {
      if (dst[d] == "0ll") {  // an origin of 0 fits unless the window is larger than the dim
        if (window_sizes[d] > out.dims[d])
          in_bounds += std::string(in_bounds.empty() ? "" : " && ") + "false";
        continue;
      }
      in_bounds += (in_bounds.empty() ? "" : " && ") + dst[d] + " >= 0 && " + dst[d] +
                   " <= " + Num(out.dims[d] - window_sizes[d]);
    }
    if (!in_bounds.empty()) w.Line("if (!(" + in_bounds + ")) continue;");
    for (size_t k = 0; k < window_operand_dims.size(); ++k) {
      std::string& x = dst[static_cast<size_t>(window_operand_dims[k])];
      x = "(" + x + " + " + wi[k] + ")";
    }
    w.Line("const long long t = " + Ravel(dst, ostrides) + ";");
    w.Line("out[t] = " + combine + "(out[t], upd[" + Ravel(uidx, ustrides) + "]);");
  };
  if (by_position) {
    w.OpenGridStride("p", positions);
    w.Open("for (I b = 0; b < " + Num(batches) + "; ++b)");
    apply("b", "p");
    w.Close();
    w.Close();
    const std::string f = w.EndFunction();
    w.LaunchElementwise(f, positions);
  } else {
    w.Open("if (blockIdx.x == 0 && threadIdx.x == 0)");
    w.Open("for (I b = 0; b < " + Num(batches) + "; ++b)");
    w.Open("for (I p = 0; p < " + Num(positions) + "; ++p)");
    apply("b", "p");
    w.Close();
    w.Close();
    w.Close();
    const std::string f = w.EndFunction();
    w.LaunchKernel(f, 1, 1);
  }
  return Status::Ok();
}

Status EmitThreefry(KernelWriter& w) {
  const int64_t n = w.out()[0].elements;
  if (n == 0) return Status::Ok();
  w.BeginFunction(kBlock);
  for (size_t i = 0; i < 4; ++i) w.InputPointer(i, "in" + std::to_string(i));
  w.OutputPointer(0, "y0");
  w.OutputPointer(1, "y1");
  auto at = [&](size_t i) {
    return "in" + std::to_string(i) + (w.in()[i].elements == 1 ? "[0]" : "[i]");
  };
  w.OpenGridStride("i", n);
  w.Line("const detrain::prng::ThreefryInjections ks = detrain::prng::ThreefryKeySchedule(" +
         at(0) + ", " + at(1) + ");");
  w.Line("uint32_t x0 = " + at(2) + ", x1 = " + at(3) + ";");
  w.Line("detrain::prng::ThreefryBlock(ks, x0, x1);");
  w.Line("y0[i] = x0;");
  w.Line("y1[i] = x1;");
  w.Close();
  const std::string f = w.EndFunction();
  w.LaunchElementwise(f, n);
  return Status::Ok();
}

}  // namespace detrain::codegen::cuda::internal
