// See data.h: the .npy, .npz and text sources and LoadProgramData; CSV is in data_csv.cc.
#include "frontend/data.h"

#include <cstring>

#include "attest/sha256.h"
#include "base/file_io.h"
#include "base/npy.h"
#include "base/npz.h"

namespace detrain::frontend {
namespace {

// Features f32 [rows] or [rows, F] and labels [rows] (s32/s64 or f32, as label_type asks);
// `fwhere` and `lwhere` name the arrays in messages.
Result<Dataset> FromArrays(const NpyArray& f, const std::string& fwhere, const NpyArray& l,
                           const std::string& lwhere, LabelType label_type) {
  Dataset ds;
  ds.label_type = label_type;
  if (f.dtype != NpyDtype::kF32 || f.shape.empty() || f.shape.size() > 2) {
    return InvalidArgument(fwhere + ": features must be float32 with shape [rows] or [rows, F]");
  }
  ds.rows = f.shape[0];
  ds.features = f.shape.size() == 2 ? f.shape[1] : 1;
  ds.x_dims = {ds.features};
  ds.x.resize(static_cast<size_t>(ds.rows * ds.features));
  std::memcpy(ds.x.data(), f.data.data(), ds.x.size() * sizeof(float));
  if (l.shape.size() != 1 || l.shape[0] != ds.rows) {
    return InvalidArgument(lwhere + ": labels must have shape [" + std::to_string(ds.rows) +
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
          return InvalidArgument(lwhere + ": label " + std::to_string(v) + " does not fit s32");
        ds.y_s32.push_back(static_cast<int32_t>(v));
      }
    } else {
      return InvalidArgument(lwhere + ": integer labels must be int32 or int64");
    }
    for (size_t i = 0; i < ds.y_s32.size(); ++i) {
      if (ds.y_s32[i] < 0) {
        return InvalidArgument(lwhere + ": label " + std::to_string(i) + " is a negative class, " +
                               std::to_string(ds.y_s32[i]));
      }
    }
  } else {
    if (l.dtype != NpyDtype::kF32) return InvalidArgument(lwhere + ": labels must be float32");
    ds.y_f32.resize(static_cast<size_t>(ds.rows));
    std::memcpy(ds.y_f32.data(), l.data.data(), ds.y_f32.size() * 4);
  }
  return ds;
}

}  // namespace

Result<Dataset> LoadNpyPair(const std::string& features_path, const std::string& labels_path,
                            LabelType label_type) {
  DETRAIN_ASSIGN_OR_RETURN(std::string fbytes, ReadFile(features_path));
  DETRAIN_ASSIGN_OR_RETURN(std::string lbytes, ReadFile(labels_path));
  std::vector<std::pair<std::string, std::string>> digests = {
      {features_path, attest::Sha256Hex(fbytes)}, {labels_path, attest::Sha256Hex(lbytes)}};
  // Parsed in place (ParseNpy of an rvalue): each file's data is held once, not twice.
  Result<NpyArray> fr = ParseNpy(std::move(fbytes));
  if (!fr.ok()) return fr.status().WithContext(features_path);
  Result<NpyArray> lr = ParseNpy(std::move(lbytes));
  if (!lr.ok()) return lr.status().WithContext(labels_path);
  DETRAIN_ASSIGN_OR_RETURN(Dataset ds,
                           FromArrays(*fr, features_path, *lr, labels_path, label_type));
  ds.file_sha256 = std::move(digests);
  return ds;
}

Result<Dataset> LoadNpz(const std::string& path, const std::string& features,
                        const std::string& labels, LabelType label_type) {
  DETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  const std::string digest = attest::Sha256Hex(bytes);
  // ParseNpz accounts the arrays against the memory budget before it inflates anything.
  Result<std::map<std::string, NpyArray>> arrays = ParseNpz(bytes, {features, labels});
  std::string().swap(bytes);  // the archive is no longer needed while the arrays are copied
  if (!arrays.ok()) return arrays.status().WithContext(path);
  auto where = [&](const std::string& array) { return path + ": array '" + array + "'"; };
  DETRAIN_ASSIGN_OR_RETURN(Dataset ds, FromArrays(arrays->at(features), where(features),
                                                  arrays->at(labels), where(labels), label_type));
  ds.file_sha256 = {{path, digest}};
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
      opt.label = data.label;
      opt.skip_rows = data.skip_rows;
      opt.label_type = label_type;
      opt.header = data.header;
      opt.columns = data.columns;
      written = {data.path};
      ds = LoadCsv(resolve(data.path), opt);
      break;
    }
    case DataSourceKind::kNpy:
      written = {data.features, data.labels};
      ds = LoadNpyPair(resolve(data.features), resolve(data.labels), label_type);
      break;
    case DataSourceKind::kNpz:
      written = {data.path};
      ds = LoadNpz(resolve(data.path), data.features, data.labels, label_type);
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
