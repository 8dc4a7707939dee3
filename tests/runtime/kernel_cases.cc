// The kernel cases (kernel_cases.h). Each function adds the cases of one family; the module
// texts and argument patterns are chosen so that a kernel computing any element in another
// order, or mishandling a special value, gives different bits.
#include "kernel_cases.h"

#include <cstring>

namespace detrain::runtime {
namespace {

// The f32 values whose pairs the arithmetic fast paths must get right.
const std::vector<uint32_t> kSpecials = {
    0x00000000u,  // +0
    0x80000000u,  // -0
    0x3f800000u,  // 1
    0xbfc00000u,  // -1.5
    0x7f800000u,  // +inf
    0xff800000u,  // -inf
    0x7fc00001u,  // quiet NaN with a payload
    0xffa12345u,  // signaling NaN, negative
    0x00000001u,  // the smallest subnormal
    0x807fffffu,  // the largest negative subnormal
    0x7f7fffffu,  // the largest finite
};

// A 32-bit type's literal of `dims` with element i = f(i)'s bits.
template <typename F>
ir::Literal Bits32(ir::ElementType type, std::vector<int64_t> dims, F f) {
  ir::Literal lit(ir::Shape(type, std::move(dims)));
  for (int64_t i = 0; i < lit.element_count(); ++i) {
    uint32_t bits = f(i);
    std::memcpy(lit.mutable_bytes().data() + i * 4, &bits, 4);
  }
  return lit;
}
template <typename F>
ir::Literal F32(std::vector<int64_t> dims, F f) {
  return Bits32(ir::ElementType::kF32, std::move(dims), f);
}
template <typename F>
ir::Literal U32(std::vector<int64_t> dims, F f) {
  return Bits32(ir::ElementType::kU32, std::move(dims), f);
}

// The f32 add and maximum computations, for reduce and scatter.
constexpr char kAddComputation[] = R"(add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
)";
constexpr char kMaxComputation[] = R"(max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
)";

// Every pair of specials, one pair per block of 64 elements (at element 17 of block p: a vector
// block with a special pair holds no other, so that recomputing a flagged block cannot hide a
// wrong fast result of another pair); the other elements are ordinary values.
constexpr int64_t kPairElements = 121 * 64 + 37;
uint32_t Ordinary(int64_t i, uint32_t base) {
  return base + static_cast<uint32_t>(i * 7919 % 100000);
}
ir::Literal PairsA(std::vector<int64_t> dims) {
  return F32(std::move(dims), [](int64_t i) {
    return i % 64 == 17 && i / 64 < 121 ? kSpecials[static_cast<size_t>(i / 64 % 11)]
                                        : Ordinary(i, 0x3e000000u);
  });
}
ir::Literal PairsB(std::vector<int64_t> dims) {
  return F32(std::move(dims), [](int64_t i) {
    return i % 64 == 17 && i / 64 < 121 ? kSpecials[static_cast<size_t>(i / 64 / 11)]
                                        : Ordinary(i, 0xbe800000u);
  });
}
// +0 and -0 only, in a pattern where every row and column holds both (the maximum of them is +0
// and the minimum -0, whatever the order), with an infinity in some rows.
ir::Literal SignedZeros(std::vector<int64_t> dims) {
  return F32(std::move(dims), [](int64_t i) {
    if (i % 97 == 5) return i % 2 == 0 ? 0x7f800000u : 0xff800000u;
    return (i * 2654435761u) >> 31 ? 0x80000000u : 0x00000000u;
  });
}
ir::Literal Scalar(uint32_t bits) {
  return F32({}, [bits](int64_t) { return bits; });
}

// One binary op of every pair of specials; the last chunk of 512 and its last vector block are
// partial.
void FloatBinaryOnSpecialPairs(Cases& c) {
  for (const char* op : {"add", "subtract", "multiply", "divide", "maximum", "minimum"}) {
    c.Trace(op);
    c.Add(std::string(R"(HloModule m
ENTRY main {
  a = f32[7781] parameter(0)
  b = f32[7781] parameter(1)
  ROOT r = f32[7781] )") +
              op + "(a, b)\n}",
          {PairsA({kPairElements}), PairsB({kPairElements})});
  }
}

// Fused programs: sqrt and clamp, and the operands in both orders (the NaN of the first operand
// wins, so a swapped operand order would show).
void FusedFloatProgram(Cases& c) {
  c.Add(R"(HloModule m
ENTRY main {
  a = f32[7781] parameter(0)
  b = f32[7781] parameter(1)
  s = f32[7781] sqrt(a)
  m = f32[7781] maximum(b, s)
  n = f32[7781] minimum(m, a)
  d = f32[7781] divide(n, b)
  e = f32[7781] subtract(b, d)
  c = f32[7781] clamp(a, e, b)
  ROOT t = (f32[7781], f32[7781]) tuple(c, e)
})",
        {PairsA({7781}), PairsB({7781})});
}

