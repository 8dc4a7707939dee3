// The plan reader (compiler/plan/reader.h): a plan the builder made reads back with every buffer
// resolved and every scalar program decoded; each kind of lie a plan can tell is refused with a
// message naming what is wrong (schemas/plan.md "Reading a plan"). The executor-level tests of
// hostile plans (tests/runtime/plan_reader_test.cc, while_test.cc) and the fuzzer
// (tests/fuzz/plan_fuzz.cc) go through the same reader.
#include "compiler/plan/reader.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/verifier.h"
#include "compiler/plan/builder.h"

namespace detrain::plan {
namespace {

namespace pb = v2;

constexpr char kModule[] = R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,3] parameter(0)
  w = f32[3,5] parameter(1)
  d = f32[4,5] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[5,4] transpose(d), dimensions={1,0}
  s = f32[2,4] slice(t), slice={[0:2], [0:4]}
  z = f32[] constant(0)
  r = f32[2] reduce(s, z), dimensions={1}, to_apply=add
  e = f32[2] exponential(r)
  ROOT out = (f32[2], f32[5,4]) tuple(e, t)
})";

pb::Plan BuiltPlan(const char* text = kModule, const EntrySignature& signature = {
                                                   {ParamRole::kBatch, ParamRole::kParameter}, 2}) {
  auto module = ir::ParseAndVerify(text);
  EXPECT_TRUE(module.ok()) << module.status().message();
  auto built = BuildPlan(**module, signature);
  EXPECT_TRUE(built.ok()) << built.status().message();
  pb::Plan plan;
  EXPECT_TRUE(plan.ParseFromString(built->bytes));
  return plan;
}

using Lie = std::function<void(pb::Plan&)>;
using Lies = std::vector<std::tuple<std::string, Lie, std::string>>;

// Each lie, told of a fresh plan from `make`, is refused with its message in the reason.
void ExpectRefused(const std::function<pb::Plan()>& make, const Lies& lies) {
  for (const auto& [name, lie, message] : lies) {
    SCOPED_TRACE(name);
    pb::Plan p = make();
    lie(p);
    auto checked = ValidatePlan(std::move(p));
    ASSERT_FALSE(checked.ok()) << "accepted";
    EXPECT_NE(checked.status().message().find(message), std::string::npos)
        << checked.status().message();
  }
}

// The kernel of `plan` with opcode `opcode` (the first).
pb::Kernel* Find(pb::Plan& plan, const std::string& opcode) {
  for (pb::Kernel& k : *plan.mutable_kernels()) {
    if (k.opcode() == opcode) return &k;
  }
  ADD_FAILURE() << "no " << opcode;
  return plan.mutable_kernels(0);
}

TEST(PlanReader, ReadsWhatTheBuilderWrote) {
  pb::Plan proto = BuiltPlan();
  std::string bytes;
  ASSERT_TRUE(proto.SerializeToString(&bytes));
  auto plan = ReadPlan(bytes);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->depth(), 0);
  ASSERT_EQ(plan->buffers().size(), static_cast<size_t>(proto.buffers_size()));
  ASSERT_EQ(plan->kernels().size(), static_cast<size_t>(proto.kernels_size()));
  for (const CheckedKernel& k : plan->kernels()) {
    SCOPED_TRACE(k.name());
    if (k.spec->has_alias()) continue;
    ASSERT_EQ(k.out.size(), 1u);
    EXPECT_EQ(k.out[0].bytes, proto.buffers(k.spec->outputs(0)).size());
    if (k.spec->has_elementwise()) EXPECT_FALSE(k.program.ops.empty());
    if (k.spec->has_reduce()) EXPECT_TRUE(k.combiner.direct);  // add(p0, p1)
    if (k.spec->has_dot()) {
      ASSERT_EQ(k.in.size(), 2u);
      EXPECT_EQ(k.in[0].dims, (std::vector<int64_t>{4, 3}));
    }
  }
  EXPECT_FALSE(ReadPlan("").ok());
  EXPECT_FALSE(ReadPlan(std::string("\xff\xff\xff\xff\x0f", 5)).ok());
}

