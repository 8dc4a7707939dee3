// The exact GEMM (src/runtime/cpu/gemm.h) against the contract's chain, semantics::FmaChain,
// bit for bit: every ISA path, 1-3 threads, shapes around every blocking edge (register tile,
// k block, row block, in-place and packed B), transposed and batched views, signed zeros,
// infinities and NaNs (canonical payload).
#include "runtime/cpu/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/isa.h"
#include "base/thread_pool.h"
#include "compiler/semantics/orders.h"

namespace detrain::runtime::cpu {
namespace {

struct Lcg {
  uint32_t x;
  float Next() {
    x = x * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int32_t>(x >> 8) - (1 << 23)) / (1 << 20);
  }
};

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Runs C = A B with A m x k (transposed storage if at), B k x n (transposed if bt), `batch`
// batches, and compares every element with FmaChain.
void Check(int64_t batch, int64_t m, int64_t n, int64_t k, bool at, bool bt, Isa isa, int threads,
           const std::vector<float>* special = nullptr) {
  Lcg g{static_cast<uint32_t>(m * 131 + n * 17 + k)};
  std::vector<float> a(static_cast<size_t>(batch * m * k)), b(static_cast<size_t>(batch * k * n));
  for (float& v : a) v = g.Next();
  for (float& v : b) v = g.Next();
  if (special != nullptr) {
    for (size_t i = 0; i < a.size(); i += 5) a[i] = (*special)[i % special->size()];
    for (size_t i = 0; i < b.size(); i += 7) b[i] = (*special)[(i / 7) % special->size()];
  }
  // A(i, p) at a[i * ars + p * acs]; B(p, j) at b[p * brs + j * bcs].
  const int64_t ars = at ? 1 : k, acs = at ? m : 1, brs = bt ? 1 : n, bcs = bt ? k : 1;
  std::vector<float> c(static_cast<size_t>(batch * m * n), 12345.0f);
  ThreadPool pool(static_cast<size_t>(threads));
  ExecContext ctx{&pool, isa};
  BatchedGemm(MatrixView{a.data(), ars, acs, m * k}, MatrixView{b.data(), brs, bcs, k * n},
              c.data(), batch, m, n, k, ctx);
  int64_t bad = 0;
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float want = semantics::FmaChain(a.data() + bi * m * k + i * ars, acs,
                                               b.data() + bi * k * n + j * bcs, brs, k);
        const float got = c[static_cast<size_t>((bi * m + i) * n + j)];
        if (Bits(want) != Bits(got) && bad++ < 5) {
          ADD_FAILURE() << "batch " << bi << " (" << i << ", " << j << ") of " << m << "x" << n
                        << "x" << k << (at ? " At" : "") << (bt ? " Bt" : "") << " isa "
                        << IsaName(isa) << " threads " << threads << ": got " << std::hex
                        << Bits(got) << " want " << Bits(want);
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

std::vector<Isa> Isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (ClampIsa(isa) == isa) out.push_back(isa);
  }
  return out;
}

TEST(Gemm, EdgesOfEveryBlockingLevel) {
  // Rows: around 1, the tile rows (4, 6, 12), the direct-B limit (64), the packed row block
  // (96); columns: around the tile columns (16, 32) and panels; k: around the k block (192).
  const int64_t shapes[][3] = {{1, 1, 1},     {1, 17, 3},   {5, 33, 191},  {12, 32, 192},
                               {13, 31, 193}, {64, 64, 64}, {65, 48, 385}, {97, 70, 200},
                               {200, 9, 30},  {3, 100, 1},  {130, 129, 17}};
  for (Isa isa : Isas()) {
    for (int threads : {1, 2, 3}) {
      for (const auto& s : shapes) Check(1, s[0], s[1], s[2], false, false, isa, threads);
    }
  }
}

TEST(Gemm, TransposedAndBatchedViews) {
  for (Isa isa : Isas()) {
    for (bool at : {false, true}) {
      for (bool bt : {false, true}) {
        Check(1, 40, 50, 300, at, bt, isa, 2);
        Check(3, 7, 33, 20, at, bt, isa, 2);
        Check(2, 100, 20, 5, at, bt, isa, 1);
      }
    }
  }
}

TEST(Gemm, ZerosInfinitiesAndNansAreTheChainsBits) {
  const float inf = std::numeric_limits<float>::infinity();
  float nan_payload;
  const uint32_t payload = 0x7fc12345u;
  std::memcpy(&nan_payload, &payload, 4);
  const std::vector<float> special = {0.0f,         -0.0f,  inf,    -inf, nan_payload,
                                      -nan_payload, 1e-40f, -1e38f, 3e38f};
  for (Isa isa : Isas()) {
    Check(1, 30, 40, 50, false, false, isa, 2, &special);
    Check(1, 70, 33, 200, true, false, isa, 1, &special);
  }
}

// Products of at most 16 columns run on the narrow tile (16 x 16 on AVX-512): around its rows
// and columns, around the k block, transposed operands, 1 and 2 threads, with zeros, infinities
// and NaN payloads in the operands.
TEST(Gemm, NarrowProductsAreTheChainsBits) {
  const float inf = std::numeric_limits<float>::infinity();
  float nan_payload;
  const uint32_t payload = 0x7fc54321u;
  std::memcpy(&nan_payload, &payload, 4);
  const std::vector<float> special = {0.0f, -0.0f, inf, -inf, nan_payload, -nan_payload, 1e-40f};
  const int64_t shapes[][3] = {{15, 16, 7},  {16, 16, 192}, {17, 15, 193}, {33, 10, 50},
                               {200, 1, 30}, {64, 16, 385}, {100, 12, 64}};
  for (Isa isa : Isas()) {
    for (int threads : {1, 2}) {
      for (const auto& s : shapes) {
        Check(1, s[0], s[1], s[2], false, false, isa, threads);
        Check(1, s[0], s[1], s[2], threads == 2, threads == 1, isa, threads, &special);
      }
      Check(3, 21, 16, 40, false, true, isa, threads, &special);
    }
  }
}

// NaNs are found tile by tile as the last k block completes each tile, partial tiles included.
// A swapped product whose NaNs lie in the output's last row and last column — in the partial row
// group and the partial panel — and meet in the corner element, where both operands hold a payload
// at the same p: the chain takes A's (semantics::FmaNan), the hardware's fma, given the operands
// swapped, B's; only a recomputed tile has the chain's bits.
TEST(Gemm, NansInPartialTilesAreTheChainsBits) {
  float n1, n2;
  const uint32_t p1 = 0x7fc0abcdu, p2 = 0xffc01234u;
  std::memcpy(&n1, &p1, 4);
  std::memcpy(&n2, &p2, 4);
  for (Isa isa : Isas()) {
    for (int64_t k : {int64_t{50}, int64_t{200}}) {  // one k block, and two
      const int64_t m = 70, n = 33;
      Lcg g{11};
      std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
      for (float& v : a) v = g.Next();
      for (float& v : b) v = g.Next();
      a[static_cast<size_t>((m - 1) * k + k - 1)] = n1;
      b[static_cast<size_t>((k - 1) * n + n - 1)] = n2;
      std::vector<float> out(static_cast<size_t>(n * m), 0.0f);
      ExecContext ctx{nullptr, isa};
      // out (n x m) = (A B)^T computed as B^T A^T.
      BatchedGemm(MatrixView{b.data(), 1, n, 0}, MatrixView{a.data(), 1, k, 0}, out.data(), 1, n, m,
                  k, ctx, /*swapped=*/true);
      int64_t bad = 0, nans = 0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const float want = semantics::FmaChain(a.data() + i * k, 1, b.data() + j, n, k);
          const float got = out[static_cast<size_t>(j * m + i)];
          nans += got != got;
          bad += Bits(want) != Bits(got);
        }
      }
      EXPECT_EQ(nans, m + n - 1) << "the NaN row and column";
      EXPECT_EQ(bad, 0) << IsaName(isa) << " k " << k;
    }
  }
}

