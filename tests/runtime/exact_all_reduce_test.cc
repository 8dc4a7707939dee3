// runtime::ExactAllReduceSum (cluster.h): P ranks as threads on the in-process cluster. Every
// rank ends with, for each element, the pairwise tree over the ranks' values in rank order — the
// bits computed here by a plain reference over all ranks' inputs — for P = 1..8 and sizes
// smaller than P (empty chunks), not divisible by P, and large; with NaN payloads, signed zeros
// and values whose sum depends on the order.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "compiler/semantics/scalar.h"
#include "runtime/cluster.h"

namespace detrain::runtime {
namespace {

uint32_t Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float FromBits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// Rank r's input: order-sensitive magnitudes, with a few NaN payloads and signed zeros.
std::vector<float> Input(int r, int64_t n) {
  std::mt19937 gen(static_cast<uint32_t>(1000 * r + n));
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float x = std::ldexp(static_cast<float>(gen() % 2000) - 1000.0f, static_cast<int>(gen() % 40));
    if (i % 97 == 5) x = FromBits(0x7fc00000u | (static_cast<uint32_t>(r) << 4) | 1u);
    if (i % 89 == 3) x = FromBits(0x80000000u);
    if (i % 83 == 7 && r % 2 == 1) x = FromBits(0xff800000u);  // -inf on odd ranks
    v[static_cast<size_t>(i)] = x;
  }
  return v;
}

// The pairwise tree over ranks, element by element, with the NaN rule.
std::vector<float> Reference(int p, int64_t n) {
  std::vector<std::vector<float>> in;
  for (int r = 0; r < p; ++r) in.push_back(Input(r, n));
  for (int s = 1; s < p; s *= 2) {
    for (int q = 0; q + s < p; q += 2 * s) {
      for (int64_t i = 0; i < n; ++i) {
        float& a = in[static_cast<size_t>(q)][static_cast<size_t>(i)];
        a = semantics::ApplyBinary<float>(ir::BinaryOp::kAdd, a,
                                          in[static_cast<size_t>(q + s)][static_cast<size_t>(i)]);
      }
    }
  }
  return in[0];
}

TEST(ExactAllReduce, EveryRankHoldsTheTreeOverRanksInRankOrder) {
  for (int p = 1; p <= 8; ++p) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{7}, int64_t{1000}, int64_t{4097},
                      int64_t{100003}}) {
      SCOPED_TRACE("P = " + std::to_string(p) + ", n = " + std::to_string(n));
      auto clusters = MakeLocalClusters(p, 30);
      std::vector<std::vector<float>> data(static_cast<size_t>(p));
      std::vector<Status> status(static_cast<size_t>(p));
      std::vector<std::thread> threads;
      for (int r = 0; r < p; ++r) {
        data[static_cast<size_t>(r)] = Input(r, n);
        threads.emplace_back([&, r] {
          std::vector<float> scratch;
          auto i = static_cast<size_t>(r);
          status[i] = ExactAllReduceSum(*clusters[i], data[i].data(), n, &scratch);
        });
      }
      for (auto& t : threads) t.join();
      const std::vector<float> expected = Reference(p, n);
      for (int r = 0; r < p; ++r) {
        ASSERT_TRUE(status[static_cast<size_t>(r)].ok())
            << status[static_cast<size_t>(r)].message();
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(Bits(data[static_cast<size_t>(r)][static_cast<size_t>(i)]),
                    Bits(expected[static_cast<size_t>(i)]))
              << "rank " << r << ", element " << i;
        }
      }
    }
  }
}

// The order matters: the same values summed left to right give other bits for these inputs, so
// the test above would see a reduction that did not keep the tree.
TEST(ExactAllReduce, TheTreeIsNotTheLeftToRightSum) {
  const int p = 5;
  const int64_t n = 1000;
  const std::vector<float> tree = Reference(p, n);
  int differ = 0;
  for (int64_t i = 0; i < n; ++i) {
    float sum = Input(0, n)[static_cast<size_t>(i)];
    for (int r = 1; r < p; ++r) sum += Input(r, n)[static_cast<size_t>(i)];
    if (Bits(sum) != Bits(tree[static_cast<size_t>(i)]) && sum == sum) ++differ;
  }
  EXPECT_GT(differ, 10);
}

TEST(ExactAllReduce, ARankThatNeverAnswersIsAnError) {
  auto clusters = MakeLocalClusters(2, 0.2);
  std::vector<float> data(10, 1.0f), scratch;
  Status st = ExactAllReduceSum(*clusters[0], data.data(), 10, &scratch);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 1"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace detrain::runtime