// Every kind of lie, each refused by the reader itself with its message.
TEST(PlanReader, RefusesEachKindOfLie) {
  const Lies lies = {
      {"a later format", [](pb::Plan& p) { p.set_format_version(kPlanFormatVersion + 1); },
       "format version " + std::to_string(kPlanFormatVersion + 1)},
      {"an earlier format", [](pb::Plan& p) { p.set_format_version(1); }, "format version 1"},
      {"a negative arena", [](pb::Plan& p) { p.set_arena_bytes(-1); }, "arena of -1 bytes"},
      {"a huge arena", [](pb::Plan& p) { p.set_arena_bytes(int64_t{1} << 62); }, "arena of"},
      {"an odd alignment", [](pb::Plan& p) { p.set_alignment(24); }, "buffer alignment 24"},
      {"a misaligned buffer",
       [](pb::Plan& p) { p.mutable_buffers(1)->set_offset(p.buffers(1).offset() + 4); },
       "does not fit the arena"},
      {"a buffer past the arena",
       [](pb::Plan& p) { p.mutable_buffers(1)->set_offset(p.arena_bytes()); },
       "does not fit the arena"},
      {"a buffer of the wrong size", [](pb::Plan& p) { p.mutable_buffers(0)->set_size(7); },
       "does not fit the arena"},
      {"buffer ids", [](pb::Plan& p) { p.mutable_buffers(1)->set_id(0); },
       "buffer ids out of order"},
      {"an unknown type",
       [](pb::Plan& p) { p.mutable_buffers(0)->set_type(pb::ELEMENT_TYPE_UNSPECIFIED); },
       "unknown element type"},
      {"a negative dimension", [](pb::Plan& p) { p.mutable_buffers(0)->set_dims(0, -4); },
       "negative dimension"},
      {"shards", [](pb::Plan& p) { p.set_shards(3); }, "shard count 3"},
      {"a shard range past S",
       [](pb::Plan& p) {
         Find(p, "dot")->set_shard_lo(1);
         Find(p, "dot")->set_shard_hi(5);
       },
       "bad shard range"},
      {"kernel ids", [](pb::Plan& p) { p.mutable_kernels(1)->set_id(7); },
       "kernel ids out of order"},
      {"a missing operand",
       [](pb::Plan& p) { Find(p, "dot")->mutable_operands(0)->set_buffers(0, 99); },
       "reads a missing buffer"},
      {"a missing result", [](pb::Plan& p) { Find(p, "dot")->set_outputs(0, -1); },
       "writes a missing buffer"},
      {"a missing output", [](pb::Plan& p) { p.set_outputs(0, 99); }, "a missing output buffer"},
      {"no defining kernel", [](pb::Plan& p) { p.mutable_buffers(0)->set_defined_by(99); },
       "has no defining kernel"},
      {"a value read before it is defined",
       [](pb::Plan& p) { p.mutable_buffers(0)->set_defined_by(p.kernels_size() - 1); },
       "reads a value defined after it"},
      {"a parameter of two arrays", [](pb::Plan& p) { p.mutable_parameters(0)->add_buffers(1); },
       "is not one array"},
      {"no spec", [](pb::Plan& p) { Find(p, "dot")->clear_spec(); }, "no spec"},
      {"two results", [](pb::Plan& p) { Find(p, "dot")->add_outputs(0); },
       "expected one result array"},
      {"an operand of two arrays",
       [](pb::Plan& p) { Find(p, "dot")->mutable_operands(0)->add_buffers(0); },
       "an operand that is not one array"},
      {"dot sizes", [](pb::Plan& p) { Find(p, "dot")->mutable_dot()->set_k(4); },
       "dot sizes do not match its buffers"},
      {"dot sizes that overflow",
       [](pb::Plan& p) { Find(p, "dot")->mutable_dot()->set_k(int64_t{1} << 40); },
       "dot sizes do not match its buffers"},
      {"a dot permutation",
       [](pb::Plan& p) { Find(p, "dot")->mutable_dot()->set_lhs_permutation(0, 1); },
       "bad dot permutations"},
      {"a transpose permutation",
       [](pb::Plan& p) { Find(p, "transpose")->mutable_transpose()->set_permutation(0, 0); },
       "transpose permutation"},
      {"a slice outside its operand",
       [](pb::Plan& p) { Find(p, "slice")->mutable_slice()->set_starts(0, 4); },
       "slice outside its operand"},
      {"reduce dimensions",
       [](pb::Plan& p) { Find(p, "reduce")->mutable_reduce()->set_dimensions(0, 2); },
       "bad reduce dimensions"},
      {"reduce sizes",
       [](pb::Plan& p) { Find(p, "reduce")->mutable_reduce()->set_operand_dims(0, 3); },
       "reduce sizes do not match its buffers"},
      {"a combiner of another type",
       [](pb::Plan& p) {
         auto* ops = Find(p, "reduce")->mutable_reduce()->mutable_combiner()->mutable_program();
         for (auto& op : *ops->mutable_ops()) op.set_type(pb::S32);
       },
       "type mismatch"},
      {"a program input that does not exist",
       [](pb::Plan& p) {
         Find(p, "exponential")
             ->mutable_elementwise()
             ->mutable_program()
             ->mutable_ops(0)
             ->set_input(5);
       },
       "scalar program input 5 out of range"},
      {"a program of another result type",
       [](pb::Plan& p) {
         auto* ops = Find(p, "exponential")->mutable_elementwise()->mutable_program();
         for (auto& op : *ops->mutable_ops()) op.set_type(pb::S32);
       },
       "type"},
      {"a constant of the wrong size",
       [](pb::Plan& p) { Find(p, "constant")->set_constant("abc"); }, "constant of the wrong size"},
  };
  ExpectRefused([] { return BuiltPlan(); }, lies);
}