// The transposed product (gemm.h `swapped`): out = (A B)^T computed as B^T A^T; every element,
// NaN payloads included, must be the defined chain of A's row and B's column.
TEST(Gemm, SwappedProductKeepsTheDefinedOperandOrder) {
  const float inf = std::numeric_limits<float>::infinity();
  float n1, n2;
  const uint32_t p1 = 0x7fc11111u, p2 = 0xffc22222u;
  std::memcpy(&n1, &p1, 4);
  std::memcpy(&n2, &p2, 4);
  for (Isa isa : Isas()) {
    const int64_t m = 37, n = 45, k = 210;
    Lcg g{7};
    std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
    for (float& v : a) v = g.Next();
    for (float& v : b) v = g.Next();
    for (size_t i = 0; i < a.size(); i += 11) a[i] = i % 3 == 0 ? n1 : inf;
    for (size_t i = 0; i < b.size(); i += 13) b[i] = i % 2 == 0 ? n2 : -inf;
    std::vector<float> out(static_cast<size_t>(n * m));
    ThreadPool pool(2);
    ExecContext ctx{&pool, isa};
    // A' = B^T: A'(i, p) = b[p * n + i]; B' = A^T: B'(p, j) = a[j * k + p].
    BatchedGemm(MatrixView{b.data(), 1, n, 0}, MatrixView{a.data(), 1, k, 0}, out.data(), 1, n, m,
                k, ctx, /*swapped=*/true);
    int64_t bad = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float want = semantics::FmaChain(a.data() + i * k, 1, b.data() + j, n, k);
        bad += Bits(want) != Bits(out[static_cast<size_t>(j * m + i)]);
      }
    }
    EXPECT_EQ(bad, 0) << IsaName(isa);
  }
}

TEST(Gemm, EmptyKIsPositiveZero) {
  std::vector<float> c(6, 7.0f);
  ExecContext ctx{nullptr, Isa::kScalar};
  BatchedGemm(MatrixView{nullptr, 0, 1, 0}, MatrixView{nullptr, 3, 1, 0}, c.data(), 1, 2, 3, 0,
              ctx);
  for (float v : c) EXPECT_EQ(Bits(v), 0u);
}

}  // namespace
}  // namespace detrain::runtime::cpu
