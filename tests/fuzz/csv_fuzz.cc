// libFuzzer harness: the frontend's CSV reader (frontend/data.h LoadCsv). The first two bytes
// choose the options a program could give (header, skip_rows, the label column and its type,
// the feature columns); the rest is the file, written to a scratch directory because LoadCsv
// reads a path. Whatever the bytes, LoadCsv returns a dataset or an error; a dataset it returns
// is consistent (rows x features values, one label per row).
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/budget.h"
#include "frontend/data.h"
#include "fuzz_util.h"

namespace {

using detrain::frontend::ColumnRef;

ColumnRef Column(uint8_t code) {
  static const char* const kNames[] = {"y", "label", "x0", "a"};
  if (code & 0x8) return std::string(kNames[code & 0x3]);
  return static_cast<int64_t>(code & 0x7) - 3;  // -3 .. 4
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detrain::SetMemoryBudget({int64_t{256} << 20, int64_t{1} << 30});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  detrain::frontend::CsvOptions options;
  options.header = (data[0] & 0x1) != 0;
  options.label_type =
      (data[0] & 0x2) ? detrain::frontend::LabelType::kF32 : detrain::frontend::LabelType::kS32;
  options.skip_rows = (data[0] >> 2) & 0x3;
  options.label = (data[0] & 0xf0) == 0 ? ColumnRef(int64_t{-1}) : Column(data[0] >> 4);
  if (data[1] != 0) {
    options.columns.push_back(Column(data[1] & 0xf));
    if (data[1] & 0xf0) options.columns.push_back(Column(data[1] >> 4));
  }
  const std::string path = detrain::fuzz::ScratchDir() + "/input.csv";
  detrain::fuzz::WriteBytes(path, detrain::fuzz::AsText(data + 2, size - 2));
  auto ds = detrain::frontend::LoadCsv(path, options);
  if (!ds.ok()) return 0;
  const size_t values = static_cast<size_t>(ds->rows) * static_cast<size_t>(ds->features);
  const size_t labels = options.label_type == detrain::frontend::LabelType::kF32 ? ds->y_f32.size()
                                                                                 : ds->y_s32.size();
  if (ds->x.size() != values || labels != static_cast<size_t>(ds->rows)) {
    detrain::fuzz::PropertyFailed("LoadCsv returned an inconsistent dataset", "");
  }
  return 0;
}
