// LoadCsv (see data.h): numeric CSV files, with an optional header line naming the columns, a
// label column and a chosen list of feature columns.
#include <charconv>
#include <cmath>
#include <map>

#include "attest/sha256.h"
#include "base/file_io.h"
#include "base/suggest.h"
#include "frontend/data.h"

namespace detrain::frontend {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

struct Field {
  std::string_view text;
  int64_t column;  // 1-based byte column in the line
};

// `offset`: bytes of the line before `line` (a byte-order mark), for the columns.
std::vector<Field> SplitCsvLine(std::string_view line, int64_t offset) {
  std::vector<Field> fields;
  size_t start = 0;
  for (;;) {
    size_t comma = line.find(',', start);
    std::string_view f = line.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    // Surrounding spaces are allowed; quotes are not (the format is numeric).
    size_t b = f.find_first_not_of(" \t"), e = f.find_last_not_of(" \t");
    int64_t col = offset + static_cast<int64_t>(start) + 1 +
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

constexpr int64_t kLabelSlot = -1, kUnused = -2;

// What each column of the file is: the label, a feature (and which), or unused.
struct Layout {
  int64_t count = 0;               // columns per line
  std::vector<std::string> names;  // from the header, when there is one
  std::vector<int64_t> slot;       // per column: feature index, kLabelSlot or kUnused
  int64_t features = 0;
};

std::string Join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// A column reference resolved to its index; `what` names it in messages ("label column").
Result<int64_t> Resolve(const ColumnRef& ref, const Layout& l, const std::string& where,
                        const std::string& what) {
  if (const auto* name = std::get_if<std::string>(&ref)) {
    if (l.names.empty()) {
      return InvalidArgument(where + ": " + what + " '" + *name +
                             "' is a name, which needs header = true");
    }
    for (size_t i = 0; i < l.names.size(); ++i) {
      if (l.names[i] == *name) return static_cast<int64_t>(i);
    }
    return InvalidArgument(where + ": no column named '" + *name + "'" +
                           DidYouMean(*name, l.names) + "; the header names " + Join(l.names));
  }
  const int64_t index = std::get<int64_t>(ref);
  const int64_t resolved = index < 0 ? index + l.count : index;
  if (resolved < 0 || resolved >= l.count) {
    return InvalidArgument(where + ": " + what + " " + std::to_string(index) + " is outside the " +
                           std::to_string(l.count) + " columns");
  }
  return resolved;
}

std::string ColumnText(const Layout& l, int64_t c) {
  return l.names.empty() ? std::to_string(c) : "'" + l.names[static_cast<size_t>(c)] + "'";
}

// The label and feature columns of a file with `l.count` columns (and `l.names`, if any).
Status Assign(const CsvOptions& opt, const std::string& where, Layout* l) {
  if (l->count < 2) {
    return InvalidArgument(where + ": expected a label and at least one feature column, found " +
                           std::to_string(l->count) + " column");
  }
  DETRAIN_ASSIGN_OR_RETURN(const int64_t label, Resolve(opt.label, *l, where, "label column"));
  l->slot.assign(static_cast<size_t>(l->count), kUnused);
  l->slot[static_cast<size_t>(label)] = kLabelSlot;
  std::vector<int64_t> features;
  if (opt.columns.empty()) {
    for (int64_t c = 0; c < l->count; ++c) {
      if (c != label) features.push_back(c);
    }
  }
  for (const ColumnRef& ref : opt.columns) {
    DETRAIN_ASSIGN_OR_RETURN(const int64_t c, Resolve(ref, *l, where, "feature column"));
    int64_t& slot = l->slot[static_cast<size_t>(c)];
    if (slot == kLabelSlot) {
      return InvalidArgument(where + ": columns lists column " + ColumnText(*l, c) + ", the label");
    }
    if (slot != kUnused) {
      return InvalidArgument(where + ": columns lists column " + ColumnText(*l, c) + " twice");
    }
    slot = static_cast<int64_t>(features.size());
    features.push_back(c);
  }
  for (size_t i = 0; i < features.size(); ++i) {
    l->slot[static_cast<size_t>(features[i])] = static_cast<int64_t>(i);
  }
  l->features = static_cast<int64_t>(features.size());
  return Status::Ok();
}

// Column names: trimmed, non-empty, unique.
Status ReadHeader(const std::vector<Field>& fields, const std::string& where, Layout* l) {
  std::map<std::string_view, size_t> seen;
  for (size_t i = 0; i < fields.size(); ++i) {
    const Field& f = fields[i];
    std::string at = where + ":" + std::to_string(f.column);
    if (f.text.empty()) {
      return InvalidArgument(at + ": column " + std::to_string(i) +
                             " has no name (with header = true every column needs one)");
    }
    auto [it, fresh] = seen.emplace(f.text, i);
    if (!fresh) {
      return InvalidArgument(at + ": column " + std::to_string(i) + " is named '" +
                             std::string(f.text) + "', as is column " + std::to_string(it->second) +
                             "; names must be unique");
    }
    l->names.emplace_back(f.text);
  }
  return Status::Ok();
}

// One data line: the label into `ds`, the features into `row` (in feature order).
Status ParseRow(const std::vector<Field>& fields, const Layout& l, const std::string& where,
                LabelType label_type, std::vector<float>* row, Dataset* ds) {
  for (int64_t c = 0; c < l.count; ++c) {
    const int64_t slot = l.slot[static_cast<size_t>(c)];
    if (slot == kUnused) continue;
    const Field& f = fields[static_cast<size_t>(c)];
    std::string at = where + ":" + std::to_string(f.column);
    std::string in = l.names.empty() ? "" : " in column '" + l.names[static_cast<size_t>(c)] + "'";
    if (slot == kLabelSlot && label_type == LabelType::kS32) {
      int32_t v;
      if (!ParseExact(f.text, &v))
        return InvalidArgument(at + ": expected an integer class label, found '" +
                               std::string(f.text) + "'" + in);
      if (v < 0) {
        return InvalidArgument(at + ": a class label must be 0 or more, found " +
                               std::to_string(v) + in);
      }
      ds->y_s32.push_back(v);
      continue;
    }
    float v;
    if (!ParseExact(f.text, &v))
      return InvalidArgument(at + ": expected a number, found '" + std::string(f.text) + "'" + in);
    if (!std::isfinite(v))
      return InvalidArgument(at + ": '" + std::string(f.text) + "' is not a finite float32" + in);
    if (slot == kLabelSlot) {
      ds->y_f32.push_back(v);
    } else {
      (*row)[static_cast<size_t>(slot)] = v;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Dataset> LoadCsv(const std::string& path, const CsvOptions& opt) {
  DETRAIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  Dataset ds;
  ds.label_type = opt.label_type;
  ds.file_sha256.emplace_back(path, attest::Sha256Hex(text));
  int64_t line_no = 0;
  int64_t header_line = 0;
  Layout layout;
  bool laid_out = false;
  std::vector<float> row;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line(text.data() + pos, (eol == std::string::npos ? text.size() : eol) - pos);
    pos = eol == std::string::npos ? text.size() : eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    int64_t offset = 0;
    if (line_no == 1 && line.substr(0, kByteOrderMark.size()) == kByteOrderMark) {
      line.remove_prefix(kByteOrderMark.size());
      offset = static_cast<int64_t>(kByteOrderMark.size());
    }
    if (line_no <= opt.skip_rows || line.find_first_not_of(" \t") == std::string_view::npos)
      continue;
    std::vector<Field> fields = SplitCsvLine(line, offset);
    std::string where = path + ":" + std::to_string(line_no);
    if (!laid_out) {
      laid_out = true;
      layout.count = static_cast<int64_t>(fields.size());
      if (opt.header) DETRAIN_RETURN_IF_ERROR(ReadHeader(fields, where, &layout));
      DETRAIN_RETURN_IF_ERROR(Assign(opt, where, &layout));
      row.resize(static_cast<size_t>(layout.features));
      if (opt.header) {
        header_line = line_no;
        continue;
      }
    } else if (static_cast<int64_t>(fields.size()) != layout.count) {
      return InvalidArgument(where + ": expected " + std::to_string(layout.count) + " columns (" +
                             (opt.header ? "as in the header" : "as on the first data line") +
                             "), found " + std::to_string(fields.size()));
    }
    DETRAIN_RETURN_IF_ERROR(ParseRow(fields, layout, where, opt.label_type, &row, &ds));
    ds.x.insert(ds.x.end(), row.begin(), row.end());
    ++ds.rows;
  }
  if (ds.rows == 0) {
    std::string skipped = "(after skipping " + std::to_string(opt.skip_rows) + ")";
    if (!opt.header) return InvalidArgument(path + ": no data rows " + skipped);
    if (header_line == 0) return InvalidArgument(path + ": no header line " + skipped);
    return InvalidArgument(path + ": no data rows after the header (line " +
                           std::to_string(header_line) + ")");
  }
  ds.features = layout.features;
  ds.x_dims = {ds.features};
  return ds;
}

}  // namespace detrain::frontend
