// Hostile .dt input: every case is rejected with a positioned error ("file:line:col: error:
// ...", InvalidArgument, exit 2 from the CLI), never a signal, an exception or an abort; and at
// each limit the program at the limit still compiles, through lowering and autodiff, while one
// past it fails. One test per class of input: nesting depth, integer sizes, numbers, bytes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/budget.h"
#include "frontend/check.h"
#include "frontend/number.h"
#include "frontend/parser.h"
#include "frontend/train_step.h"

namespace detrain::frontend {
namespace {

// tests/evidence/testdata/tiny/train.dt, without its comments. Line 7 is the `h = relu(...)` that
// most cases replace.
constexpr const char* kTiny =
    R"(data tiny = csv("tiny.csv", label = -1, standardize = true, validation = 0.25)
param w1: f32[4, 8] = glorot_uniform
param b1: f32[8]    = zeros
param w2: f32[8, 2] = glorot_uniform
param b2: f32[2]    = zeros
def loss(x: f32[B, 4], y: s32[B], key) -> f32[] {
  h = relu(x @ w1 + b1)
  h = dropout(h, rate = 0.1, key = key)
  return mean(softmax_cross_entropy(h @ w2 + b2, y))
}
def predict(x: f32[B, 4]) -> f32[B, 2] {
  return relu(x @ w1 + b1) @ w2 + b2
}
metrics = [accuracy, loss]
optimizer = adam(learning_rate = 1e-2)
train(steps = 24, batch = 16, shards = 4, seed = 3, checkpoint_every = 8, eval_every = 8)
)";

constexpr int kN = kMaxExpressionDepth;

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  if (at == std::string::npos) return "test bug: '" + from + "' not in the program";
  return text.replace(at, from.size(), to);
}

// kTiny with line 7's right-hand side replaced by `rhs`.
std::string WithH(const std::string& rhs) {
  return Replace(kTiny, "h = relu(x @ w1 + b1)", "h = " + rhs);
}

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// "p.dt:L:C" of the n-th (1-based) occurrence of `needle` in `text`, counted in bytes as
// SourceFile does.
std::string At(const std::string& text, const std::string& needle, int n = 1) {
  size_t at = std::string::npos;
  for (int i = 0; i < n; ++i) {
    at = text.find(needle, at == std::string::npos ? 0 : at + 1);
    if (at == std::string::npos)
      return "test bug: occurrence " + std::to_string(n) + " of '" + needle + "'";
  }
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "p.dt:" + std::to_string(line) + ":" + std::to_string(at - line_start + 1);
}

// Parses, checks and lowers the train step and eval programs (the frontend's recursive passes
// and autodiff); "" when all succeed, else the first line of the error. An error must be
// InvalidArgument (a user error), never another code.
std::string Compile(const std::string& text) {
  SourceFile src("p.dt", text);
  Result<Program> program = Parse(src);
  auto first_line = [](const Status& s) {
    std::string m = s.message();
    m = m.substr(0, m.find('\n'));
    if (s.code() != StatusCode::kInvalidArgument) return "not a user error: " + s.ToString();
    return m;
  };
  if (!program.ok()) return first_line(program.status());
  Result<CheckedProgram> checked = Check(src, *program);
  if (!checked.ok()) return first_line(checked.status());
  Result<std::unique_ptr<ir::Module>> step = LowerTrainStep(*checked);
  if (!step.ok()) return first_line(step.status());
  Result<std::unique_ptr<ir::Module>> eval = LowerEval(*checked, 16);
  if (!eval.ok()) return first_line(eval.status());
  return "";
}

std::string Deep() { return ": error: expression nests deeper than 256 levels"; }
// Line 7, where WithH's text starts at column 7.
std::string Line7(int column) { return "p.dt:7:" + std::to_string(column); }