// Scalar operands (broadcast into the loop fusion): read from a column filled once per run,
// including programs of scalars only (an op of two scalars, broadcast).
void ScalarOperands(Cases& c) {
  for (uint32_t s : {0x80000000u, 0x00000000u, 0x7fc00001u, 0x40490fdbu}) {
    c.Trace(s);
    c.Add(R"(HloModule m
ENTRY main {
  a = f32[1030] parameter(0)
  s = f32[] parameter(1)
  t = f32[] parameter(2)
  bs = f32[1030] broadcast(s), dimensions={}
  u = f32[] multiply(s, t)
  w = f32[] sqrt(u)
  bw = f32[1030] broadcast(w), dimensions={}
  x = f32[1030] maximum(a, bs)
  y = f32[1030] add(bw, x)
  c = f32[] constant(-0)
  bc = f32[1030] broadcast(c), dimensions={}
  z = f32[1030] minimum(bc, y)
  ROOT r = (f32[1030], f32[1030]) tuple(z, bw)
})",
          {PairsA({1030}), Scalar(s), Scalar(0x3fc00000u)});
  }
}

// Broadcasts of a computed scalar (Adam's bias corrections): those only elementwise kernels read
// are read as the scalar (two here: one read by two kernels, one of another shape); one a dot
// reads and one that is a result stay whole. The scalar is a NaN with a payload, -0, a value
// whose square root is NaN, and an ordinary one; the arrays hold every special value.
void ScalarBroadcastsReadAsScalars(Cases& c) {
  for (uint32_t t : {0x3f000000u, 0x7fc00123u, 0x80000000u, 0x40000000u}) {
    c.Trace(t);
    c.Add(R"(HloModule m
ENTRY main {
  a = f32[40,50] parameter(0)
  g = f32[40,50] parameter(1)
  b = f32[50,30] parameter(2)
  t = f32[] parameter(3)
  one = f32[] constant(1)
  p = f32[] power(t, t)
  q = f32[] subtract(one, p)
  s = f32[] sqrt(q)
  bs = f32[40,50] broadcast(s), dimensions={}
  m1 = f32[40,50] multiply(g, bs)
  bs2 = f32[50,30] broadcast(s), dimensions={}
  m2 = f32[50,30] multiply(b, bs2)
  d = f32[40,30] dot(a, m2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[40,50] divide(a, bs)
  x = f32[40,50] add(m1, e)
  r = f32[40,50] maximum(x, a)
  n = f32[] negate(s)
  bd = f32[50,30] broadcast(n), dimensions={}
  d2 = f32[40,30] dot(a, bd), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h = f32[] multiply(s, s)
  br = f32[40,30] broadcast(h), dimensions={}
  sum = f32[40,30] add(d2, br)
  ROOT o = (f32[40,50], f32[40,30], f32[40,50], f32[40,30], f32[40,30]) tuple(r, d, m1, sum, br)
})",
          {PairsA({40, 50}),
           F32({40, 50}, [](int64_t i) { return kSpecials[i % 11] ^ (i & 8 ? 0x80000000u : 0u); }),
           F32({50, 30}, [](int64_t i) { return 0x3f800000u + static_cast<uint32_t>(i * 4099); }),
           Scalar(t)},
          /*dot_trees=*/-1, /*scalar_broadcasts=*/2);
  }
}

// Adam's update as the compiler leaves it: m's and v's new values, each also a result, then the
// parameter's from both (three kernels over one index space, with a one-element kernel, -lr, and
// its broadcast between them, which run first; the inputs are results too, so that no buffer of
// the scalars reuses theirs). They run block by block together — three blocks of 4096 elements, the
// last partial — with every special value in the gradient and both signs of zero and NaN payloads
// in the moments.
void ElementwiseRunsBlockByBlock(Cases& c) {
  c.Add(R"(HloModule m
ENTRY main {
  g = f32[70,130] parameter(0)
  m = f32[70,130] parameter(1)
  v = f32[70,130] parameter(2)
  w = f32[70,130] parameter(3)
  lr = f32[] parameter(4)
  b1 = f32[] constant(0.9)
  c1 = f32[] constant(0.1)
  b2 = f32[] constant(0.999)
  c2 = f32[] constant(0.001)
  eps = f32[] constant(1e-08)
  bb1 = f32[70,130] broadcast(b1), dimensions={}
  bc1 = f32[70,130] broadcast(c1), dimensions={}
  bb2 = f32[70,130] broadcast(b2), dimensions={}
  bc2 = f32[70,130] broadcast(c2), dimensions={}
  beps = f32[70,130] broadcast(eps), dimensions={}
  nlr = f32[] negate(lr)
  blr = f32[70,130] broadcast(nlr), dimensions={}
  m0 = f32[70,130] multiply(bb1, m)
  m1 = f32[70,130] multiply(bc1, g)
  mn = f32[70,130] add(m0, m1)
  v0 = f32[70,130] multiply(bb2, v)
  gg = f32[70,130] multiply(g, g)
  v1 = f32[70,130] multiply(bc2, gg)
  vn = f32[70,130] add(v0, v1)
  s = f32[70,130] sqrt(vn)
  d = f32[70,130] add(s, beps)
  q = f32[70,130] divide(mn, d)
  u = f32[70,130] multiply(blr, q)
  wn = f32[70,130] add(w, u)
  ROOT o = (f32[70,130], f32[70,130], f32[70,130], f32[70,130], f32[70,130], f32[70,130]) tuple(mn, vn, wn, g, m, v)
})",
        {F32({70, 130}, [](int64_t i) { return kSpecials[i % 11]; }),
         F32({70, 130},
             [](int64_t i) {
               return i % 97 == 0 ? 0x7fc00042u : 0x3c000000u + static_cast<uint32_t>(i * 37);
             }),
         F32({70, 130},
             [](int64_t i) {
               return i % 89 == 0 ? 0x80000000u : 0x38000000u + static_cast<uint32_t>(i * 53);
             }),
         F32({70, 130}, [](int64_t i) { return 0xbf000000u ^ static_cast<uint32_t>(i * 7919); }),
         Scalar(0x3a83126fu)},
        /*dot_trees=*/-1, /*scalar_broadcasts=*/1, /*fused_elementwise=*/3);
}

