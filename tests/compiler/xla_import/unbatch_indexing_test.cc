// Gather and scatter with batching dimensions through the importer (unbatch_indexing.cc), on
// the interpreter, against hand-computed values.
#include "xla_test_util.h"

namespace detrain::testing {
namespace {

const Literal kM23 = F32({2, 3}, {1, 2, 3, 4, 5, 6});

// Batching dimensions (StableHLO; JAX's take_along_axis and optax's integer-label cross
// entropy): the importer rewrites them into an unbatched gather or scatter whose index vector
// gains the batch position (unbatch_indexing.cc). take_along_axis(x, i, axis=1) on
// x = [[1, 2, 3], [4, 5, 6]] with i = [[2, 0], [1, 1]] picks [[3, 1], [5, 5]].
TEST(Indexing, GatherAndScatterWithBatchingDimensions) {
  EXPECT_EQ(
      RunXlaF("  x = f32[2,3] parameter(0)\n  i = s32[2,2,1] constant({{{2}, {0}}, {{1}, {1}}})\n"
              "  ROOT g = f32[2,2] gather(x, i), offset_dims={}, collapsed_slice_dims={1}, "
              "start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, "
              "index_vector_dim=2, slice_sizes={1,1}\n",
              {kM23}),
      (std::vector<float>{3, 1, 5, 5}));
  // index_vector_dim past the last dimension (an implicit index vector of one), batching on
  // the second dimension of both: column j of x picks row i[j].
  EXPECT_EQ(
      RunXlaF("  x = f32[2,3] parameter(0)\n  i = s32[3] constant({1, 0, 1})\n"
              "  ROOT g = f32[3] gather(x, i), offset_dims={}, collapsed_slice_dims={0}, "
              "start_index_map={0}, operand_batching_dims={1}, start_indices_batching_dims={0}, "
              "index_vector_dim=1, slice_sizes={1,1}\n",
              {kM23}),
      (std::vector<float>{4, 2, 6}));
  // The scatter-add that is take_along_axis's gradient: each update goes to its own row.
  EXPECT_EQ(Values<float>(RunXla(
                "  x = f32[2,3] parameter(0)\n  i = s32[2,2,1] constant({{{2}, {2}}, {{0}, {1}}})\n"
                "  u = f32[2,2] parameter(1)\n"
                "  ROOT y = f32[2,3] scatter(x, i, u), update_window_dims={}, "
                "inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, "
                "input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=2, "
                "to_apply=add\n",
                {kM23, F32({2, 2}, {10, 20, 30, 40})}, kAddF32)),
            (std::vector<float>{1, 2, 33, 34, 45, 6}));
}

}  // namespace
}  // namespace detrain::testing
