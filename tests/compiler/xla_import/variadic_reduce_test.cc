// Reduce of several inputs together (XLA's variadic reduce: jnp.argmax, argmin), which the
// importer expands into elementwise ops in reduce's canonical order (variadic_reduce.cc). Checked
// against brute force for argmax (first largest, NaN first), and bit for bit against the
// one-input reduce for a float sum, whose result depends on the order.
#include <cmath>
#include <limits>
#include <random>

#include "xla_test_util.h"

namespace detrain::testing {
namespace {

// JAX's argmax combiner (jax 0.10.2, as in tools/export_jax_corpus.py's argmax_accuracy).
const std::string kArgmax =
    "argmax {\n  a = f32[] parameter(0)\n  i = s32[] parameter(1)\n  b = f32[] parameter(2)\n"
    "  j = s32[] parameter(3)\n  gt = pred[] compare(a, b), direction=GT\n"
    "  nan = pred[] compare(a, a), direction=NE\n  keep = pred[] or(gt, nan)\n"
    "  v = f32[] select(keep, a, b)\n  eq = pred[] compare(a, b), direction=EQ\n"
    "  lt = pred[] compare(i, j), direction=LT\n  tie = pred[] and(eq, lt)\n"
    "  first = pred[] or(keep, tie)\n  k = s32[] select(first, i, j)\n"
    "  ROOT t = (f32[], s32[]) tuple(v, k)\n}\n";

const std::string kTwoSums =
    "sums {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = f32[] parameter(2)\n"
    "  d = f32[] parameter(3)\n  s = f32[] add(a, c)\n  t = f32[] add(b, d)\n"
    "  ROOT r = (f32[], f32[]) tuple(s, t)\n}\n";

std::string Dims(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s;
}

// argmax over dimension `dim` of x [rows, cols], as the module computes it.
std::vector<int32_t> Argmax(const std::vector<float>& x, int64_t rows, int64_t cols, int dim) {
  const std::string shape = "f32[" + Dims({rows, cols}) + "]";
  const std::string out = std::to_string(dim == 1 ? rows : cols);
  Literal r = RunXla("  x = " + shape + " parameter(0)\n  n = s32[" + Dims({rows, cols}) +
                         "] iota(), iota_dimension=" + std::to_string(dim) +
                         "\n  z = f32[] constant(-inf)\n  zi = s32[] constant(0)\n"
                         "  r = (f32[" +
                         out + "], s32[" + out +
                         "]) reduce(x, n, z, zi), "
                         "dimensions={" +
                         std::to_string(dim) +
                         "}, to_apply=argmax\n"
                         "  ROOT i = s32[" +
                         out + "] get-tuple-element(r), index=1\n",
                     {F32({rows, cols}, x)}, kArgmax);
  return Values<int32_t>(r);
}

// The first index of a NaN, else of the largest value.
int32_t Expected(const std::vector<float>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<int32_t>(i);
  }
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] > v[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

TEST(ReduceMany, ArgmaxPicksTheFirstLargestAndNaNFirst) {
  // 200 columns: three full leaves of 64, a short one of 8, and a tree over the four.
  const int64_t rows = 4, cols = 200;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-5, 5);  // many ties
  std::vector<float> x(rows * cols);
  for (float& v : x) v = static_cast<float>(small(rng));
  x[1 * cols + 150] = std::numeric_limits<float>::quiet_NaN();
  x[1 * cols + 70] = std::numeric_limits<float>::quiet_NaN();
  for (int64_t c = 0; c < cols; ++c) x[2 * cols + c] = -std::numeric_limits<float>::infinity();
  x[3 * cols + 199] = 100;  // the largest in the short leaf
  std::vector<int32_t> got = Argmax(x, rows, cols, 1);
  ASSERT_EQ(got.size(), static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> row(x.begin() + r * cols, x.begin() + (r + 1) * cols);
    EXPECT_EQ(got[r], Expected(row)) << "row " << r;
  }
  EXPECT_EQ(got[1], 70);
  EXPECT_EQ(got[2], 0);
  EXPECT_EQ(got[3], 199);
  // Along the first dimension (a transpose first): 4 elements per output, one short leaf.
  std::vector<int32_t> down = Argmax(x, rows, cols, 0);
  ASSERT_EQ(down.size(), static_cast<size_t>(cols));
  for (int64_t c = 0; c < cols; ++c) {
    std::vector<float> col;
    for (int64_t r = 0; r < rows; ++r) col.push_back(x[r * cols + c]);
    EXPECT_EQ(down[c], Expected(col)) << "column " << c;
  }
}

// A float sum depends on the order: two sums reduced together must give the bits of the
// one-input reduce (kPairwise64), for one dimension and for two, not adjacent, dimensions.
TEST(ReduceMany, SumsFollowReducesCanonicalOrder) {
  struct Case {
    std::vector<int64_t> dims, reduced, kept;
  };
  const Case cases[] = {
      {{1000}, {0}, {}}, {{5, 7, 40}, {0, 2}, {7}}, {{3, 64}, {1}, {3}}, {{2, 0}, {1}, {2}}};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1000, 1000);
  for (const Case& c : cases) {
    int64_t n = 1;
    for (int64_t d : c.dims) n *= d;
    std::vector<float> a(n), b(n);
    for (float& v : a) v = u(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 20) - 10);
    for (float& v : b) v = u(rng);
    const std::string in = "f32[" + Dims(c.dims) + "]", out = "f32[" + Dims(c.kept) + "]";
    const std::string dims = "dimensions={" + Dims(c.reduced) + "}";
    Literal both = RunXla("  a = " + in + " parameter(0)\n  b = " + in + " parameter(1)\n" +
                              "  z = f32[] constant(0.25)\n  r = (" + out + ", " + out +
                              ") reduce(a, b, z, z), " + dims + ", to_apply=sums\n" +
                              "  ROOT t = " + out + " get-tuple-element(r), index=0\n",
                          {F32(c.dims, a), F32(c.dims, b)}, kTwoSums);
    Literal one = RunXla("  a = " + in + " parameter(0)\n  z = f32[] constant(0.25)\n" +
                             "  ROOT r = " + out + " reduce(a, z), " + dims + ", to_apply=add\n",
                         {F32(c.dims, a)}, kAddF32);
    EXPECT_EQ(Bits(both), Bits(one)) << in << " " << dims;
  }
}