TEST(HostileTest, NestingDepth) {
  ASSERT_EQ(kN, 256);
  ASSERT_EQ(Compile(kTiny), "");

  // Parentheses: x @ w1 is 2 levels, each pair one more, `+ b1` and relu() one each.
  auto parens = [](int k) {
    return WithH("relu(" + Repeat("(", k) + "x @ w1" + Repeat(")", k) + " + b1)");
  };
  EXPECT_EQ(Compile(parens(kN - 4)), "");
  EXPECT_EQ(Compile(parens(kN - 3)), Line7(7) + Deep());
  // 20 000 deep: refused on entering the 256th pair (relu( is the first open level); the pairs
  // start at column 7 + 5.
  EXPECT_EQ(Compile(parens(20000)), Line7(12 + 255) + Deep());

  // Unary minus: the same levels as parentheses.
  auto negs = [](int k) { return WithH("relu(" + Repeat("-", k) + "x @ w1 + b1)"); };
  EXPECT_EQ(Compile(negs(kN - 4)), "");
  EXPECT_EQ(Compile(negs(kN - 3)), Line7(7) + Deep());
  EXPECT_EQ(Compile(negs(20000)), Line7(12 + 255) + Deep());

  // A flat chain x @ w1 + b1 + ... is left-deep: the parser loops, but the tree is as deep as the
  // chain is long, and the checker, lowering and autodiff recurse over it.
  auto chain = [](int k) { return WithH("relu(x @ w1" + Repeat(" + b1", k) + ")"); };
  EXPECT_EQ(Compile(chain(kN - 3)), "");
  EXPECT_EQ(Compile(chain(kN - 2)), Line7(7) + Deep());
  // 100 000 terms: the 255th '+' makes a node of 257 levels; the first is at column 7 + 12.
  EXPECT_EQ(Compile(chain(100000)), Line7(19 + 5 * 254) + Deep());

  // Nested calls: relu(relu(...(x @ w1 + b1))).
  auto calls = [](int k) { return WithH(Repeat("relu(", k) + "x @ w1 + b1" + Repeat(")", k)); };
  EXPECT_EQ(Compile(calls(kN - 3)), "");
  EXPECT_EQ(Compile(calls(kN - 2)), Line7(7) + Deep());
  // Refused on entering the 257th call, with 256 open.
  EXPECT_EQ(Compile(calls(20000)), Line7(7 + 5 * 256) + Deep());

  // Lists in a setting: [[...]] parses up to 256 levels (and is then no metric).
  auto lists = [](int k) {
    return Replace(kTiny, "metrics = [accuracy, loss]",
                   "metrics = " + Repeat("[", k) + Repeat("]", k));
  };
  EXPECT_EQ(Compile(lists(kN)), At(lists(kN), "[[", 2) + ": error: unknown metric '" +
                                    Abbreviate(Repeat("[", kN - 1) + Repeat("]", kN - 1)) +
                                    "' (expected accuracy or loss)");
  // Line 14; the lists start at column 11, the 257th is refused.
  EXPECT_EQ(Compile(lists(kN + 1)), "p.dt:14:" + std::to_string(11 + 256) + Deep());
  EXPECT_EQ(Compile(lists(20000)), "p.dt:14:" + std::to_string(11 + 256) + Deep());

  // Arguments of a call count as its contents: dropout(rate = ---...0.1).
  auto rate = [](int k) {
    return Replace(kTiny, "rate = 0.1", "rate = " + Repeat("-", k) + "0.1");
  };
  // Line 8: dropout( is open, the minuses start at column 25, the 256th is refused.
  EXPECT_EQ(Compile(rate(20000)), "p.dt:8:" + std::to_string(25 + 255) + Deep());
}

// Lowering inlines user functions, so their bodies count where they are called.
TEST(HostileTest, NestingDepthThroughFunctions) {
  // f0(x) = relu(x) is 2 levels; f_i(x) = f_{i-1}(x) adds one.
  auto program = [](int functions, int called) {
    std::string defs;
    for (int i = 0; i < functions; ++i) {
      std::string body = i == 0 ? "relu(x)" : "f" + std::to_string(i - 1) + "(x)";
      defs += "def f" + std::to_string(i) + "(x: f32[N, 8]) -> f32[N, 8] { return " + body + " }\n";
    }
    std::string text = Replace(kTiny, "def loss", defs + "def loss");
    return Replace(text, "h = relu(x @ w1 + b1)",
                   "h = relu(f" + std::to_string(called) + "(x @ w1 + b1))");
  };
  // In loss: x @ w1 + b1 is 3 levels, f_K(...) is 2 + K + 1, relu one more: 4 + K.
  EXPECT_EQ(Compile(program(kN - 4 + 1, kN - 4)), "");
  std::string past = program(kN - 3 + 1, kN - 3);
  EXPECT_EQ(Compile(past), At(past, "relu(f") +
                               ": error: expression nests deeper than 256 levels with the bodies "
                               "of the functions it calls in place of the calls");
  // A long chain of definitions: f255 is 257 levels deep in its own body.
  std::string chain = program(2000, 0);
  EXPECT_EQ(Compile(chain), At(chain, "f254(x)") +
                                ": error: expression nests deeper than 256 levels with the bodies "
                                "of the functions it calls in place of the calls");
}