// Data movement: f32[a, b, c] (element i = i, NaN payloads included as bit patterns) through
// transposes of every permutation (tiled when a source-contiguous dim is not innermost, with
// partial tiles), a reversed transpose, strided slices, broadcasts and a dynamic slice.
ir::Literal Iota(std::vector<int64_t> dims) {
  return F32(std::move(dims), [](int64_t i) { return 0x7f800001u + static_cast<uint32_t>(i); });
}

void Transposes(Cases& c) {
  const std::vector<std::vector<int64_t>> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                                   {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const auto& p : perms) {
    const int64_t dims[3] = {5, 37, 70};
    auto d = [&](int i) { return std::to_string(dims[p[static_cast<size_t>(i)]]); };
    std::string perm =
        std::to_string(p[0]) + "," + std::to_string(p[1]) + "," + std::to_string(p[2]);
    c.Trace(perm);
    c.Add("HloModule m\nENTRY main {\n  a = f32[5,37,70] parameter(0)\n  ROOT t = f32[" + d(0) +
              "," + d(1) + "," + d(2) + "] transpose(a), dimensions={" + perm + "}\n}",
          {Iota({5, 37, 70})});
  }
  c.Add(R"(HloModule m
ENTRY main {
  a = f32[300,45] parameter(0)
  t = f32[45,300] transpose(a), dimensions={1,0}
  ROOT r = f32[45,300] reverse(t), dimensions={0,1}
})",
        {Iota({300, 45})});
}

void SlicesAndBroadcasts(Cases& c) {
  c.Add(R"(HloModule m
ENTRY main {
  a = f32[40,33] parameter(0)
  v = f32[33] parameter(1)
  i = s32[] parameter(2)
  s = f32[13,8] slice(a), slice={[1:40:3], [2:33:4]}
  c = f32[40,20] slice(a), slice={[0:40], [5:25]}
  b = f32[7,33,3] broadcast(v), dimensions={1}
  w = f32[7,40,33] broadcast(a), dimensions={1,2}
  z = s32[] constant(0)
  d = f32[9,33] dynamic-slice(a, i, z), dynamic_slice_sizes={9,33}
  ROOT t = (f32[13,8], f32[40,20], f32[7,33,3], f32[7,40,33], f32[9,33]) tuple(s, c, b, w, d)
})",
        {Iota({40, 33}), Iota({33}), ir::Literal::Scalar<int32_t>(ir::ElementType::kS32, 35)});
}

// reduce-window through the per-dim tap lists: padding (low and high, and a window wider than
// the padded operand at the edge), stride, both dilations, maximum (with ±0 and NaN payloads)
// and add (a window of more than 64 taps: two leaves of the canonical reduce); windows over the
// last dimension (one element at a time) and not (rows of 2 and 16 elements at once); maximum
// and minimum over signed zeros (and the NaNs y * 0 makes), whose rows take the plain
// comparison only where it gives the rule's bits.
void ReduceWindow(Cases& c) {
  c.Add(R"(HloModule m
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
min {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] minimum(a, b)
}
ENTRY main {
  x = f32[3,17,13,2] parameter(0)
  lo = f32[] constant(-inf)
  z = f32[] constant(-0)
  p = f32[3,9,7,2] reduce-window(x, lo), to_apply=max, window={size=1x2x3x1 stride=1x2x2x1 pad=0_0x1_1x1_2x0_0}
  d = f32[3,7,4,2] reduce-window(x, lo), to_apply=max, window={size=1x3x2x1 stride=1x2x3x1 pad=0_0x1_0x0_1x0_0 lhs_dilate=1x1x1x1 rhs_dilate=1x2x2x1}
  h = f32[3,34,26,2] reduce-window(x, z), to_apply=add, window={size=1x2x2x1 stride=1x1x1x1 pad=0_0x1_1x1_1x0_0 lhs_dilate=1x2x2x1}
  s = f32[3,2,2,2] reduce-window(x, z), to_apply=add, window={size=1x9x9x1 stride=1x8x4x1}
  q = f32[3,17,13,1] reduce-window(x, lo), to_apply=max, window={size=1x1x1x2}
  y = f32[2,6,6,16] parameter(1)
  r = f32[2,3,3,16] reduce-window(y, lo), to_apply=max, window={size=1x2x2x1 stride=1x2x2x1}
  zero = f32[] constant(0)
  zeros = f32[2,6,6,16] broadcast(zero), dimensions={}
  yz = f32[2,6,6,16] multiply(y, zeros)
  mz = f32[2,3,3,16] reduce-window(yz, z), to_apply=max, window={size=1x2x2x1 stride=1x2x2x1}
  nz = f32[2,3,3,16] reduce-window(yz, zero), to_apply=min, window={size=1x2x2x1 stride=1x2x2x1}
  ROOT t = (f32[3,9,7,2], f32[3,7,4,2], f32[3,34,26,2], f32[3,2,2,2], f32[3,17,13,1], f32[2,3,3,16], f32[2,3,3,16], f32[2,3,3,16]) tuple(p, d, h, s, q, r, mz, nz)
})",
        {PairsA({3, 17, 13, 2}), PairsB({2, 6, 6, 16})});
}

