// The canonical orders of compiler/semantics/orders.h, each checked with inputs for which another
// order gives different bits, and the block-tree property the multi-device all-reduce relies on.
#include "compiler/semantics/orders.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace detrain::semantics {
namespace {

float Add(float a, float b) { return a + b; }

TEST(PairwiseTree, CombinesNeighboursLevelByLevelAndCarriesAnOddLastUp) {
  // Record the tree's shape as text: it must be ((0 1) (2 3)) 4 for five leaves.
  std::vector<std::string> v = {"0", "1", "2", "3", "4"};
  std::string root = PairwiseTreeInPlace(
      v.data(), 5,
      [](const std::string& a, const std::string& b) { return "(" + a + " " + b + ")"; });
  EXPECT_EQ(root, "(((0 1) (2 3)) 4)");
  std::vector<std::string> six = {"0", "1", "2", "3", "4", "5"};
  EXPECT_EQ(PairwiseTreeInPlace(
                six.data(), 6,
                [](const std::string& a, const std::string& b) { return "(" + a + " " + b + ")"; }),
            "(((0 1) (2 3)) (4 5))");
  std::vector<std::string> one = {"x"};
  EXPECT_EQ(PairwiseTreeInPlace(one.data(), 1,
                                [](const std::string& a, const std::string& b) { return a + b; }),
            "x");
}

TEST(PairwiseTree, FloatResultDiffersFromLeftToRight) {
  // Float spacing at 1e8 is 8: the tree adds the two 4s first and keeps them, left to right loses
  // each one.
  std::vector<float> w = {1e8f, 0.0f, 4.0f, 4.0f};
  float tree = PairwiseTreeInPlace(w.data(), 4, Add);  // (1e8 + 0) + (4 + 4) = 100000008
  float ltr = ((1e8f + 0.0f) + 4.0f) + 4.0f;           // ties to even twice: 100000000
  EXPECT_EQ(tree, 100000008.0f);
  EXPECT_EQ(ltr, 100000000.0f);
}

TEST(FmaChain, IsOneFusedChainFromPositiveZeroInAscendingK) {
  // k=0: 1 * b = b exactly; k=1: fmaf(a, a, b) = 2^-24 exactly. Without fma: round(a*a) + b = 0.
  // Descending k: fmaf(1, b, round(a * a)) = 0.
  float a = 1.0f + 0x1p-12f;
  float b = -(1.0f + 0x1p-11f);
  float lhs[] = {1.0f, a};
  float rhs[] = {b, 0.0f, a, 0.0f};  // stride 2
  EXPECT_EQ(FmaChain(lhs, 1, rhs, 2, 2), 0x1p-24f);
  EXPECT_EQ(FloatBits(FmaChain(lhs, 1, rhs, 2, 0)), 0u);  // +0.0f for an empty chain
  // -0 * 1 chain: fmaf(-0, 1, +0) = +0, so the sum of signed zeros starts from +0.
  float neg_zero[] = {-0.0f};
  float one[] = {1.0f};
  EXPECT_EQ(FloatBits(FmaChain(neg_zero, 1, one, 1, 1)), 0u);
  float got = DotChain<float>(
      2, [&](int64_t i) { return lhs[i]; }, [&](int64_t i) { return rhs[2 * i]; });
  EXPECT_EQ(got, 0x1p-24f);
}

TEST(CanonicalReduce, LeafCount) {
  EXPECT_EQ(ReduceLeafCount(0), 0);
  EXPECT_EQ(ReduceLeafCount(1), 1);
  EXPECT_EQ(ReduceLeafCount(64), 1);
  EXPECT_EQ(ReduceLeafCount(65), 2);
  EXPECT_EQ(ReduceLeafCount(150), 3);
}

float Reduce(const std::vector<float>& x, float init) {
  std::vector<float> scratch(static_cast<size_t>(ReduceLeafCount(static_cast<int64_t>(x.size()))));
  return CanonicalReduce(
      static_cast<int64_t>(x.size()), init, [&](int64_t i) { return x[static_cast<size_t>(i)]; },
      Add, scratch.data());
}

TEST(CanonicalReduce, Uses64ElementLeavesFromInitThenAPairwiseTree) {
  // x[0] = 1e8, x[1..127] = 1 (float spacing at 1e8 is 8).
  //   64-leaf + tree: leaf0 = 1e8 (each +1 is lost), leaf1 = 64  -> 100000064
  //   left to right:  every +1 is lost                            -> 100000000
  //   pairwise from single elements                               -> 100000128
  std::vector<float> x(128, 1.0f);
  x[0] = 1e8f;
  EXPECT_EQ(Reduce(x, 0.0f), 100000064.0f);
  // init starts every leaf: with init 1e8 on an all-ones input, each leaf is 1e8, the tree 2e8.
  std::vector<float> ones(128, 1.0f);
  EXPECT_EQ(Reduce(ones, 1e8f), 2e8f);
}

TEST(CanonicalReduce, CarriesAnOddLeafUpUnchanged) {
  // 150 elements = leaves of 64, 64, 22: (L0 + L1) + L2 = (1e8 - 1e8) + 1 = 1; L0 + (L1 + L2) = 0.
  std::vector<float> x(150, 0.0f);
  x[0] = 1e8f;
  x[64] = -1e8f;
  x[128] = 1.0f;
  EXPECT_EQ(Reduce(x, 0.0f), 1.0f);
}

TEST(CanonicalReduce, EmptyGivesInitAndCombineOrderIsAccumulatorFirst) {
  EXPECT_EQ(FloatBits(Reduce({}, -0.0f)), 0x80000000u);
  // A non-commutative combine records the operand order: acc first, value second.
  std::vector<std::string> scratch(1);
  std::string s = CanonicalReduce<std::string>(
      3, "i", [](int64_t i) { return std::to_string(i); },
      [](const std::string& a, const std::string& b) { return "(" + a + " " + b + ")"; },
      scratch.data());
  EXPECT_EQ(s, "(((i 0) 1) 2)");
}

// The tree over D contiguous equal blocks of B = 2^m leaves equals the tree over the D block
// trees: the property that lets the all-reduce perform the upper levels of the shard tree.
std::string Tree(std::vector<std::string> v) {
  return PairwiseTreeInPlace(
      v.data(), static_cast<int64_t>(v.size()),
      [](const std::string& a, const std::string& b) { return "(" + a + " " + b + ")"; });
}

std::string TreeOfBlockTrees(const std::vector<std::string>& leaves, size_t block) {
  std::vector<std::string> roots;
  for (size_t d = 0; d < leaves.size(); d += block) {
    roots.push_back(Tree({leaves.begin() + static_cast<std::ptrdiff_t>(d),
                          leaves.begin() + static_cast<std::ptrdiff_t>(d + block)}));
  }
  return Tree(roots);
}

TEST(BlockTree, WholeTreeEqualsTreeOfPowerOfTwoBlockTrees) {
  for (size_t devices = 1; devices <= 12; ++devices) {
    for (size_t block : {1, 2, 4, 8, 16}) {
      std::vector<std::string> leaves;
      for (size_t i = 0; i < devices * block; ++i) leaves.push_back(std::to_string(i));
      ASSERT_TRUE(
          BlockTreeSplits(static_cast<int64_t>(leaves.size()), static_cast<int64_t>(block)));
      EXPECT_EQ(Tree(leaves), TreeOfBlockTrees(leaves, block)) << devices << " blocks of " << block;
    }
  }
}

TEST(BlockTree, FailsForBlocksThatAreNotAPowerOfTwo) {
  // 2 blocks of 3: the whole tree is (((0 1) (2 3)) (4 5)); the block trees give
  // (((0 1) 2) ((3 4) 5)).
  std::vector<std::string> leaves = {"0", "1", "2", "3", "4", "5"};
  EXPECT_FALSE(BlockTreeSplits(6, 3));
  EXPECT_NE(Tree(leaves), TreeOfBlockTrees(leaves, 3));
  EXPECT_FALSE(BlockTreeSplits(8, 0));
  EXPECT_FALSE(BlockTreeSplits(12, 8));
}

TEST(BlockTree, FloatSumsOverEightShardsAgreeForEveryDeviceCount) {
  // Values chosen so that different groupings round differently.
  std::vector<float> shards = {1e8f, 3.0f, -1e8f, 5.0f, 7.0f, 1e-3f, 2.5f, -4.0f};
  std::vector<float> whole = shards;
  float reference = PairwiseTreeInPlace(whole.data(), 8, Add);
  for (int64_t devices : {1, 2, 4, 8}) {
    int64_t block = 8 / devices;
    std::vector<float> roots;
    for (int64_t d = 0; d < devices; ++d) {
      std::vector<float> part(shards.begin() + d * block, shards.begin() + (d + 1) * block);
      roots.push_back(PairwiseTreeInPlace(part.data(), block, Add));
    }
    EXPECT_EQ(FloatBits(PairwiseTreeInPlace(roots.data(), devices, Add)), FloatBits(reference))
        << devices;
  }
  // ...while a left-to-right sum differs, so the check has teeth.
  float ltr = 0.0f;
  for (float s : shards) ltr += s;
  EXPECT_NE(FloatBits(ltr), FloatBits(reference));
}

}  // namespace
}  // namespace detrain::semantics