TEST(HostileTest, IntegerSizes) {
  // A dimension beyond int64 (std::stoll used to throw).
  std::string big = Replace(kTiny, "f32[8]", "f32[99999999999999999999999]");
  EXPECT_EQ(Compile(big), At(big, "999") +
                              ": error: dimension '99999999999999999999999' is out of range for "
                              "int64 (largest 9223372036854775807)");
  std::string max = Replace(kTiny, "f32[8]", "f32[9223372036854775807]");
  EXPECT_EQ(Compile(max), At(max, "f32[9") +
                              ": error: f32[9223372036854775807]: element count overflows (more "
                              "than 2^62)");
  // The product of dimensions overflows.
  std::string product = Replace(kTiny, "f32[8]", "f32[4294967296, 4294967296, 16]");
  EXPECT_EQ(Compile(product), At(product, "f32[42") +
                                  ": error: f32[4294967296,4294967296,16]: element count "
                                  "overflows (more than 2^62)");
  // In a function's argument type too, with a symbolic batch dimension.
  std::string arg = Replace(kTiny, "x: f32[B, 4]", "x: f32[B, 4611686018427387904, 2]");
  EXPECT_EQ(Compile(arg), At(arg, "f32[B, 46") +
                              ": error: f32[B,4611686018427387904,2]: element count overflows "
                              "(more than 2^62)");
  // An expression whose shape overflows: broadcasting f32[2^31, 1] against f32[1, 2^32].
  std::string wide = Replace(Replace(kTiny, "param b1: f32[8]    = zeros",
                                     "param b1: f32[8]    = zeros\nparam u: f32[2147483648, 1] = "
                                     "zeros\nparam v: f32[1, 4294967296] = zeros"),
                             "h = relu(x @ w1 + b1)", "h = relu(x @ w1 + b1) + mean(u * v)");
  SetMemoryBudget({int64_t{1} << 62, int64_t{1} << 62});  // the parameters alone would not fit
  EXPECT_EQ(Compile(wide), At(wide, "u * v") +
                               ": error: f32[2147483648,4294967296]: element count overflows "
                               "(more than 2^62)");

  // A parameter beyond the memory budget is named, at its declaration, before any allocation.
  SetMemoryBudget({int64_t{1} << 30, int64_t{2} << 30});
  std::string huge = Replace(kTiny, "param b1: f32[8]    = zeros",
                             "param big: f32[100000, 100000] = zeros\nparam b1: f32[8] = zeros");
  EXPECT_EQ(Compile(huge), At(huge, "big") +
                               ": error: parameter 'big' f32[100000,100000] needs 37.3 GiB, more "
                               "than the one-tensor memory budget of 1.0 GiB (raise it with "
                               "--max-memory SIZE, e.g. --max-memory 64G)");
  // Exactly the one-tensor budget is accepted; the total is checked over all parameters.
  std::string at_budget = Replace(kTiny, "param b1: f32[8]    = zeros",
                                  "param big: f32[268435456] = zeros\nparam b1: f32[8] = zeros");
  EXPECT_EQ(Compile(at_budget), "");
  // w1 (128 bytes), big and big2 fill the total exactly; b3's 4 bytes are one past it.
  SetMemoryBudget({int64_t{1} << 30, (int64_t{2} << 30) + 128});
  std::string twice =
      Replace(at_budget, "param b1",
              "param big2: f32[268435456] = zeros\nparam b3: f32[1] = zeros\nparam b1");
  EXPECT_EQ(Compile(twice), At(twice, "b3") +
                                ": error: parameter 'b3' f32[1] with those before it needs 2.0 "
                                "GiB, more than the total memory budget of 2.0 GiB (raise it "
                                "with --max-memory SIZE, e.g. --max-memory 64G)");
  // A batch whose inputs cannot be held.
  std::string batch = Replace(kTiny, "batch = 16", "batch = 1073741824");
  EXPECT_EQ(Compile(batch), At(batch, "f32[B, 4]") +
                                ": error: the batch input 'x' f32[B, 4] with B = 1073741824 needs "
                                "16.0 GiB, more than the one-tensor memory budget of 1.0 GiB "
                                "(raise it with --max-memory SIZE, e.g. --max-memory 64G)");
  SetMemoryBudget({0, 0});  // the default again

  // Integer settings beyond int64, and int64's extremes where a setting takes them.
  std::string steps = Replace(kTiny, "steps = 24", "steps = 99999999999999999999");
  EXPECT_EQ(Compile(steps), At(steps, "9999") +
                                ": error: train: 'steps': '99999999999999999999' is out of range "
                                "for int64 (largest 9223372036854775807)");
  std::string seed_max = Replace(kTiny, "seed = 3", "seed = 9223372036854775807");
  EXPECT_EQ(Compile(seed_max), "");
  std::string seed_min = Replace(kTiny, "seed = 3", "seed = -9223372036854775808");
  EXPECT_EQ(Compile(seed_min), At(seed_min, "-9223") +
                                   ": error: train: seed must be >= 0, found -9223372036854775808");
  std::string seed_below = Replace(kTiny, "seed = 3", "seed = -9223372036854775809");
  EXPECT_EQ(Compile(seed_below), At(seed_below, "-9223") +
                                     ": error: train: 'seed': '-9223372036854775809' is out of "
                                     "range for int64 (smallest -9223372036854775808)");
  // shards: at most kMaxShards (1024), since the step holds one loss per shard.
  std::string shards = Replace(kTiny, "batch = 16, shards = 4", "batch = 4096, shards = 2048");
  EXPECT_EQ(Compile(shards),
            At(shards, "2048") + ": error: train: shards must be at most 1024, found 2048");
  std::string shards_max = Replace(kTiny, "batch = 16, shards = 4", "batch = 1024, shards = 1024");
  EXPECT_EQ(Compile(shards_max), "");

  // Layer sizes: reshape targets, pooling windows and strides.
  std::string reshape = WithH("relu(reshape(x @ w1 + b1, [B, 4294967296, 4294967296]))");
  EXPECT_EQ(Compile(reshape), At(reshape, "[B, 42") +
                                  ": error: reshape: the new shape's element count overflows "
                                  "(more than 2^62)");
  std::string pool = WithH(
      "relu(x @ w1 + b1) + 0 * mean(max_pool(reshape(x, [B, 2, 2, 1]), window = "
      "9223372036854775807, stride = 9223372036854775807, padding = \"SAME\"))");
  EXPECT_EQ(Compile(pool), At(pool, "9223") +
                               ": error: max_pool: window 9223372036854775807 is larger than the "
                               "input size 2");
  std::string stride = WithH(
      "relu(x @ w1 + b1) + 0 * mean(avg_pool(reshape(x, [B, 2, 2, 1]), window = 2, stride = "
      "9223372036854775807, padding = \"SAME\"))");
  EXPECT_EQ(Compile(stride), "");
}

