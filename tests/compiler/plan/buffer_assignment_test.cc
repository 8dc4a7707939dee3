// Buffer assignment: every buffer lies inside the arena, no two buffers live at the same time
// overlap, reuse happens, and the numbers of a hand-checked module.
#include "compiler/plan/buffer_assignment.h"

#include <gtest/gtest.h>

#include "compiler/ir/verifier.h"
#include "compiler/passes/pipeline.h"
#include "compiler/testing/random_module.h"

namespace detrain::plan {
namespace {

// Checks the placement invariants; returns a description of the first violation.
std::string CheckAssignment(const BufferAssignment& a) {
  for (const LogicalBuffer& b : a.buffers) {
    if (b.offset % kBufferAlignment != 0) return "buffer " + std::to_string(b.id) + " misaligned";
    if (b.size > 0 && (b.offset < 0 || b.offset + b.size > a.arena_bytes)) {
      return "buffer " + std::to_string(b.id) + " outside the arena";
    }
  }
  for (const LogicalBuffer& x : a.buffers) {
    for (const LogicalBuffer& y : a.buffers) {
      if (x.id >= y.id || x.size == 0 || y.size == 0) continue;
      // A donated pair shares its slice: the donor dies where the result is born.
      if (y.donor == x.id) {
        if (x.offset != y.offset || x.last_use != y.defined_at) {
          return "buffer " + std::to_string(y.id) + " took over donor " + std::to_string(x.id) +
                 " where it is not free";
        }
        continue;
      }
      bool live_together = x.defined_at <= y.last_use && y.defined_at <= x.last_use;
      bool overlap = x.offset < y.offset + y.size && y.offset < x.offset + x.size;
      if (live_together && overlap) {
        return "buffers " + std::to_string(x.id) + " and " + std::to_string(y.id) +
               " overlap while live";
      }
    }
  }
  return "";
}

TEST(BufferAssignment, ChainReusesBuffers) {
  auto module = ir::ParseAndVerify(R"(HloModule m
ENTRY main {
  p = f32[256] parameter(0)
  a = f32[256] exponential(p)
  b = f32[256] negate(a)
  c = f32[256] tanh(b)
  ROOT d = f32[256] add(c, p)
})");
  ASSERT_TRUE(module.ok());
  auto a = AssignBuffers(**module);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(CheckAssignment(*a), "");
  ASSERT_EQ(a->buffers.size(), 5u);
  EXPECT_EQ(a->total_bytes, 5 * 1024);
  // p lives throughout; at most two of a, b, c, d are live at once: p + 2 buffers.
  EXPECT_EQ(a->arena_bytes, 3 * 1024);
  EXPECT_TRUE(a->buffers.back().is_output);
}

TEST(BufferAssignment, TupleAndGetTupleElementAlias) {
  auto module = ir::ParseAndVerify(R"(HloModule m
ENTRY main {
  p = f32[3] parameter(0)
  n = f32[3] negate(p)
  t = (f32[3], f32[3]) tuple(p, n)
  g = f32[3] get-tuple-element(t), index=1
  ROOT r = (f32[3], f32[3]) tuple(g, p)
})");
  ASSERT_TRUE(module.ok());
  auto a = AssignBuffers(**module);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->buffers.size(), 2u);  // p and n; tuples and get-tuple-element alias them
  EXPECT_TRUE(a->buffers[0].is_output && a->buffers[1].is_output);
  EXPECT_EQ(CheckAssignment(*a), "");
}

TEST(BufferAssignment, RandomModulesArePlacedValidly) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    auto module = testing::PassTargetedModule(seed, seed % 2 == 0);
    auto opt = passes::RunPipeline(*module, passes::kDefaultPipeline, {});
    ASSERT_TRUE(opt.ok());
    auto a = AssignBuffers(*opt->module);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(CheckAssignment(*a), "") << "seed " << seed;
    EXPECT_LE(a->arena_bytes, a->total_bytes);
  }
}