// Placement by rows: pad with negative, interior and high padding (rows clipped at both ends),
// concatenate, dynamic-update-slice with a clamped start.
void Placement(Cases& c) {
  c.Add(R"(HloModule m
ENTRY main {
  a = f32[6,9,5] parameter(0)
  b = f32[6,9,3] parameter(1)
  i = s32[] parameter(2)
  v = f32[] constant(-0)
  p = f32[10,14,15] pad(a, v), padding=1_3x-2_7x3_-1_2
  q = f32[6,9,4] pad(a, v), padding=0_0x0_0x-2_1
  w = f32[6,9,12] pad(a, v), padding=0_0x0_0x-1_0_2
  c = f32[6,9,8] concatenate(a, b), dimensions={2}
  z = s32[] constant(0)
  u = f32[6,9,5] dynamic-update-slice(a, b, z, i, i)
  ROOT t = (f32[10,14,15], f32[6,9,4], f32[6,9,12], f32[6,9,8], f32[6,9,5]) tuple(p, q, w, c, u)
})",
        {PairsA({6, 9, 5}), PairsB({6, 9, 3}),
         ir::Literal::Scalar<int32_t>(ir::ElementType::kS32, 4)});
}

// Reductions in the canonical order (pairwise-64 leaves, then the tree) however the kernel
// schedules them: many outputs with their chains interleaved (ragged groups, non-trailing and
// trailing reduced dims), and few long rows whose leaves are spread over threads (a partial last
// leaf, a partial last group), with NaN payloads, signed zeros and infinities in the values.
// s32[dims] holding `values`.
ir::Literal S32(std::vector<int64_t> dims, const std::vector<int32_t>& values) {
  return Bits32(ir::ElementType::kS32, std::move(dims), [&values](int64_t i) {
    return static_cast<uint32_t>(values.at(static_cast<size_t>(i)));
  });
}

// Gather and scatter whose last dimension is the window's run along the operand's last dimension
// (copied or combined as one run per index vector) and the same with the window dimension first
// (one element at a time): start indices clamped (gather) or out of bounds and skipped (scatter),
// repeated scatter targets whose sums depend on the order of the updates, and a run shorter than
// the operand's row.
void GatherAndScatterRuns(Cases& c) {
  const std::vector<int32_t> gather_at = {0, 0, 8, 2, 3, 6, -4, 1, 100, -7, 4, 1};
  // Scatter targets (row, column): (3, 0) three times, (1, 2) twice, and some out of bounds: a
  // column past 7 - 5, a row of 9, a negative row.
  const std::vector<int32_t> scatter_at = {3, 0, 1,  2, 3, 0, 0, 3, 9, 0, 3, 0,
                                           1, 2, -1, 0, 8, 1, 2, 2, 5, 0, 7, 2};
  c.Add(std::string("HloModule m\n") + kAddComputation + R"(ENTRY main {
  op = f32[9,7] parameter(0)
  gi = s32[6,2] parameter(1)
  si = s32[12,2] parameter(2)
  u = f32[12,5] parameter(3)
  ut = f32[5,12] parameter(4)
  g = f32[6,5] gather(op, gi), slice_sizes={1,5}, offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=1
  gt = f32[5,6] gather(op, gi), slice_sizes={1,5}, offset_dims={0}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=1
  s = f32[9,7] scatter(op, si, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=add
  st = f32[9,7] scatter(op, si, ut), update_window_dims={0}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=add
  ROOT r = (f32[6,5], f32[5,6], f32[9,7], f32[9,7]) tuple(g, gt, s, st)
}
)",
        {Varied({9, 7}), S32({6, 2}, gather_at), S32({12, 2}, scatter_at), Varied({12, 5}),
         Varied({5, 12})});
}

// threefry2x32 under one broadcast key (the vectorized array form over every block), under keys
// that change in runs of 20 and of 3 blocks (the array form per run), and of one block.
void ThreefryKeyRuns(Cases& c) {
  c.Add(R"(HloModule m
ENTRY main {
  k0 = u32[] parameter(0)
  k1 = u32[] parameter(1)
  x0 = u32[1003] parameter(2)
  x1 = u32[1003] parameter(3)
  r0 = u32[1003] parameter(4)
  r1 = u32[1003] parameter(5)
  b0 = u32[1003] broadcast(k0), dimensions={}
  b1 = u32[1003] broadcast(k1), dimensions={}
  a = (u32[1003], u32[1003]) custom-call(b0, b1, x0, x1), custom_call_target="detrain.threefry2x32"
  b = (u32[1003], u32[1003]) custom-call(r0, r1, x0, x1), custom_call_target="detrain.threefry2x32"
  c = (u32[1003], u32[1003]) custom-call(b0, b1, x0, b1), custom_call_target="detrain.threefry2x32"
  d = (u32[], u32[]) custom-call(k0, k1, k1, k0), custom_call_target="detrain.threefry2x32"
  a0 = u32[1003] get-tuple-element(a), index=0
  a1 = u32[1003] get-tuple-element(a), index=1
  b0r = u32[1003] get-tuple-element(b), index=0
  b1r = u32[1003] get-tuple-element(b), index=1
  c0 = u32[1003] get-tuple-element(c), index=0
  d1 = u32[] get-tuple-element(d), index=1
  ROOT t = (u32[1003], u32[1003], u32[1003], u32[1003], u32[1003], u32[]) tuple(a0, a1, b0r, b1r, c0, d1)
})",
        {U32({}, [](int64_t) { return 0x12345678u; }), U32({}, [](int64_t) { return 42u; }),
         U32({1003}, [](int64_t i) { return static_cast<uint32_t>(i * 2654435761u); }),
         U32({1003}, [](int64_t i) { return static_cast<uint32_t>(i); }),
         U32({1003}, [](int64_t i) { return static_cast<uint32_t>(i < 500 ? i / 20 : i / 3); }),
         U32({1003}, [](int64_t) { return 7u; })});
}

