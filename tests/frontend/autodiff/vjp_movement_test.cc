// Central finite-difference checks of the data-movement and structural VJP rules, one test
// per op (grad_check.h states the tolerance and why).
#include <gtest/gtest.h>

#include "grad_check.h"

namespace detrain::testing {
namespace {

using frontend::Emitter;
using ir::Instruction;
using ir::Opcode;
using P = std::vector<Instruction*>;

// Most movement bodies square their result so the cotangent reaching the rule depends on the
// values (a linear body would only ever see the constant weights).
Instruction* Sq(Emitter& e, Instruction* x) { return e.b().Multiply(x, x); }

TEST(VjpRule, Broadcast) {
  // [3,2] -> [2,4,3] with dimensions={2,0}: not increasing, so the rule must transpose too.
  GradCase c = MakeCase({Uniform({3, 2}, -1, 1, 40)}, [](Emitter& e, const P& p) {
    return Sq(e, e.b().Broadcast(p[0], ir::Shape(ir::ElementType::kF32, {2, 4, 3}), {2, 0}));
  });
  EXPECT_EQ(CheckGradients(c), 0);
}

TEST(VjpRule, Reshape) {
  GradCase c = MakeCase({Uniform({2, 6}, -1, 1, 41)}, [](Emitter& e, const P& p) {
    return Sq(e, e.b().Reshape(p[0], {3, 2, 2}));
  });
  EXPECT_EQ(CheckGradients(c), 0);
}

TEST(VjpRule, Transpose) {
  GradCase c = MakeCase({Uniform({2, 3, 4}, -1, 1, 42)}, [](Emitter& e, const P& p) {
    return Sq(e, e.b().Transpose(p[0], {2, 0, 1}));
  });
  EXPECT_EQ(CheckGradients(c), 0);
}

TEST(VjpRule, Slice) {
  GradCase c = MakeCase({Uniform({5, 7}, -1, 1, 43)}, [](Emitter& e, const P& p) {
    return Sq(e, e.b().Slice(p[0], {{1, 5, 2}, {0, 7, 3}}));
  });
  EXPECT_EQ(CheckGradients(c), 0);
}

TEST(VjpRule, Concatenate) {
  GradCase c =
      MakeCase({Uniform({2, 3}, -1, 1, 44), Uniform({2, 1}, -1, 1, 45), Uniform({2, 2}, -1, 1, 46)},
               [](Emitter& e, const P& p) {
                 return Sq(e, e.b().Concatenate({p[0], p[1], p[0], p[2]}, 1));
               });
  EXPECT_EQ(CheckGradients(c), 0);
}

// Low, high and interior padding with a crop (negative high), and the padding value as a
// differentiated parameter.
TEST(VjpRule, Pad) {
  GradCase c = MakeCase({Uniform({3, 4}, -1, 1, 47), F32({}, {0.3f})}, [](Emitter& e, const P& p) {
    return Sq(e, e.b().Pad(p[0], p[1], {{1, 2, 1}, {2, -1, 0}}));
  });
  EXPECT_EQ(CheckGradients(c), 0);
}

TEST(VjpRule, Reverse) {
  GradCase c = MakeCase({Uniform({3, 4}, -1, 1, 48)}, [](Emitter& e, const P& p) {
    Instruction* r = e.b().Reverse(p[0], {1});
    return e.b().Multiply(r, p[0]);
  });
  EXPECT_EQ(CheckGradients(c), 0);
}

// Starts (1, 5): the column start is clamped to 2 so that the [2,3] slice fits.
TEST(VjpRule, DynamicSlice) {
  GradCase c = MakeCase({Uniform({4, 5}, -1, 1, 49), S32({}, {1}), S32({}, {5})},
                        [](Emitter& e, const P& p) {
                          return Sq(e, e.b().DynamicSlice(p[0], {p[1], p[2]}, {2, 3}));
                        });
  EXPECT_EQ(CheckGradients(c), 0);
}

TEST(VjpRule, DynamicUpdateSlice) {
  GradCase c =
      MakeCase({Uniform({4, 5}, -1, 1, 50), Uniform({2, 2}, -1, 1, 51), S32({}, {3}), S32({}, {1})},
               [](Emitter& e, const P& p) {
                 return Sq(e, e.b().DynamicUpdateSlice(p[0], p[1], {p[2], p[3]}));
               });
  EXPECT_EQ(CheckGradients(c), 0);
}

// Embedding rows as the frontend lowers jnp.take(table, ids, axis=0): repeated ids accumulate,
// and an out-of-range id (7) is clamped to the last row by gather, so its gradient goes there.
TEST(VjpRule, Gather) {
  GradCase c = MakeCase({Uniform({5, 3}, -1, 1, 52), S32({2, 3}, {0, 2, 2, 4, 7, 1})},
                        [](Emitter& e, const P& p) {
                          ir::GatherDims g;
                          g.offset_dims = {2};
                          g.collapsed_slice_dims = {0};
                          g.start_index_map = {0};
                          g.index_vector_dim = 2;
                          g.slice_sizes = {1, 3};
                          return Sq(e, e.b().Gather(p[0], p[1], g));
                        });
  EXPECT_EQ(CheckGradients(c), 0);
}

TEST(VjpRule, Tuple) {
  GradCase c =
      MakeCase({Uniform({3}, -1, 1, 53), Uniform({3}, -1, 1, 54)}, [](Emitter& e, const P& p) {
        Instruction* t = e.b().Tuple({p[0], e.b().Multiply(p[0], p[1])});
        return e.b().Add(e.b().GetTupleElement(t, 1), Sq(e, e.b().GetTupleElement(t, 0)));
      });
  EXPECT_EQ(CheckGradients(c), 0);
}

// The same graph as Tuple, seen from the get-tuple-element side: an element used twice and
// one element (index 0) unused.
TEST(VjpRule, GetTupleElement) {
  GradCase c =
      MakeCase({Uniform({3}, -1, 1, 55), Uniform({3}, -1, 1, 56)}, [](Emitter& e, const P& p) {
        Instruction* t = e.b().Tuple({p[0], e.b().Multiply(p[0], p[1])});
        Instruction* second = e.b().GetTupleElement(t, 1);
        return e.b().Multiply(second, e.b().GetTupleElement(t, 1));
      });
  EXPECT_EQ(CheckGradients(c), 0);
}

}  // namespace
}  // namespace detrain::testing