// A step whose new w takes over w's buffer (plan format 3's donation), and the lies about it.
constexpr char kDonatingModule[] = R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  w = f32[4] parameter(0)
  x = f32[2,4] parameter(1)
  z = f32[] constant(0)
  r = f32[4] reduce(x, z), dimensions={0}, to_apply=add
  w2 = f32[4] subtract(w, r)
  l = f32[] reduce(w2, z), dimensions={0}, to_apply=add
  ROOT t = (f32[4], f32[]) tuple(w2, l)
})";

pb::Plan DonatingPlan() {
  return BuiltPlan(kDonatingModule, {{ParamRole::kParameter, ParamRole::kBatch}, 2});
}

// The buffer that names a donor.
pb::Buffer* Donee(pb::Plan& plan) {
  for (pb::Buffer& b : *plan.mutable_buffers()) {
    if (b.has_donor()) return &b;
  }
  ADD_FAILURE() << "no donation";
  return plan.mutable_buffers(0);
}

TEST(PlanReader, ChecksEachDonation) {
  pb::Plan plan = DonatingPlan();
  const pb::Buffer& w2 = *Donee(plan);
  const pb::Buffer& w = plan.buffers(w2.donor());
  EXPECT_EQ(w.id(), plan.parameters(0).buffers(0));
  EXPECT_EQ(w2.offset(), w.offset());
  EXPECT_EQ(plan.kernels(w2.defined_by()).opcode(), "subtract");
  ASSERT_TRUE(ValidatePlan(plan).ok());

  const Lies lies = {
      {"donation in format 2", [](pb::Plan& p) { p.set_format_version(2); }, "format 3"},
      {"a donor that is no parameter, elsewhere",
       [](pb::Plan& p) {
         pb::Buffer* d = Donee(p);
         d->set_donor(d->id() - 1);  // r, the reduce before it
       },
       "read last where it is defined"},
      {"a donor that is no parameter, in place, for an elementwise kernel",
       [](pb::Plan& p) {
         pb::Buffer* d = Donee(p);
         const pb::Buffer& r = p.buffers(d->id() - 1);  // the reduce before it, read by w2
         d->set_donor(r.id());
         d->set_offset(r.offset());
       },
       "is not a dynamic-update-slice or scatter"},
      {"a donor read after it is overwritten",
       [](pb::Plan& p) {
         pb::Buffer* d = Donee(p);
         p.mutable_buffers(d->donor())->set_last_use(d->defined_by() + 1);
       },
       "read last where it is defined"},
      {"a donor elsewhere in the arena",
       [](pb::Plan& p) {
         pb::Buffer* d = Donee(p);
         d->set_offset(p.buffers(d->donor()).offset() + p.alignment());
         p.set_arena_bytes(p.arena_bytes() + p.alignment());
       },
       "read last where it is defined"},
      {"a donor given twice",
       [](pb::Plan& p) {
         const int32_t donor = Donee(p)->donor();
         p.mutable_buffers(p.buffers_size() - 1)->set_donor(donor);
       },
       "taken"},
      {"a donor out of range", [](pb::Plan& p) { Donee(p)->set_donor(1000); }, "no earlier buffer"},
  };
  ExpectRefused(DonatingPlan, lies);
}

// Format 4: a dynamic-update-slice writes over the operand it reads last (plan.md "Updates in
// place"), and the lies about it.
constexpr char kUpdatingModule[] = R"(HloModule m
ENTRY main {
  x = f32[4,3] parameter(0)
  u = f32[1,3] parameter(1)
  i = s32[] parameter(2)
  z = s32[] constant(0)
  n = f32[4,3] negate(x)
  d = f32[4,3] dynamic-update-slice(n, u, i, z)
  ROOT e = f32[4,3] exponential(d)
})";