void ReductionsInterleavedAndSplitKeepTheCanonicalOrder(Cases& c) {
  c.Add(std::string("HloModule m\n") + kAddComputation + kMaxComputation + R"(min {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] minimum(a, b)
}
ENTRY main {
  x = f32[37,270] parameter(0)
  y = f32[4,4133] parameter(1)
  z = f32[] constant(-0)
  r0 = f32[270] reduce(x, z), dimensions={0}, to_apply=add
  r1 = f32[37] reduce(x, z), dimensions={1}, to_apply=add
  r2 = f32[4] reduce(y, z), dimensions={1}, to_apply=add
  r3 = f32[4] reduce(y, z), dimensions={1}, to_apply=max
  w = f32[4133,3] parameter(2)
  r4 = f32[3] reduce(w, z), dimensions={0}, to_apply=add
  v = f32[3,4133] parameter(3)
  r5 = f32[3] reduce(v, z), dimensions={1}, to_apply=add
  r6 = f32[3] reduce(v, z), dimensions={1}, to_apply=max
  r7 = f32[270] reduce(x, z), dimensions={0}, to_apply=max
  u = f32[40,70] parameter(4)
  r8 = f32[70] reduce(u, z), dimensions={0}, to_apply=max
  r9 = f32[70] reduce(u, z), dimensions={0}, to_apply=min
  r10 = f32[40] reduce(u, z), dimensions={1}, to_apply=max
  r11 = f32[40] reduce(u, z), dimensions={1}, to_apply=min
  r12 = f32[37] reduce(x, z), dimensions={1}, to_apply=min
  ROOT o = (f32[270], f32[37], f32[4], f32[4], f32[3], f32[3], f32[3], f32[270], f32[70], f32[70], f32[40], f32[40], f32[37]) tuple(r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12)
})",
        {Varied({37, 270}), Varied({4, 4133}), Varied({4133, 3}), PairsB({3, 4133}),
         SignedZeros({40, 70})});
}

// Reductions of elementwise operands (the compiler fuses the operand's program into the
// reduction as its `pre`): a sum of products, a sum of exp (a softmax's denominator, -inf from a
// mask), a maximum of a select; special pairs in full and partial blocks, so that the generated
// `pre` loops meet flagged blocks too.
void FusedReductionsOfElementwiseOperands(Cases& c) {
  c.Add(std::string("HloModule m\n") + kAddComputation + kMaxComputation + R"(ENTRY main {
  x = f32[37,211] parameter(0)
  y = f32[37,211] parameter(1)
  z = f32[] constant(0)
  p = f32[37,211] multiply(x, y)
  r0 = f32[37] reduce(p, z), dimensions={1}, to_apply=add
  ninf = f32[] constant(-inf)
  nb = f32[37,211] broadcast(ninf), dimensions={}
  lt = pred[37,211] compare(x, y), direction=LT
  masked = f32[37,211] select(lt, x, nb)
  e = f32[37,211] exponential(masked)
  r1 = f32[211] reduce(e, z), dimensions={0}, to_apply=add
  s = f32[37,211] select(lt, x, y)
  r2 = f32[37] reduce(s, ninf), dimensions={1}, to_apply=max
  ROOT o = (f32[37], f32[211], f32[37]) tuple(r0, r1, r2)
})",
        {PairsA({37, 211}), PairsB({37, 211})});
}

