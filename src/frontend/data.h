// Loading the data a program declares (docs/language.md §data): numeric CSV files (optionally
// with a header naming the columns), pairs of .npy files and .npz archives, into a feature
// matrix and a label vector; and byte corpora, into sequences.
//
// Text is parsed with std::from_chars straight to float32 (correctly rounded, no double
// rounding, no locale). The raw file bytes are digested as they are read, so the bundle records
// both what the file was and what was parsed from it (DESIGN.md §2, "data is digested both as
// raw file bytes and as the parsed tensors").
//
// Errors name the file, the line and column (CSV) or the array (.npz) and what was expected.
// Thread safety: pure functions of the files' contents.
#ifndef DETRAIN_FRONTEND_DATA_H_
#define DETRAIN_FRONTEND_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "frontend/run_config.h"
#include "frontend/types.h"

namespace detrain::frontend {

// The element type of labels: DType::kS32 (class ids) or DType::kF32 (regression targets).
using LabelType = DType;

struct Dataset {
  int64_t rows = 0;
  int64_t features = 0;         // elements per example input (product of x_dims)
  std::vector<int64_t> x_dims;  // one example's input shape: {F} (csv, npy) or {T} (text)
  std::vector<int64_t> y_dims;  // one example's label shape: {} or {T} (text)
  std::vector<float> x;         // rows × features, row-major (f32 inputs)
  std::vector<int32_t> x_s32;   // rows × features (text: byte values)
  std::vector<int32_t> y_s32;   // rows, when labels are s32
  std::vector<float> y_f32;     // rows, when labels are f32
  LabelType label_type = LabelType::kS32;
  std::vector<std::pair<std::string, std::string>> file_sha256;  // (path as given, hex digest)
};

struct CsvOptions {
  ColumnRef label = int64_t{-1};  // an index (negative counts from the end) or a header name
  int64_t skip_rows = 0;          // lines skipped before the header or the first data line
  LabelType label_type = LabelType::kS32;
  bool header = false;             // the first line after skip_rows names the columns
  std::vector<ColumnRef> columns;  // the feature columns, in this order; empty: all but the label
};

// One example per line, fields separated by commas (surrounding spaces and tabs allowed, no
// quotes); lines may end in \r\n, blank lines are skipped, a UTF-8 byte-order mark at the start
// is ignored. Columns that are neither the label nor a feature are not parsed.
Result<Dataset> LoadCsv(const std::string& path, const CsvOptions& options);

// features: f32 [rows, F] (or [rows] as one feature); labels: s32/s64 or f32 [rows].
Result<Dataset> LoadNpyPair(const std::string& features_path, const std::string& labels_path,
                            LabelType label_type);

// Two arrays of a .npz archive (base/npz.h), with the rules of LoadNpyPair.
Result<Dataset> LoadNpz(const std::string& path, const std::string& features,
                        const std::string& labels, LabelType label_type);

// A byte corpus cut into rows of `context` bytes: row i holds bytes [i*T, i*T + T) as inputs
// and bytes [i*T + 1, i*T + T + 1) as labels (the next byte), rows = (size - 1) / T.
Result<Dataset> LoadText(const std::string& path, int64_t context);

// Loads the data source of a checked program (its config.data); relative paths are resolved
// against `base_dir` (the program's directory).
Result<Dataset> LoadProgramData(const DataConfig& data, const std::string& base_dir,
                                LabelType label_type);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_DATA_H_
