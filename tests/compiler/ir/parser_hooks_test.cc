// The parser's extension point (parser_hooks.h), independent of XLA: without hooks a construct
// outside the IR is an error; with hooks each call comes in the documented order, a foreign type
// and op parse as their placeholders, a hook's rewrite at OnComputation sees resolved operands,
// and a reference it takes is left unresolved by the parser.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"

namespace detrain::ir {
namespace {

// XLA's constructs are the importer's: the IR's parser alone refuses them, positioned.
TEST(ParserHooks, WithoutHooksForeignConstructsAreErrors) {
  const std::pair<std::string, std::string> cases[] = {
      {"  x = f32[4] parameter(0)\n  ROOT y = f32[4] copy(x)\n",
       "5:19: unknown or unsupported op 'copy'"},
      {"  ROOT x = bf16[4] parameter(0)\n",
       "4:12: expected a shape (pred, s32, u32, s64, u64 or f32 element type), found 'bf16'"},
      {"  x = f32[4] parameter(0)\n  ROOT y = pred[4] compare(x, x), direction=LT, "
       "type=TOTALORDER\n",
       "unsupported type=TOTALORDER (only FLOAT, SIGNED or UNSIGNED is supported)"},
      {"  x = f32[4] parameter(0)\n  ROOT y = f32[4] negate(x), is_stable=true\n",
       "5:30: unknown or unsupported attribute 'is_stable'"},
  };
  for (const auto& [body, message] : cases) {
    auto module = ParseModule("HloModule m\n\nENTRY main {\n" + body + "}\n");
    ASSERT_FALSE(module.ok()) << body;
    EXPECT_NE(module.status().message().find(message), std::string::npos)
        << module.status().message();
  }
}

// A toy dialect: `h8[...]` held as f32, `twice(x)` read with negate's grammar and rewritten to
// add(x, x), and `flavor=...` read by the hooks. Records every call.
class ToyHooks : public ParserHooks {
 public:
  std::vector<std::string> calls;

  std::optional<ElementType> ForeignElementType(std::string_view name) const override {
    return name == "h8" ? std::optional<ElementType>(ElementType::kF32) : std::nullopt;
  }
  std::vector<std::string_view> ForeignElementTypeNames() const override { return {"h8"}; }
  std::optional<Opcode> ForeignOp(std::string_view name) const override {
    return name == "twice" ? std::optional<Opcode>(Opcode::kNegate) : std::nullopt;
  }
  Result<bool> ForeignAttribute(Instruction& instr, const std::string& name, SourceLoc,
                                Cursor& cur) override {
    if (name != "flavor") return false;
    calls.push_back("attribute " + name + "=" + cur.ReadWord() + " of " + instr.name);
    return true;
  }
  Status OnInstruction(Computation& comp, Instruction& instr,
                       const InstructionText& text) override {
    calls.push_back("instruction " + instr.name + " " + text.op_name +
                    " type=" + text.shape.foreign_type + " in " + comp.name());
    if (text.op_name == "twice") twice_.push_back(&instr);
    return Status::Ok();
  }
  Status OnComputation(Computation& comp, ComputationRefs& refs) override {
    calls.push_back("computation " + comp.name());
    for (Instruction* t : twice_) {
      t->opcode = Opcode::kAdd;
      t->operands = {t->operands[0], t->operands[0]};
      auto ref = refs.Take(*t, Attr::kToApply);  // none: twice takes no computation
      if (ref) return InvalidArgument("unexpected reference");
    }
    twice_.clear();
    return Status::Ok();
  }
  Status OnModule(Module& module) override {
    calls.push_back("module " + module.name());
    return Status::Ok();
  }

 private:
  std::vector<Instruction*> twice_;
};

TEST(ParserHooks, AreCalledInOrderAndMayRewrite) {
  ToyHooks hooks;
  auto module = ParseModule(
      "HloModule toy\n\nENTRY main {\n  x = h8[2] parameter(0)\n"
      "  ROOT y = f32[2] twice(h8[2] x), flavor=sweet\n}\n",
      &hooks);
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_EQ(hooks.calls,
            (std::vector<std::string>{
                "instruction x parameter type=h8 in main", "attribute flavor=sweet of y",
                "instruction y twice type= in main", "computation main", "module toy"}));
  ASSERT_TRUE(VerifyModule(**module).ok());
  auto text = PrintModule(**module);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("add.0 = f32[2] add(x, x)"), std::string::npos) << *text;
  auto error =
      ParseModule("HloModule toy\n\nENTRY main {\n  ROOT x = h9[2] parameter(0)\n}\n", &hooks);
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.status().message().find(
                "expected a shape (pred, s32, u32, s64, u64, f32 or h8 element type), found 'h9'"),
            std::string::npos)
      << error.status().message();
}

}  // namespace
}  // namespace detrain::ir