TEST(HostileTest, Numbers) {
  // In a tensor expression a constant becomes f32: beyond f32's range is an error.
  for (const char* n : {"1e999", "1e39", "3.4028236e38", "340282356779733661637539395458142568448",
                        "1e99999999999999999999"}) {
    std::string p = WithH(std::string("relu(x @ w1 + b1) * ") + n);
    EXPECT_EQ(Compile(p), At(p, n) + ": error: '" + Abbreviate(n) +
                              "' is out of range for f32 (largest finite 3.4028235e+38)")
        << n;
    std::string neg = WithH(std::string("relu(x @ w1 + b1) * -") + n);
    EXPECT_EQ(Compile(neg), At(neg, std::string("-") + n) + ": error: '-" + Abbreviate(n) +
                                "' is out of range for f32 (largest finite 3.4028235e+38)")
        << n;
  }
  // The largest finite f32, what rounds to it, and underflow (to a subnormal or zero) are fine.
  for (const char* n : {"3.4028235e38", "3.40282356e38", "1e-45", "1e-46", "1e-400", "0e999999"}) {
    EXPECT_EQ(Compile(WithH(std::string("relu(x @ w1 + b1) * ") + n)), "") << n;
  }
  // Configuration numbers follow the same rule.
  for (const char* n : {"1e999", "1e39"}) {
    std::string lr = Replace(kTiny, "1e-2", n);
    EXPECT_EQ(Compile(lr), At(lr, n) + ": error: adam: 'learning_rate': '" + std::string(n) +
                               "' is out of range for f32 (largest finite 3.4028235e+38)");
  }
  std::string tiny_lr = Replace(kTiny, "1e-2", "1e-400");  // rounds to 0: not positive
  EXPECT_EQ(Compile(tiny_lr),
            At(tiny_lr, "1e-400") + ": error: adam: learning_rate must be positive, found 1e-400");
  std::string eps = Replace(kTiny, "learning_rate = 1e-2", "learning_rate = 1e-2, eps = 1e-320");
  EXPECT_EQ(Compile(eps), "");
  // An s32 operand takes integer constants in s32's range.
  auto s32 = [](const std::string& c) {
    return Replace(kTiny, "softmax_cross_entropy(h @ w2 + b2, y)",
                   "softmax_cross_entropy(h @ w2 + b2, y * " + c + ")");
  };
  EXPECT_EQ(Compile(s32("2147483647")), "");
  EXPECT_EQ(Compile(s32("-2147483648")), "");
  EXPECT_EQ(Compile(s32("2147483648")), At(s32("2147483648"), "2147483648") +
                                            ": error: '2147483648' is out of range for s32 (from "
                                            "-2147483648 to 2147483647)");
  EXPECT_EQ(Compile(s32("-2147483649")), At(s32("-2147483649"), "-2147483649") +
                                             ": error: '-2147483649' is out of range for s32 "
                                             "(from -2147483648 to 2147483647)");
  EXPECT_EQ(Compile(s32("0.5")), At(s32("0.5"), "0.5") +
                                     ": error: '0.5' is not an integer, but the other operand is "
                                     "s32");
  // Two constants meet no tensor to take a type from (lowering used to fail internally).
  std::string two = WithH("relu(x @ w1 + b1) * (2 * 3)");
  EXPECT_EQ(Compile(two), At(two, "2 * 3") +
                              ": error: 2 * 3: arithmetic on two constants (write the value "
                              "instead)");
}

