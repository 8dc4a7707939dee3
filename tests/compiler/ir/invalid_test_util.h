// The invalid-input checks shared by the IR's tests (invalid_test.cc, with ir::ParseAndVerify)
// and the XLA importer's (tests/compiler/xla_import/invalid_test.cc): the expected-error files
// of a directory, and malformed variants of a valid module. Test-only.
#ifndef DETRAIN_TESTS_COMPILER_IR_INVALID_TEST_UTIL_H_
#define DETRAIN_TESTS_COMPILER_IR_INVALID_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

#include "base/status.h"
#include "compiler/ir/module.h"
#include "test_util.h"

namespace detrain::testing {

// A parser and verifier of module text.
using ParseAndVerifyFn = Result<std::unique_ptr<ir::Module>> (*)(std::string_view);

struct Expectation {
  int line = 0;
  std::string text;
};

// The one line `// expected-error@+N: TEXT` of a test file (docs/ir.md "Tests").
inline Expectation FindExpectation(const std::string& source) {
  std::istringstream lines(source);
  std::string line;
  int number = 0;
  const std::string marker = "// expected-error@+";
  while (std::getline(lines, line)) {
    ++number;
    size_t pos = line.find(marker);
    if (pos == std::string::npos) continue;
    size_t colon = line.find(':', pos);
    int offset = std::stoi(line.substr(pos + marker.size(), colon - pos - marker.size()));
    return {number + offset, line.substr(colon + 2)};
  }
  return {};
}

// Every *.hlo of `dir` (at least `at_least` files) fails `parse` with an error located on the
// line its expectation names, whose message contains the expected text.
inline void ExpectEachFileFails(ParseAndVerifyFn parse, const std::filesystem::path& dir,
                                size_t at_least) {
  auto files = FilesEndingWith(dir, ".hlo");
  ASSERT_GE(files.size(), at_least);
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    std::string source = ReadTextFile(file);
    Expectation want = FindExpectation(source);
    ASSERT_GT(want.line, 0) << "no // expected-error@+N: line";
    auto module = parse(source);
    ASSERT_FALSE(module.ok()) << "the file was accepted";
    const std::string& message = module.status().message();
    EXPECT_EQ(message.substr(0, message.find(':')), std::to_string(want.line)) << message;
    EXPECT_NE(message.find(want.text), std::string::npos) << message;
  }
}

// Malformed input of every kind (SQLite's rule): parsing `input` either succeeds or fails with
// a located error (or one about the module as a whole); never a crash.
inline void ExpectCleanResult(ParseAndVerifyFn parse, const std::string& input) {
  auto module = parse(input);
  if (module.ok()) return;
  const std::string& m = module.status().message();
  bool located = !m.empty() && std::isdigit(static_cast<unsigned char>(m[0]));
  EXPECT_TRUE(located || m.find("ENTRY") != std::string::npos ||
              m.find("cycle") != std::string::npos || m.find("recursion") != std::string::npos)
      << m;
}

// Every prefix of `text`, and `text` with each character replaced in turn.
inline void ExpectTruncatedAndCorruptedFailCleanly(ParseAndVerifyFn parse,
                                                   const std::string& text) {
  for (size_t n = 0; n < text.size(); ++n) ExpectCleanResult(parse, text.substr(0, n));
  const char kReplacements[] = {'(', ')', '{', '}', ',',  '=', '0',
                                '9', 'x', '%', '"', '\n', '-', '['};
  for (size_t i = 0; i < text.size(); ++i) {
    std::string corrupted = text;
    corrupted[i] = kReplacements[i % sizeof(kReplacements)];
    ExpectCleanResult(parse, corrupted);
  }
}

}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_COMPILER_IR_INVALID_TEST_UTIL_H_