// The shard tree of weight gradients: S per-shard dots x_s^T dy_s (k = the shard's rows, which
// may differ), added pairwise by shard and scaled by a constant, as the train step emits them.
// `transposed`: each dot computes dy_s^T x_s and a transpose gives the gradient's layout (so the
// leaves are swapped products). `extra`: the first dot's result is also a result of the module,
// so the tree must not be rewritten.
std::string ShardGradientTree(const std::vector<int64_t>& rows, int64_t m, int64_t n,
                              bool transposed, const std::string& epilogue, bool extra) {
  int64_t total = 0;
  for (int64_t r : rows) total += r;
  auto shape = [](int64_t a, int64_t b) {
    return "f32[" + std::to_string(a) + "," + std::to_string(b) + "]";
  };
  const std::string mn = shape(m, n);
  std::string h = "HloModule m\nENTRY main {\n  x = " + shape(total, m) +
                  " parameter(0)\n  dy = " + shape(total, n) + " parameter(1)\n";
  if (epilogue == "update") {  // an SGD step: the sum divided by S, scaled by lr, subtracted
    h += "  w = " + shape(m, n) + " parameter(2)\n  lr = f32[] parameter(3)\n";
  }
  std::vector<std::string> values;
  int64_t at = 0;
  for (size_t s = 0; s < rows.size(); ++s) {
    const std::string i = std::to_string(s), lo = std::to_string(at),
                      hi = std::to_string(at + rows[s]);
    h += "  x" + i + " = " + shape(rows[s], m) + " slice(x), slice={[" + lo + ":" + hi +
         "], [0:" + std::to_string(m) + "]}\n";
    h += "  y" + i + " = " + shape(rows[s], n) + " slice(dy), slice={[" + lo + ":" + hi +
         "], [0:" + std::to_string(n) + "]}\n";
    if (transposed) {
      h += "  d" + i + " = " + shape(n, m) + " dot(y" + i + ", x" + i +
           "), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n";
      h += "  g" + i + " = " + mn + " transpose(d" + i + "), dimensions={1,0}\n";
    } else {
      h += "  g" + i + " = " + mn + " dot(x" + i + ", y" + i +
           "), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n";
    }
    values.push_back("g" + i);
    at += rows[s];
  }
  int next = 0;
  while (values.size() > 1) {  // pairwise by index, an odd last value carried up
    std::vector<std::string> up;
    for (size_t i = 0; i + 1 < values.size(); i += 2) {
      const std::string name = "a" + std::to_string(next++);
      h += "  " + name + " = " + mn + " add(" + values[i] + ", " + values[i + 1] + ")\n";
      up.push_back(name);
    }
    if (values.size() % 2 == 1) up.push_back(values.back());
    values = up;
  }
  h += "  c = f32[] constant(8)\n  b = " + mn + " broadcast(c), dimensions={}\n";
  const std::string sum = values[0];
  if (epilogue == "update") {
    h += "  l = " + mn + " broadcast(lr), dimensions={}\n  q = " + mn + " divide(" + sum +
         ", b)\n  p = " + mn + " multiply(l, q)\n";
  }
  const std::string result = epilogue == "divide"   ? "divide(" + sum + ", b)"
                             : epilogue == "update" ? "subtract(w, p)"
                                                    : "subtract(b, " + sum + ")";
  if (extra) {
    h += "  r = " + mn + " " + result + "\n  ROOT t = (" + mn + ", " + mn + ") tuple(r, g0)\n}";
  } else {
    h += "  ROOT r = " + mn + " " + result + "\n}";
  }
  return h;
}

// The add tree of per-shard dots runs as one GemmTree (gemm.h) with the bits of the dots and
// adds computed apart, NaN payloads included: swapped and plain leaves, unequal k, an odd tree,
// partial tiles, more than one block of rows, a constant on either side, an update after the
// sum in the same fusion; and it is refused when a dot's result is read elsewhere.
void ShardTreeOfDotsRunsAsOneGemmTree(Cases& c) {
  struct Case {
    std::vector<int64_t> rows;
    int64_t m, n;
    bool transposed;
    std::string epilogue;
    bool extra;
    int64_t folds;
  };
  const std::vector<Case> cases = {
      {{3, 5, 2, 6}, 37, 45, true, "divide", false, 1},
      {{4, 4, 4, 4, 4, 4, 4, 4}, 100, 70, true, "divide", false, 1},
      {{7, 1, 9}, 29, 33, false, "subtract", false, 1},
      {{6, 6}, 130, 50, false, "divide", false, 1},
      {{3, 5, 2, 6}, 37, 45, true, "divide", true, 0},
      // The tree inside a fusion that goes on (SGD's update): the sum is written to the first
      // leaf's buffer and the rest of the fusion reads it.
      {{4, 4, 4, 4, 4, 4, 4, 4}, 100, 70, true, "update", false, 1},
      {{7, 1, 9}, 29, 33, false, "update", false, 1},
      // At most 16 columns: the narrow register tile (isa_kernels.h IsaKernels::narrow).
      {{5, 3, 8}, 37, 10, true, "divide", false, 1},
      {{4, 4, 4, 4}, 20, 16, false, "update", false, 1},
  };
  for (const Case& k : cases) {
    int64_t total = 0;
    for (int64_t r : k.rows) total += r;
    c.Trace(std::to_string(k.rows.size()) + " shards, " + std::to_string(k.m) + "x" +
            std::to_string(k.n) + (k.transposed ? " transposed" : "") + " " + k.epilogue);
    std::vector<ir::Literal> args = {PairsA({total, k.m}), PairsB({total, k.n})};
    if (k.epilogue == "update") {
      args.push_back(PairsA({k.m, k.n}));
      args.push_back(ir::Literal::Scalar<float>(ir::ElementType::kF32, 0.01f));
    }
    c.Add(ShardGradientTree(k.rows, k.m, k.n, k.transposed, k.epilogue, k.extra), std::move(args),
          k.folds);
  }
}

// dot over several 64 x 64 output tiles and k tiles of 16 with a partial last one, a batched dot
// with both operands contracting their last dim, and an operand read transposed; NaN payloads
// and infinities in the values (the CUDA GEMM recomputes a NaN chain with the defined rule).
void DotTiles(Cases& c) {
  c.Add(R"(HloModule m
ENTRY main {
  a = f32[130,70] parameter(0)
  b = f32[70,150] parameter(1)
  d = f32[130,150] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  x = f32[3,20,33] parameter(2)
  y = f32[3,17,33] parameter(3)
  e = f32[3,20,17] dot(x, y), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  t = f32[70,130] parameter(4)
  f = f32[130,150] dot(t, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT r = (f32[130,150], f32[3,20,17], f32[130,150]) tuple(d, e, f)
})",
        {PairsA({130, 70}), PairsB({70, 150}), Varied({3, 20, 33}), Varied({3, 17, 33}),
         Varied({70, 130})});
}