TEST(HostileTest, Bytes) {
  // A NUL byte anywhere (a binary file, comments included) is refused at its position.
  EXPECT_EQ(Compile(std::string(100, '\0')),
            "p.dt:1:1: error: NUL byte (0x00) in the program: a .dt file is text");
  EXPECT_EQ(Compile(std::string("# a comment \0\ntrain(steps = 1)", 29)),
            "p.dt:1:13: error: NUL byte (0x00) in the program: a .dt file is text");
  EXPECT_EQ(Compile("\xff\xfe"), "p.dt:1:1: error: unexpected character byte 0xff");
  // Inside strings: UTF-8 is fine, invalid UTF-8 and control characters are not.
  EXPECT_EQ(Compile(Replace(kTiny, "tiny.csv", "t\xc3\xa9.csv")), "");
  for (const char* bad : {"t\xff.csv", "t\xc3.csv", "t\xed\xa0\x80.csv", "t\xc0\xaf.csv"}) {
    std::string p = Replace(kTiny, "tiny.csv", bad);
    char shown[8];
    std::snprintf(shown, sizeof shown, "0x%02x", static_cast<unsigned char>(bad[1]));
    EXPECT_EQ(Compile(p),
              std::string("p.dt:1:19: error: invalid UTF-8 (byte ") + shown + ") in a string")
        << bad;
  }
  std::string nul = Replace(kTiny, "tiny.csv", std::string("tiny.csv\0x", 10));
  EXPECT_EQ(Compile(nul), "p.dt:1:26: error: NUL byte (0x00) in the program: a .dt file is text");
  EXPECT_EQ(Compile(Replace(kTiny, "\"tiny.csv\"", "\"tiny.csv")),
            "p.dt:1:17: error: unterminated string (expected '\"' before the end of the line)");
  EXPECT_EQ(Compile("data d = csv(\"x"),
            "p.dt:1:14: error: unterminated string (expected '\"' "
            "before the end of the line)");
  // A comment with no newline at the end of the file.
  std::string comment = std::string(kTiny) + "# the end";
  EXPECT_EQ(Compile(comment), "");
  // CRLF line endings: the same program (the '\r' is whitespace), and errors positioned alike.
  std::string crlf;
  for (char c : std::string(kTiny)) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  EXPECT_EQ(Compile(crlf), "");
  std::string crlf_bad =
      Replace(crlf, "x @ w1 + b1)\r\n  h = dropout", "x @ w2 + b1)\r\n  h = dropout");
  EXPECT_EQ(Compile(crlf_bad).substr(0, 24), "p.dt:7:12: error: x @ w2");
  // A huge name is echoed abbreviated, and the error shows a window of its line.
  std::string name(1 << 20, 'a');
  SourceFile src("p.dt", name);
  Result<Program> r = Parse(src);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 600u);
  EXPECT_EQ(r.status().message().substr(0, r.status().message().find('\n')),
            "p.dt:1:1: error: expected a declaration (data, param, def, optimizer, metrics or "
            "train), found '" +
                Abbreviate(name) + "'");
  // The source size limit: a program padded with a comment to exactly the limit compiles, one
  // byte more is refused at that byte.
  std::string padded = std::string(kTiny) + "#";
  padded += std::string(kMaxSourceBytes - padded.size(), 'x');
  ASSERT_EQ(padded.size(), kMaxSourceBytes);
  EXPECT_EQ(Compile(padded), "");
  padded += "x";
  EXPECT_EQ(Compile(padded),
            "p.dt:17:" + std::to_string(kMaxSourceBytes - std::string(kTiny).size() + 1) +
                ": error: the program is larger than 4 MiB (a .dt file is a "
                "program, not data)");
  std::string line(10 << 20, 'x');  // a 10 MB line
  EXPECT_EQ(Compile(line),
            "p.dt:1:4194305: error: the program is larger than 4 MiB (a .dt file is "
            "a program, not data)");
}

