// Data movement and indexing ops on hand-computed values (XLA semantics, docs/ir.md).
#include "interp_test_util.h"

namespace detrain::testing {
namespace {

const Literal kM23 = F32({2, 3}, {1, 2, 3, 4, 5, 6});

std::vector<float> RunF(const std::string& body, std::vector<Literal> args) {
  return Values<float>(RunHlo(body, std::move(args)));
}

TEST(DataMovement, BroadcastReshapeTranspose) {
  EXPECT_EQ(RunF("  x = f32[3] parameter(0)\n  ROOT y = f32[2,3] broadcast(x), dimensions={1}\n",
                 {F32({3}, {1, 2, 3})}),
            (std::vector<float>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(RunF("  x = f32[2] parameter(0)\n  ROOT y = f32[2,3] broadcast(x), dimensions={0}\n",
                 {F32({2}, {7, 8})}),
            (std::vector<float>{7, 7, 7, 8, 8, 8}));
  EXPECT_EQ(RunF("  x = f32[] parameter(0)\n  ROOT y = f32[2] broadcast(x), dimensions={}\n",
                 {F32({}, {9})}),
            (std::vector<float>{9, 9}));
  EXPECT_EQ(RunF("  x = f32[2,3] parameter(0)\n  ROOT y = f32[3,2] reshape(x)\n", {kM23}),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(
      RunF("  x = f32[2,3] parameter(0)\n  ROOT y = f32[3,2] transpose(x), dimensions={1,0}\n",
           {kM23}),
      (std::vector<float>{1, 4, 2, 5, 3, 6}));
  auto t3 = RunF(
      "  x = f32[2,3] parameter(0)\n  r = f32[1,2,3] reshape(x)\n"
      "  ROOT y = f32[3,1,2] transpose(r), dimensions={2,0,1}\n",
      {kM23});
  EXPECT_EQ(t3, (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(DataMovement, SliceConcatenatePadReverse) {
  EXPECT_EQ(
      RunF("  x = f32[2,3] parameter(0)\n  ROOT y = f32[2,2] slice(x), slice={[0:2], [0:3:2]}\n",
           {kM23}),
      (std::vector<float>{1, 3, 4, 6}));
  EXPECT_EQ(
      RunF("  x = f32[2,3] parameter(0)\n  ROOT y = f32[2,6] concatenate(x, x), dimensions={1}\n",
           {kM23}),
      (std::vector<float>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  // low 1, high 0, interior 1 on dim 0; crop 1 on the left and add 1 on the right of dim 1.
  EXPECT_EQ(RunF("  x = f32[2,3] parameter(0)\n  z = f32[] constant(0)\n"
                 "  ROOT y = f32[4,3] pad(x, z), padding=1_0_1x-1_1\n",
                 {kM23}),
            (std::vector<float>{0, 0, 0, 2, 3, 0, 0, 0, 0, 5, 6, 0}));
  EXPECT_EQ(
      RunF("  x = f32[2,3] parameter(0)\n  ROOT y = f32[2,3] reverse(x), dimensions={1}\n", {kM23}),
      (std::vector<float>{3, 2, 1, 6, 5, 4}));
}

TEST(DataMovement, DynamicSlicesClampTheirStart) {
  std::string body =
      "  x = f32[2,3] parameter(0)\n  i = s32[] parameter(1)\n  j = s32[] parameter(2)\n"
      "  ROOT y = f32[1,2] dynamic-slice(x, i, j), dynamic_slice_sizes={1,2}\n";
  EXPECT_EQ(RunF(body, {kM23, S32({}, {1}), S32({}, {0})}), (std::vector<float>{4, 5}));
  EXPECT_EQ(RunF(body, {kM23, S32({}, {7}), S32({}, {-3})}),
            (std::vector<float>{4, 5}));  // clamped to (1, 0)
  EXPECT_EQ(RunF(body, {kM23, S32({}, {0}), S32({}, {5})}),
            (std::vector<float>{2, 3}));  // clamped to (0, 1)
  EXPECT_EQ(RunF("  x = f32[2,3] parameter(0)\n  u = f32[1,2] constant({{8, 9}})\n  i = s32[] "
                 "constant(9)\n"
                 "  ROOT y = f32[2,3] dynamic-update-slice(x, u, i, i)\n",
                 {kM23}),
            (std::vector<float>{1, 2, 3, 4, 8, 9}));
}

TEST(Indexing, GatherRowsClampsIndices) {
  EXPECT_EQ(RunF("  x = f32[2,3] parameter(0)\n  i = s32[3,1] constant({{1}, {0}, {5}})\n"
                 "  ROOT y = f32[3,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, "
                 "start_index_map={0}, "
                 "index_vector_dim=1, slice_sizes={1,3}\n",
                 {kM23}),
            (std::vector<float>{4, 5, 6, 1, 2, 3, 4, 5, 6}));
  // Two-component index vectors picking single elements: x[i0, i1].
  EXPECT_EQ(
      RunF("  x = f32[2,3] parameter(0)\n  i = s32[2,2] constant({{0, 2}, {1, 1}})\n"
           "  ROOT y = f32[2] gather(x, i), collapsed_slice_dims={0,1}, start_index_map={0,1}, "
           "index_vector_dim=1, slice_sizes={1,1}\n",
           {kM23}),
      (std::vector<float>{3, 5}));
}

TEST(Indexing, ScatterAddsInUpdateOrderAndSkipsOutOfBounds) {
  std::string body =
      "  x = f32[3] constant({0, 10, 20})\n  i = s32[4,1] constant({{2}, {0}, {2}, {3}})\n"
      "  u = f32[4] parameter(0)\n"
      "  ROOT y = f32[3] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, "
      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n";
  EXPECT_EQ(Values<float>(RunHlo(body, {F32({4}, {1, 2, 3, 100})}, kAddF32)),
            (std::vector<float>{2, 10, 24}));
  // Order: 1e8 first, then 1 (lost to rounding), then -1e8 -> 0; another order would give 1.
  std::string order =
      "  x = f32[1] constant({0})\n  i = s32[3,1] constant({{0}, {0}, {0}})\n  u = f32[3] "
      "parameter(0)\n"
      "  ROOT y = f32[1] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, "
      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n";
  EXPECT_EQ(Values<float>(RunHlo(order, {F32({3}, {1e8f, 1.0f, -1e8f})}, kAddF32)),
            (std::vector<float>{0.0f}));
  EXPECT_EQ(Values<float>(RunHlo(order, {F32({3}, {1e8f, -1e8f, 1.0f})}, kAddF32)),
            (std::vector<float>{1.0f}));
  // Row windows: rows of updates added to rows 1 and 0.
  EXPECT_EQ(
      Values<float>(RunHlo(
          "  x = f32[2,3] parameter(0)\n  i = s32[2] constant({1, 0})\n  u = f32[2,3] "
          "parameter(1)\n"
          "  ROOT y = f32[2,3] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, "
          "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n",
          {kM23, F32({2, 3}, {10, 20, 30, 40, 50, 60})}, kAddF32)),
      (std::vector<float>{41, 52, 63, 14, 25, 36}));
}

TEST(Structural, TupleCallAndGetTupleElement) {
  std::string twice = "twice {\n  v = f32[2] parameter(0)\n  ROOT d = f32[2] add(v, v)\n}\n";
  auto r = RunHlo(
      "  x = f32[2] parameter(0)\n  c = f32[2] call(x), to_apply=twice\n  t = (f32[2], f32[2]) "
      "tuple(x, c)\n"
      "  ROOT g = f32[2] get-tuple-element(t), index=1\n",
      {F32({2}, {1.5f, -2})}, twice);
  EXPECT_EQ(Values<float>(r), (std::vector<float>{3, -4}));
}

}  // namespace
}  // namespace detrain::testing