// reduce-window of several inputs (XLA's optimized max-pooling gradient keeps the max and its
// position per window): each window's taps in row-major order are its sequence. Overlapping
// windows of 3x2 with stride 1x2, against brute force.
TEST(ReduceMany, WindowedArgmaxAgainstBruteForce) {
  const int64_t rows = 5, cols = 6;  // windows: 3 x 3
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<float> x(rows * cols);
  for (float& v : x) v = static_cast<float>(small(rng));
  x[8] = std::numeric_limits<float>::quiet_NaN();
  Literal r = RunXla(
      "  x = f32[5,6] parameter(0)\n  n = s32[5,6] iota(), iota_dimension=1\n"
      "  z = f32[] constant(-inf)\n  zi = s32[] constant(-1)\n"
      "  r = (f32[3,3], s32[3,3]) reduce-window(x, n, z, zi), window={size=3x2 stride=1x2}, "
      "to_apply=argmax\n  ROOT i = s32[3,3] get-tuple-element(r), index=1\n",
      {F32({rows, cols}, x)}, kArgmax);
  std::vector<int32_t> got = Values<int32_t>(r);
  ASSERT_EQ(got.size(), 9u);
  for (int64_t wr = 0; wr < 3; ++wr) {
    for (int64_t wc = 0; wc < 3; ++wc) {
      // The taps in row-major order; the index input is the column, ties go to the smaller.
      std::vector<float> taps;
      std::vector<int32_t> column;
      for (int64_t a = 0; a < 3; ++a) {
        for (int64_t b = 0; b < 2; ++b) {
          taps.push_back(x[(wr + a) * cols + wc * 2 + b]);
          column.push_back(static_cast<int32_t>(wc * 2 + b));
        }
      }
      // The combiner keeps the accumulator on a NaN or a larger value, and on equal values
      // the smaller index: the first NaN, else the largest value with the smallest column.
      int32_t want = -1;
      float best = -std::numeric_limits<float>::infinity();
      for (size_t t = 0; t < taps.size(); ++t) {
        if (std::isnan(best)) break;
        if (std::isnan(taps[t]) || taps[t] > best || (taps[t] == best && column[t] < want)) {
          best = taps[t];
          want = column[t];
        }
      }
      EXPECT_EQ(got[wr * 3 + wc], want) << "window " << wr << "," << wc;
    }
  }
}

// A windowed float sum of 10x10 = 100 taps (a full leaf of 64, a short one of 36, a tree):
// two sums together give the bits of the one-input reduce-window.
TEST(ReduceMany, WindowedSumsFollowReduceWindowsOrder) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1000, 1000);
  std::vector<float> a(14 * 13), b(14 * 13);
  for (float& v : a) v = u(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 16) - 8);
  for (float& v : b) v = u(rng);
  const std::string window = "window={size=10x10 stride=2x3}";  // windows: 3 x 2
  Literal both = RunXla(
      "  a = f32[14,13] parameter(0)\n  b = f32[14,13] parameter(1)\n  z = f32[] constant(0)\n"
      "  r = (f32[3,2], f32[3,2]) reduce-window(a, b, z, z), " +
          window +
          ", to_apply=sums\n"
          "  ROOT t = f32[3,2] get-tuple-element(r), index=0\n",
      {F32({14, 13}, a), F32({14, 13}, b)}, kTwoSums);
  Literal one = RunXla(
      "  a = f32[14,13] parameter(0)\n  z = f32[] constant(0)\n"
      "  ROOT r = f32[3,2] reduce-window(a, z), " +
          window + ", to_apply=add\n",
      {F32({14, 13}, a)}, kAddF32);
  EXPECT_EQ(Bits(both), Bits(one));
}

}  // namespace
}  // namespace detrain::testing