// convolution through its im2col chain: strides, low and high padding, input and kernel
// dilation (and kernel dilation alone: the per-tap displacement path), several input features,
// features not innermost (bf01) in the input and in the result, a weight gradient's labels
// (f01b_i01o->01bf: the batch inside the spatial dimensions of the result), partial groups of
// GEMM rows, and +0 terms at padding and holes (a -0 sum shows them).
void Convolutions(Cases& c) {
  c.Add(R"(HloModule m
ENTRY main {
  x = f32[2,9,11,3] parameter(0)
  k = f32[3,2,3,5] parameter(1)
  a = f32[2,5,11,5] convolution(x, k), dim_labels=b01f_01io->b01f, window={size=3x2 stride=2x1 pad=1_1x0_1}
  b = f32[2,17,10,5] convolution(x, k), dim_labels=b01f_01io->b01f, window={size=3x2 pad=2_2x0_1 lhs_dilate=2x1 rhs_dilate=2x2}
  z = f32[2,9,11,3] parameter(2)
  e = f32[2,9,10,5] convolution(z, k), dim_labels=b01f_01io->b01f, window={size=3x2 pad=1_1x0_0}
  d = f32[2,8,7,5] convolution(x, k), dim_labels=b01f_01io->b01f, window={size=3x2 stride=1x2 pad=2_1x1_2 rhs_dilate=2x1}
  y = f32[2,3,9,11] parameter(3)
  f = f32[2,9,11,5] convolution(y, k), dim_labels=bf01_01io->b01f, window={size=3x2 pad=1_1x1_0}
  dy = f32[2,9,11,5] parameter(4)
  g = f32[3,3,3,5] convolution(x, dy), dim_labels=f01b_i01o->01bf, window={size=9x11 pad=1_1x1_1}
  h = f32[2,5,9,11] convolution(x, k), dim_labels=b01f_01io->bf01, window={size=3x2 pad=1_1x0_1}
  ROOT r = (f32[2,5,11,5], f32[2,17,10,5], f32[2,9,10,5], f32[2,8,7,5], f32[2,9,11,5], f32[3,3,3,5], f32[2,5,9,11]) tuple(a, b, e, d, f, g, h)
})",
        {Varied({2, 9, 11, 3}), PairsB({3, 2, 3, 5}), SignedZeros({2, 9, 11, 3}),
         Varied({2, 3, 9, 11}), Varied({2, 9, 11, 5})});
}

// Reductions of many leaves per output: more than a block's worth of leaves, the leaves of one
// output spread over many (a long row: 1,094 and 1,407 leaves, beyond what one block keeps in
// shared memory), and a reduce over two dims at once.
void LongReductions(Cases& c) {
  c.Add(std::string("HloModule m\n") + kAddComputation + R"(ENTRY main {
  x = f32[2,70000] parameter(0)
  y = f32[300,300] parameter(1)
  z = f32[] constant(-0)
  r0 = f32[2] reduce(x, z), dimensions={1}, to_apply=add
  r1 = f32[] reduce(y, z), dimensions={0,1}, to_apply=add
  w = f32[5,33,40] parameter(2)
  r2 = f32[33] reduce(w, z), dimensions={0,2}, to_apply=add
  ROOT o = (f32[2], f32[], f32[33]) tuple(r0, r1, r2)
})",
        {Varied({2, 70000}), Varied({300, 300}), Varied({5, 33, 40})});
}

// A scatter whose index vectors address a window dim (the targets of two updates may differ in
// window position, so the updates cannot be split by it): each update in row-major order.
void ScatterIntoWindowDims(Cases& c) {
  const std::vector<int32_t> at = {0, 2, 1, 2, 0, 9, 3};
  c.Add(std::string("HloModule m\n") + kAddComputation + R"(ENTRY main {
  op = f32[4,6] parameter(0)
  si = s32[7] parameter(1)
  u = f32[7,4,3] parameter(2)
  ROOT s = f32[4,6] scatter(op, si, u), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={1}, index_vector_dim=1, to_apply=add
})",
        {Varied({4, 6}), S32({7}, at), Varied({7, 4, 3})});
}