pb::Plan UpdatingPlan() { return BuiltPlan(kUpdatingModule, {{}, 1}); }

TEST(PlanReader, ChecksEachUpdateInPlace) {
  pb::Plan plan = UpdatingPlan();
  const pb::Buffer& d = *Donee(plan);
  const pb::Buffer& n = plan.buffers(d.donor());
  EXPECT_EQ(plan.kernels(d.defined_by()).opcode(), "dynamic-update-slice");
  EXPECT_EQ(plan.kernels(n.defined_by()).opcode(), "negate");
  EXPECT_EQ(d.offset(), n.offset());
  ASSERT_TRUE(ValidatePlan(plan).ok());
  // Format 3 plans the same module without it.
  auto module = ir::ParseAndVerify(kUpdatingModule);
  ASSERT_TRUE(module.ok());
  PlanOptions three;
  three.format_version = 3;
  auto built = BuildPlan(**module, {{}, 1}, "", three);
  ASSERT_TRUE(built.ok()) << built.status().message();
  pb::Plan p3;
  ASSERT_TRUE(p3.ParseFromString(built->bytes));
  for (const pb::Buffer& b : p3.buffers()) EXPECT_FALSE(b.has_donor()) << b.id();

  const Lies lies = {
      {"an update in place in format 3", [](pb::Plan& p) { p.set_format_version(3); }, "format 4"},
      {"an update in place by an elementwise kernel",
       [](pb::Plan& p) {
         pb::Buffer* d = Donee(p);
         pb::Buffer& e = *p.mutable_buffers(p.buffers_size() - 1);  // the exponential's result
         e.set_donor(d->id());
         e.set_offset(d->offset());
       },
       "is not a dynamic-update-slice or scatter"},
      {"an update in place of a donor read later",
       [](pb::Plan& p) {
         pb::Buffer* d = Donee(p);
         p.mutable_buffers(d->donor())->set_last_use(d->defined_by() + 1);
       },
       "read last where it is defined"},
      {"an update in place of a donor that is a result",
       [](pb::Plan& p) { p.mutable_buffers(Donee(p)->donor())->set_is_output(true); },
       "is a result"},
  };
  ExpectRefused(UpdatingPlan, lies);
}

// A loop's body plan: its parameter is the loop's state, a tuple of leaves owned by the loop
// kernel. An update in place may not take over any of them — a lie that names the state's second
// leaf as a dynamic-update-slice's donor is refused like one naming the first.
TEST(PlanReader, RefusesAnUpdateInPlaceOfALoopsState) {
  constexpr char kLoop[] = R"(HloModule m
body {
  s = (s32[], s32[], f32[4,3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] get-tuple-element(s), index=1
  x = f32[4,3] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  u = f32[1,3] slice(x), slice={[0:1], [0:3]}
  z = s32[] constant(0)
  d = f32[4,3] dynamic-update-slice(x, u, i, z)
  ROOT r = (s32[], s32[], f32[4,3]) tuple(i1, n, d)
}
cond {
  s = (s32[], s32[], f32[4,3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] get-tuple-element(s), index=1
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  x = f32[4,3] parameter(0)
  n = s32[] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], s32[], f32[4,3]) tuple(zero, n, x)
  w = (s32[], s32[], f32[4,3]) while(init), condition=cond, body=body
  ROOT out = f32[4,3] get-tuple-element(w), index=2
})";
  pb::Plan plan = BuiltPlan(kLoop, {{}, 1});
  ASSERT_TRUE(ValidatePlan(plan).ok());
  pb::Kernel* loop = Find(plan, "while");
  ASSERT_TRUE(loop->has_while_loop());
  pb::Plan* body = loop->mutable_while_loop()->mutable_body();
  pb::Buffer* d = nullptr;
  for (pb::Buffer& b : *body->mutable_buffers()) {
    if (body->kernels(b.defined_by()).opcode() == "dynamic-update-slice") d = &b;
  }
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->has_donor());  // its operand is the state's: not updated in place
  ASSERT_EQ(body->parameters_size(), 1);
  ASSERT_EQ(body->parameters(0).buffers_size(), 3);
  const int32_t x = body->parameters(0).buffers(2);
  d->set_donor(x);
  d->set_offset(body->buffers(x).offset());
  auto checked = ValidatePlan(std::move(plan));
  ASSERT_FALSE(checked.ok()) << "accepted";
  EXPECT_NE(checked.status().message().find("only an entry plan donates its parameters"),
            std::string::npos)
      << checked.status().message();
}

}  // namespace
}  // namespace detrain::plan