// The whole pipeline through the CLI: the deepest programs compile (passes and codegen too),
// one level more exits 2 with a positioned message, never a signal.
TEST(HostileTest, CliExitCodes) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("dt_hostile_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(fs::path(DETRAIN_SOURCE_DIR) / "tests/evidence/testdata/tiny/tiny.csv",
                dir / "tiny.csv", fs::copy_options::overwrite_existing);
  auto run = [&](const std::string& name, const std::string& text, std::string* out) {
    std::ofstream(dir / name, std::ios::binary) << text;
    std::string cmd =
        "cd '" + dir.string() + "' && '" + DETRAIN_BINARY + "' compile " + name + " --hashes 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    char buf[4096];
    out->clear();
    while (size_t n = fread(buf, 1, sizeof buf, p)) out->append(buf, n);
    int status = pclose(p);
    if (!WIFEXITED(status)) return -1;  // a signal
    return WEXITSTATUS(status);
  };
  struct Case {
    std::string name, text;
    int rc;
    std::string where;  // the start of the output
  };
  auto chain = [](int k) { return WithH("relu(x @ w1" + Repeat(" + b1", k) + ")"); };
  auto calls = [](int k) { return WithH(Repeat("relu(", k) + "x @ w1 + b1" + Repeat(")", k)); };
  auto parens = [](int k) {
    return WithH("relu(" + Repeat("(", k) + "x @ w1" + Repeat(")", k) + " + b1)");
  };
  Case cases[] = {
      {"chain_at.dt", chain(kN - 3), 0, "stage program sha256:"},
      {"chain_past.dt", chain(100000), 2, "chain_past.dt:7:1289: error: expression nests"},
      {"calls_at.dt", calls(kN - 3), 0, "stage program sha256:"},
      {"calls_past.dt", calls(20000), 2, "calls_past.dt:7:1287: error: expression nests"},
      {"parens_past.dt", parens(20000), 2, "parens_past.dt:7:267: error: expression nests"},
      {"huge.dt", Replace(kTiny, "f32[8]", "f32[99999999999999999999999]"), 2,
       "huge.dt:3:15: error: dimension"},
      {"e999.dt", WithH("relu(x @ w1 + b1) * 1e999"), 2, "e999.dt:7:27: error: '1e999'"},
  };
  for (const Case& c : cases) {
    std::string out;
    EXPECT_EQ(run(c.name, c.text, &out), c.rc) << c.name << ": " << out.substr(0, 400);
    EXPECT_EQ(out.substr(0, c.where.size()), c.where) << c.name;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace detrain::frontend