// Updates in place (plan format 4): a chain of dynamic-update-slices over a value they each read
// last (a scan's stack), with constant and clamped dynamic starts, ending in a scatter that
// combines duplicate targets, each writing over its operand 0; and beside them the updates that
// must not (an operand that is a parameter, or one read again later), so a backend that wrote over
// the wrong buffer, or skipped the copy where there is none, gives different bits.
void UpdatesInPlace(Cases& c) {
  c.Add(std::string("HloModule m\n") + kAddComputation + R"(ENTRY main {
  x = f32[6,5] parameter(0)
  u0 = f32[1,5] parameter(1)
  u1 = f32[2,5] parameter(2)
  i = s32[] parameter(3)
  si = s32[4] parameter(4)
  us = f32[4,5] parameter(5)
  c0 = s32[] constant(0)
  c3 = s32[] constant(3)
  n = f32[6,5] negate(x)
  d0 = f32[6,5] dynamic-update-slice(n, u0, c3, c0)
  d1 = f32[6,5] dynamic-update-slice(d0, u1, i, c0)
  d2 = f32[6,5] dynamic-update-slice(d1, u0, c0, c0)
  s = f32[6,5] scatter(d2, si, us), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  p = f32[6,5] dynamic-update-slice(x, u1, c3, c0)
  e = f32[6,5] exponential(x)
  k = f32[6,5] dynamic-update-slice(e, u0, i, c0)
  later = f32[6,5] add(e, k)
  ROOT t = (f32[6,5], f32[6,5], f32[6,5]) tuple(s, p, later)
})",
        {Varied({6, 5}), Varied({1, 5}), Varied({2, 5}),
         ir::Literal::Scalar<int32_t>(ir::ElementType::kS32, 5), S32({4}, {2, 0, 2, 5}),
         Varied({4, 5})},
        -1, -1, -1, /*updates_in_place=*/4);  // d0, d1, d2 and s; not p, not k
}

// Views (runtime/cpu/plan_views.h): shard slices of the batch and of a merged dot's result, the
// operands of a concatenate written in their place in it, a reshape; read again after the copy
// they replace would have run, and beside them what must stay a copy — a slice that is not one
// range, one whose offset breaks the alignment (32 bytes into y), an operand concatenated twice.
void Views(Cases& c) {
  c.Add(R"(HloModule m
ENTRY main {
  x = f32[8,16] parameter(0)
  w = f32[16,16] parameter(1)
  y = f32[4,8] parameter(2)
  a0 = f32[2,16] slice(x), slice={[0:2], [0:16]}
  a1 = f32[2,16] slice(x), slice={[2:4], [0:16]}
  e0 = f32[2,16] exponential(a0)
  e1 = f32[2,16] negate(a1)
  cat = f32[4,16] concatenate(e0, e1), dimensions={0}
  d = f32[4,16] dot(cat, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d0 = f32[2,16] slice(d), slice={[0:2], [0:16]}
  d1 = f32[2,16] slice(d), slice={[2:4], [0:16]}
  r = f32[32] reshape(d1)
  rn = f32[32] negate(r)
  s = f32[2,16] add(d0, d1)
  row = f32[1,16] slice(x), slice={[1:2], [0:16]}
  rown = f32[1,16] negate(row)
  col = f32[8,4] slice(x), slice={[0:8], [2:6]}
  odd = f32[1,8] slice(y), slice={[1:2], [0:8]}
  oddn = f32[1,8] negate(odd)
  again = f32[2,16] exponential(e0)
  twice = f32[4,16] concatenate(e1, e1), dimensions={0}
  catn = f32[4,16] negate(cat)
  ROOT t = (f32[2,16], f32[32], f32[1,16], f32[8,4], f32[1,8], f32[2,16], f32[4,16], f32[4,16]) tuple(s, rn, rown, col, oddn, again, twice, catn)
})",
        {Varied({8, 16}), Varied({16, 16}), Varied({4, 8})}, -1, -1, -1, -1,
        /*views=*/8);  // a0, a1, row (x); e0, e1 (cat); d0, d1 (d); r (d1)
}

}  // namespace

ir::Literal Varied(std::vector<int64_t> dims) {
  return F32(std::move(dims), [](int64_t i) {
    const uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    return (h & 0x80000000u) | (0x3a000000u + (h >> 1) % 0x08000000u);
  });
}

std::vector<KernelCase> KernelCases() {
  Cases c;
  c.Group("FloatBinaryOnSpecialPairs");
  FloatBinaryOnSpecialPairs(c);
  c.Group("FusedFloatProgram");
  FusedFloatProgram(c);
  c.Group("ScalarOperands");
  ScalarOperands(c);
  c.Group("ScalarBroadcastsReadAsScalars");
  ScalarBroadcastsReadAsScalars(c);
  c.Group("ElementwiseRunsBlockByBlock");
  ElementwiseRunsBlockByBlock(c);
  c.Group("Transposes");
  Transposes(c);
  c.Group("SlicesAndBroadcasts");
  SlicesAndBroadcasts(c);
  c.Group("ReduceWindow");
  ReduceWindow(c);
  c.Group("Placement");
  Placement(c);
  c.Group("GatherAndScatterRuns");
  GatherAndScatterRuns(c);
  c.Group("ThreefryKeyRuns");
  ThreefryKeyRuns(c);
  c.Group("ReductionsInterleavedAndSplitKeepTheCanonicalOrder");
  ReductionsInterleavedAndSplitKeepTheCanonicalOrder(c);
  c.Group("FusedReductionsOfElementwiseOperands");
  FusedReductionsOfElementwiseOperands(c);
  c.Group("ShardTreeOfDotsRunsAsOneGemmTree");
  ShardTreeOfDotsRunsAsOneGemmTree(c);
  c.Group("DotTiles");
  DotTiles(c);
  c.Group("Convolutions");
  Convolutions(c);
  c.Group("LongReductions");
  LongReductions(c);
  c.Group("ScatterIntoWindowDims");
  ScatterIntoWindowDims(c);
  c.Group("UpdatesInPlace");
  UpdatesInPlace(c);
  c.Group("Views");
  Views(c);
  return c.Take();
}

}  // namespace detrain::runtime
