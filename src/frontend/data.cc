// See dataset.h.
#include "frontend/data.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "attest/sha256.h"
#include "base/file_io.h"
#include "base/npy.h"

namespace detrain::frontend {
namespace {

struct Field {
  std::string_view text;
  int64_t column;  // 1-based byte column in the line
};

std::vector<Field> SplitCsvLine(std::string_view line) {
  std::vector<Field> fields;
  size_t start = 0;
  for (;;) {
    size_t comma = line.find(',', start);
    std::string_view f = line.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    // Surrounding spaces are allowed; quotes are not (the format is numeric).
    size_t b = f.find_first_not_of(" \t"), e = f.find_last_not_of(" \t");
    int64_t col = static_cast<int64_t>(start) + 1 +
                  (b == std::string_view::npos ? 0 : static_cast<int64_t>(b));
    fields.push_back(
        {b == std::string_view::npos ? std::string_view() : f.substr(b, e - b + 1), col});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

template <typename T>
bool ParseExact(std::string_view s, T* out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);  // from_chars rejects a leading '+'
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

Result<Dataset> LoadCsv(const std::string& path, const CsvOptions& opt) {
  DETRAIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  Dataset ds;
  ds.label_type = opt.label_type;
  ds.file_sha256.emplace_back(path, attest::Sha256Hex(text));
  int64_t line_no = 0;
  int64_t columns = -1;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line(text.data() + pos, (eol == std::string::npos ? text.size() : eol) - pos);
    pos = eol == std::string::npos ? text.size() : eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no <= opt.skip_rows || line.find_first_not_of(" \t") == std::string_view::npos)
      continue;
    std::vector<Field> fields = SplitCsvLine(line);
    std::string where = path + ":" + std::to_string(line_no);
    if (columns < 0) {
      columns = static_cast<int64_t>(fields.size());
      if (columns < 2)
        return InvalidArgument(where +
                               ": expected a label and at least one feature column, found " +
                               std::to_string(columns) + " column");
      int64_t label = opt.label_column < 0 ? opt.label_column + columns : opt.label_column;
      if (label < 0 || label >= columns) {
        return InvalidArgument(where + ": label column " + std::to_string(opt.label_column) +
                               " is outside the " + std::to_string(columns) + " columns");
      }
      ds.features = columns - 1;
    } else if (static_cast<int64_t>(fields.size()) != columns) {
      return InvalidArgument(where + ": expected " + std::to_string(columns) +
                             " columns (as on the first data line), found " +
                             std::to_string(fields.size()));
    }
    int64_t label = opt.label_column < 0 ? opt.label_column + columns : opt.label_column;
    for (int64_t c = 0; c < columns; ++c) {
      const Field& f = fields[static_cast<size_t>(c)];
      std::string at = where + ":" + std::to_string(f.column);
      if (c == label && opt.label_type == LabelType::kS32) {
        int32_t v;
        if (!ParseExact(f.text, &v))
          return InvalidArgument(at + ": expected an integer class label, found '" +
                                 std::string(f.text) + "'");
        ds.y_s32.push_back(v);
        continue;
      }
      float v;
      if (!ParseExact(f.text, &v))
        return InvalidArgument(at + ": expected a number, found '" + std::string(f.text) + "'");
      if (!std::isfinite(v))
        return InvalidArgument(at + ": '" + std::string(f.text) + "' is not a finite float32");
      (c == label ? ds.y_f32 : ds.x).push_back(v);
    }
    ++ds.rows;
  }
  if (ds.rows == 0)
    return InvalidArgument(path + ": no data rows (after skipping " +
                           std::to_string(opt.skip_rows) + ")");
  ds.x_dims = {ds.features};
  return ds;
}

Result<Dataset> LoadNpyPair(const std::string& features_path, const std::string& labels_path,
                            LabelType label_type) {
  DETRAIN_ASSIGN_OR_RETURN(std::string fbytes, ReadFile(features_path));
  DETRAIN_ASSIGN_OR_RETURN(std::string lbytes, ReadFile(labels_path));
  Result<NpyArray> fr = ParseNpy(fbytes);
  if (!fr.ok()) return fr.status().WithContext(features_path);
  Result<NpyArray> lr = ParseNpy(lbytes);
  if (!lr.ok()) return lr.status().WithContext(labels_path);
  const NpyArray& f = *fr;
  const NpyArray& l = *lr;
  Dataset ds;
  ds.label_type = label_type;
  ds.file_sha256 = {{features_path, attest::Sha256Hex(fbytes)},
                    {labels_path, attest::Sha256Hex(lbytes)}};
  if (f.dtype != NpyDtype::kF32 || f.shape.empty() || f.shape.size() > 2) {
    return InvalidArgument(features_path +
                           ": features must be float32 with shape [rows] or [rows, F]");
  }
  ds.rows = f.shape[0];
  ds.features = f.shape.size() == 2 ? f.shape[1] : 1;
  ds.x_dims = {ds.features};
  ds.x.resize(static_cast<size_t>(ds.rows * ds.features));
  std::memcpy(ds.x.data(), f.data.data(), ds.x.size() * sizeof(float));
  if (l.shape.size() != 1 || l.shape[0] != ds.rows) {
    return InvalidArgument(labels_path + ": labels must have shape [" + std::to_string(ds.rows) +
                           "] to match the features");
  }
  if (label_type == LabelType::kS32) {
    if (l.dtype == NpyDtype::kS32) {
      ds.y_s32.resize(static_cast<size_t>(ds.rows));
      std::memcpy(ds.y_s32.data(), l.data.data(), ds.y_s32.size() * 4);
    } else if (l.dtype == NpyDtype::kS64) {
      for (int64_t i = 0; i < ds.rows; ++i) {
        int64_t v;
        std::memcpy(&v, l.data.data() + 8 * i, 8);
        if (v < INT32_MIN || v > INT32_MAX)
          return InvalidArgument(labels_path + ": label " + std::to_string(v) +
                                 " does not fit s32");
        ds.y_s32.push_back(static_cast<int32_t>(v));
      }
    } else {
      return InvalidArgument(labels_path + ": integer labels must be int32 or int64");
    }
  } else {
    if (l.dtype != NpyDtype::kF32) return InvalidArgument(labels_path + ": labels must be float32");
    ds.y_f32.resize(static_cast<size_t>(ds.rows));
    std::memcpy(ds.y_f32.data(), l.data.data(), ds.y_f32.size() * 4);
  }
  return ds;
}

Result<Dataset> LoadText(const std::string& path, int64_t context) {
  DETRAIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  if (context < 1) return InvalidArgument(path + ": context must be >= 1");
  Dataset ds;
  ds.file_sha256.emplace_back(path, attest::Sha256Hex(text));
  int64_t size = static_cast<int64_t>(text.size());
  ds.rows = size > 0 ? (size - 1) / context : 0;
  if (ds.rows == 0) {
    return InvalidArgument(path + ": " + std::to_string(size) +
                           " bytes are too few for one sequence of " + std::to_string(context) +
                           " bytes and its next byte");
  }
  ds.features = context;
  ds.x_dims = {context};
  ds.y_dims = {context};
  ds.label_type = LabelType::kS32;
  for (int64_t i = 0; i < ds.rows * context; ++i) {
    ds.x_s32.push_back(static_cast<unsigned char>(text[static_cast<size_t>(i)]));
    ds.y_s32.push_back(static_cast<unsigned char>(text[static_cast<size_t>(i + 1)]));
  }
  return ds;
}

Result<Dataset> LoadProgramData(const DataConfig& data, const std::string& base_dir,
                                LabelType label_type) {
  auto resolve = [&](const std::string& p) {
    return p.empty() || p[0] == '/' ? p : base_dir + "/" + p;
  };
  Result<Dataset> ds = Internal("unreachable");
  std::vector<std::string> written;  // the paths as the program writes them
  switch (data.kind) {
    case DataSourceKind::kCsv: {
      CsvOptions opt;
      opt.label_column = data.label;
      opt.skip_rows = data.skip_rows;
      opt.label_type = label_type;
      written = {data.path};
      ds = LoadCsv(resolve(data.path), opt);
      break;
    }
    case DataSourceKind::kNpy:
      written = {data.features, data.labels};
      ds = LoadNpyPair(resolve(data.features), resolve(data.labels), label_type);
      break;
    case DataSourceKind::kText:
      written = {data.path};
      ds = LoadText(resolve(data.path), data.context);
      break;
  }
  // Record the program's own spelling of each path: where the program is compiled from must not
  // change what is hashed.
  if (ds.ok()) {
    for (size_t i = 0; i < written.size() && i < ds->file_sha256.size(); ++i)
      ds->file_sha256[i].first = written[i];
  }
  return ds;
}

}  // namespace detrain::frontend
