// libFuzzer harness: the front half of the compile of a .dt program (driver::Compile without
// the backend: frontend parse, check, data loading, lowering to stages 1-2, init and eval; the
// pass pipeline and the CPU plan, stages 3-4, are left out for speed). The input is the program
// text, optionally followed by a line "%%data" and the bytes of its data file; without one the data
// is a small built-in CSV of 4 features and an s32 label. Every string literal of the program names
// that one file (CompileOptions::data_files), so whatever path a mutated program spells, the data
// is found and compilation goes on past the data source. Whatever the bytes, Compile returns stages
// or an error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/budget.h"
#include "driver/compile.h"
#include "fuzz_util.h"

namespace {

constexpr std::string_view kDataMarker = "\n%%data\n";

// 32 rows: x0..x3, label = x0 + x1/2 - x2 > 0.
std::string DefaultCsv() {
  std::string csv;
  uint32_t s = 12345;
  for (int r = 0; r < 32; ++r) {
    float x[4];
    for (float& v : x) {
      s = s * 1103515245u + 12345u;
      v = static_cast<float>(static_cast<int>((s >> 16) % 2001) - 1000) / 500.0f;
      csv += std::to_string(v) + ",";
    }
    csv += (x[0] + x[1] / 2 - x[2] > 0) ? "1\n" : "0\n";
  }
  return csv;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detrain::SetMemoryBudget({int64_t{256} << 20, int64_t{1} << 30});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string default_csv = DefaultCsv();
  std::string_view input = detrain::fuzz::AsText(data, size);
  std::string_view program = input;
  std::string_view data_bytes = default_csv;
  if (size_t at = input.find(kDataMarker); at != std::string_view::npos) {
    program = input.substr(0, at + 1);
    data_bytes = input.substr(at + kDataMarker.size());
  }
  const std::string& dir = detrain::fuzz::ScratchDir();
  const std::string program_path = dir + "/train.dt";
  const std::string data_path = dir + "/data.bin";
  detrain::fuzz::WriteBytes(program_path, program);
  detrain::fuzz::WriteBytes(data_path, data_bytes);

  detrain::driver::CompileOptions options;
  options.backend = false;  // stages 3-4 take ~1.5 s a program under ASan: 5x fewer executions
  options.threads = 1;
  for (size_t open = program.find('"'); open != std::string_view::npos;) {
    size_t close = program.find('"', open + 1);
    if (close == std::string_view::npos) break;
    options.data_files[std::string(program.substr(open + 1, close - open - 1))] = data_path;
    open = program.find('"', close + 1);
  }
  (void)detrain::driver::Compile(program_path, options);
  return 0;
}