// Donations of w, m and b to the step's first three results: what qualifies is decided by the
// schedule and the kernels alone.
TEST(BufferAssignment, DonatesTheStateWhereItsLastReaderWritesTheNewValue) {
  auto module = ir::ParseAndVerify(R"(HloModule step
ENTRY main {
  w = f32[64,64] parameter(0)
  m = f32[64,64] parameter(1)
  b = f32[64] parameter(2)
  x = f32[8,64] parameter(3)
  g = f32[64,64] dot(x, x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  m2 = f32[64,64] add(m, g)
  w2 = f32[64,64] subtract(w, m2)
  d = f32[64] dot(b, g), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = (f32[64,64], f32[64,64], f32[64], f32[64]) tuple(w2, m2, d, b)
})");
  ASSERT_TRUE(module.ok()) << module.status().message();
  const ir::Computation& entry = *(*module)->entry();
  const auto params = entry.Parameters();
  DonationOptions d;
  d.donations = {{params[0], 0}, {params[1], 1}, {params[2], 2}};
  d.in_place = [](const ir::Instruction& user, const ir::Instruction&) {
    return user.opcode != ir::Opcode::kDot;
  };
  auto plain = AssignBuffers(entry);
  auto donated = AssignBuffers(entry, &d);
  ASSERT_TRUE(plain.ok() && donated.ok());
  EXPECT_EQ(CheckAssignment(*donated), "");
  auto buffer_of = [&](const BufferAssignment& a, const std::string& name) -> const LogicalBuffer& {
    for (const LogicalBuffer& b : a.buffers) {
      if (b.defined_by->name == name) return b;
    }
    ADD_FAILURE() << "no " << name;
    return a.buffers[0];
  };
  const BufferAssignment& a = *donated;
  // w2 over w, m2 over m: each the last reader of its donor, elementwise.
  EXPECT_EQ(buffer_of(a, "w2").donor, buffer_of(a, "w").id);
  EXPECT_EQ(buffer_of(a, "w2").offset, buffer_of(a, "w").offset);
  EXPECT_EQ(buffer_of(a, "m2").donor, buffer_of(a, "m").id);
  // b is not donated: its result is a dot (not in place), and b itself is a result.
  EXPECT_EQ(buffer_of(a, "d").donor, -1);
  for (const LogicalBuffer& b : plain->buffers) EXPECT_EQ(b.donor, -1);
  // m2 and w2 need no slices of their own: the peak (w, m, g and m2 without donation, while m2
  // is computed) is one 16 KiB array lower.
  EXPECT_EQ(plain->arena_bytes - a.arena_bytes, 64 * 64 * 4);
}

TEST(BufferAssignment, NoDonationWhileTheDonorIsStillRead) {
  auto module = ir::ParseAndVerify(R"(HloModule step
ENTRY main {
  w = f32[16] parameter(0)
  w2 = f32[16] negate(w)
  later = f32[16] multiply(w, w2)
  ROOT t = (f32[16], f32[16]) tuple(w2, later)
})");
  ASSERT_TRUE(module.ok()) << module.status().message();
  const ir::Computation& entry = *(*module)->entry();
  DonationOptions d;
  d.donations = {{entry.Parameters()[0], 0}};
  d.in_place = [](const ir::Instruction&, const ir::Instruction&) { return true; };
  auto a = AssignBuffers(entry, &d);
  ASSERT_TRUE(a.ok());
  for (const LogicalBuffer& b : a->buffers) EXPECT_EQ(b.donor, -1) << b.defined_by->name;
  // Out of range, a parameter of another shape, or one given twice: nothing happens either.
  d.donations = {
      {entry.Parameters()[0], 7}, {entry.Parameters()[0], 1}, {entry.Parameters()[0], 1}};
  a = AssignBuffers(entry, &d);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(CheckAssignment(*a), "");
  int donated = 0;
  for (const LogicalBuffer& b : a->buffers) donated += b.donor >= 0;
  EXPECT_EQ(donated, 1);  // `later` over w: w's last reader
}

// Format 4: a chain of dynamic-update-slices (a scan's stack) is one slice written in place; an
// update of a parameter, or of a value read again later, gets a buffer of its own.
TEST(BufferAssignment, UpdatesWriteOverTheOperandTheyReadLast) {
  auto module = ir::ParseAndVerify(R"(HloModule step
ENTRY main {
  x = f32[8,4] parameter(0)
  u = f32[1,4] parameter(1)
  c0 = s32[] constant(0)
  c1 = s32[] constant(1)
  n = f32[8,4] negate(x)
  d0 = f32[8,4] dynamic-update-slice(n, u, c0, c0)
  d1 = f32[8,4] dynamic-update-slice(d0, u, c1, c0)
  p = f32[8,4] dynamic-update-slice(x, u, c1, c0)
  e = f32[8,4] exponential(d1)
  k = f32[8,4] dynamic-update-slice(e, u, c0, c0)
  later = f32[8,4] add(e, k)
  ROOT t = (f32[8,4], f32[8,4]) tuple(p, later)
})");
  ASSERT_TRUE(module.ok()) << module.status().message();
  const ir::Computation& entry = *(*module)->entry();
  DonationOptions d;
  d.updates_in_place = [](const ir::Instruction& user) {
    return user.opcode == ir::Opcode::kDynamicUpdateSlice;
  };
  auto a = AssignBuffers(entry, &d);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(CheckAssignment(*a), "");
  auto buffer_of = [&](const std::string& name) -> const LogicalBuffer& {
    for (const LogicalBuffer& b : a->buffers) {
      if (b.defined_by->name == name) return b;
    }
    ADD_FAILURE() << "no " << name;
    return a->buffers[0];
  };
  EXPECT_EQ(buffer_of("d0").donor, buffer_of("n").id);
  EXPECT_EQ(buffer_of("d1").donor, buffer_of("d0").id);
  EXPECT_EQ(buffer_of("d1").offset, buffer_of("n").offset);
  EXPECT_EQ(buffer_of("p").donor, -1);  // x is the caller's
  EXPECT_EQ(buffer_of("k").donor, -1);  // e is read again by `later`
  EXPECT_EQ(buffer_of("e").donor, -1);  // an exponential is no update
  auto plain = AssignBuffers(entry);
  ASSERT_TRUE(plain.ok());
  for (const LogicalBuffer& b : plain->buffers) EXPECT_EQ(b.donor, -1);
}

}  // namespace
}  // namespace detrain::plan
