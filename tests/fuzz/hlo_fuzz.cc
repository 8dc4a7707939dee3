// libFuzzer harness: IR / HLO text (the XLA importer over the compiler/ir parser, verifier,
// canonical printer). Whatever the text, xla_import::ParseHloText and VerifyModule return a
// module or an error. A module that verifies has the round-trip property of docs/ir.md
// "Canonical text": its canonical text parses with the IR's parser alone (no XLA hooks) and
// verifies again and prints to the same bytes (print -> parse -> print is the identity).
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/budget.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/xla_import/import.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detrain::SetMemoryBudget({int64_t{256} << 20, int64_t{1} << 30});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using detrain::fuzz::PropertyFailed;
  auto module = detrain::xla_import::ParseHloText(detrain::fuzz::AsText(data, size));
  if (!module.ok()) return 0;
  if (!detrain::ir::VerifyModule(**module).ok()) return 0;
  auto printed = detrain::ir::PrintModule(**module);
  if (!printed.ok()) return 0;  // a malformed graph the verifier let through is reported here
  auto reparsed = detrain::ir::ParseAndVerify(*printed);
  if (!reparsed.ok()) {
    PropertyFailed("the canonical text of a verified module does not parse and verify",
                   reparsed.status().ToString() + "\n--- canonical text ---\n" + *printed);
  }
  auto reprinted = detrain::ir::PrintModule(**reparsed);
  if (!reprinted.ok() || *reprinted != *printed) {
    PropertyFailed("print -> parse -> print is not the identity",
                   "--- first ---\n" + *printed + "--- second ---\n" +
                       (reprinted.ok() ? *reprinted : reprinted.status().ToString()));
  }
  return 0;
}
