// See diff.h. Each section is a function of the two sides' files that returns its part of the
// report; `Finish` then derives the verdict and the summary lines from the parts.
#include "evidence/diff/diff.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "attest/canonical_json.h"
#include "attest/sha256.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "base/npy.h"
#include "base/npz.h"
#include "base/safetensors.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/bundle/bundle_reader.h"
#include "evidence/diff/diff_internal.h"
#include "evidence/diff/text_diff.h"
#include "evidence/report/inspect.h"
#include "evidence/verify/verifier_internal.h"

namespace detrain::diff::internal {

// ---- reading a side ----------------------------------------------------------------------------

std::string Str(const json& j) { return j.is_string() ? j.get<std::string>() : ""; }

// A path the manifest names, inside the bundle: relative, without empty, "." or ".." components
// (a hostile manifest must not make diff read, and print, files outside it). "" otherwise.
std::string Inside(const std::string& dir, const std::string& rel) {
  if (rel.empty() || rel[0] == '/' || rel.find('\0') != std::string::npos) return "";
  size_t begin = 0;
  while (begin <= rel.size()) {
    size_t end = rel.find('/', begin);
    if (end == std::string::npos) end = rel.size();
    const std::string part = rel.substr(begin, end - begin);
    if (part.empty() || part == "." || part == "..") return "";
    begin = end + 1;
  }
  return JoinPath(dir, rel);
}

// A JSON value for the report: itself when short, otherwise its text cut to kMaxValueText.
json Shown(const json& j) {
  const std::string t = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (t.size() <= kMaxValueText) {
    return j.is_string() ? json(Printable(j.get<std::string>(), kMaxValueText)) : j;
  }
  return Printable(t, kMaxValueText);
}

// Reads what the comparison needs. Fails only when `dir` is not a finished bundle of format 1.
Status ReadSide(Side* s) {
  if (!IsDirectory(s->dir)) return InvalidArgument(s->name + ": no such bundle directory");
  if (Result<std::vector<std::string>> tree = bundle::CheckBundleTree(s->dir); !tree.ok()) {
    return tree.status();
  }
  if (!bundle::BundleHasFile(s->dir, bundle::kManifest)) {
    if (bundle::BundleHasFile(s->dir, bundle::kProgress) ||
        bundle::BundleHasFile(s->dir, bundle::kSteps)) {
      return InvalidArgument(s->name +
                             ": the bundle is incomplete (no manifest.json); finish it with "
                             "detrain run PROGRAM --attest -o " +
                             s->name + " --resume");
    }
    return InvalidArgument(s->name + ": not a bundle (no manifest.json)");
  }
  Result<json> m = bundle::ReadBundleJson(s->dir, bundle::kManifest);
  if (!m.ok()) {
    return InvalidArgument(s->name + ": manifest.json: " + std::string(m.status().message()));
  }
  if (!m->is_object() || Str(JsonAt(*m, {"format"})) != bundle::kManifestFormat) {
    return InvalidArgument(s->name +
                           ": manifest.json is not a detrain bundle manifest (its "
                           "\"format\" is not \"detrain.bundle\")");
  }
  const json& version = JsonAt(*m, {"format_version"});
  if (!version.is_number_integer() || version.get<int64_t>() != bundle::kFormatVersion) {
    return InvalidArgument(s->name + ": manifest.json has format version " + JsonText(version) +
                           "; this detrain reads version " +
                           std::to_string(bundle::kFormatVersion));
  }
  s->manifest = std::move(*m);
  // The rest is read as far as it goes; what is missing or unreadable is reported, not fatal.
  if (Result<json> d = bundle::ReadBundleJson(s->dir, bundle::kDataRecord); d.ok()) {
    s->data_record = std::move(*d);
  }
  if (Result<json> e = bundle::ReadBundleJson(s->dir, bundle::kEnvironment); e.ok()) {
    s->environment = std::move(*e);
  }
  const std::string program = Str(JsonAt(s->manifest, {"program", "path"}));
  if (!Inside(s->dir, program).empty()) {
    Result<std::string> text = bundle::ReadBundleFile(s->dir, program, kMaxText);
    if (text.ok()) s->program_text = std::move(*text), s->program_read = true;
    // A run spec (schemas/run-spec.md) is the spec and the files it names, beside it in
    // program/: each is part of the program.
    const std::string program_dir = DirName(program);
    Result<std::vector<std::string>> names = ListFiles(JoinPath(s->dir, program_dir));
    if (program.size() > 5 && program.substr(program.size() - 5) == ".json" && names.ok()) {
      for (const std::string& name : *names) {
        if (name == BaseName(program) || s->program_files.size() >= 8) continue;
        Result<std::string> bytes =
            bundle::ReadBundleFile(s->dir, JoinPath(program_dir, name), kMaxText);
        s->program_files[name] = bytes.ok() ? std::move(*bytes) : std::string();
      }
    }
  }
  Result<std::string> steps =
      bundle::ReadBundleFile(s->dir, bundle::kSteps, bundle::kMaxLogFileBytes);
  if (!steps.ok()) {
    s->steps_problem = std::string(steps.status().message());
  } else if (Result<bundle::ParsedSteps> p = bundle::ParseSteps(*steps); !p.ok()) {
    s->steps_problem = "steps.jsonl: " + std::string(p.status().message());
  } else {
    s->steps = std::move(*p);
    if (!s->steps.error.empty()) {
      s->steps_problem = "steps.jsonl line " + std::to_string(s->steps.error_line) + ": " +
                         s->steps.error + " (records before it compared)";
    }
  }
  const json& cps = JsonAt(s->manifest, {"checkpoints"});
  if (cps.is_array()) {
    for (const json& c : cps) {
      const json& done = JsonAt(c, {"steps_done"});
      const std::string path = Str(JsonAt(c, {"path"}));
      if (done.is_number_integer() && !Inside(s->dir, path).empty()) {
        s->checkpoints[done.get<int64_t>()] = path;
      }
    }
  }
  return Status::Ok();
}

json SideSummary(const Side& s) {
  json j = {{"bundle", s.name},
            {"program", Shown(JsonAt(s.manifest, {"program", "path"}))},
            {"status", Shown(JsonAt(s.manifest, {"status"}))},
            {"steps", static_cast<int64_t>(s.steps.records.size())},
            {"final_step_hash", Shown(JsonAt(s.manifest, {"final", "step_hash"}))},
            {"root_digest", Shown(JsonAt(s.manifest, {"root_digest"}))}};
  if (!s.archive_sha256.empty()) j["archive_sha256"] = s.archive_sha256;
  if (!s.steps_problem.empty()) j["steps_problem"] = s.steps_problem;
  return j;
}

// ---- field-by-field JSON -----------------------------------------------------------------------

// Every leaf where `a` and `b` differ, as {"field", "a", "b"} (a side without the field has
// "absent": "a" or "b"), at most kMaxFields; objects by key in byte order, arrays of one length
// element by element, anything else whole.
void FieldDifferences(const json& a, const json& b, const std::string& path, json* out) {
  if (a == b || out->size() >= kMaxFields) return;
  auto at = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
    for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
    for (const std::string& k : keys) {
      if (!a.contains(k) || !b.contains(k)) {
        if (out->size() >= kMaxFields) return;
        const bool in_a = a.contains(k);
        out->push_back({{"field", Printable(at(k), kMaxValueText)},
                        {"a", in_a ? Shown(a[k]) : json()},
                        {"b", in_a ? json() : Shown(b[k])},
                        {"absent", in_a ? "b" : "a"}});
        continue;
      }
      FieldDifferences(a[k], b[k], at(k), out);
    }
    return;
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i) {
      FieldDifferences(a[i], b[i], path + "[" + std::to_string(i) + "]", out);
    }
    return;
  }
  out->push_back({{"field", Printable(path, kMaxValueText)}, {"a", Shown(a)}, {"b", Shown(b)}});
}

json FieldSection(const json& a, const json& b) {
  json fields = json::array();
  FieldDifferences(a, b, "", &fields);
  return {{"same", a == b}, {"fields", fields}, {"truncated", fields.size() >= kMaxFields}};
}

// ---- inputs: program and data ------------------------------------------------------------------

// A run spec's files (the step's HLO text, the initial state), each by SHA-256, and a unified
// diff of HLO text that differs.
void ProgramFiles(const Side& a, const Side& b, json* j) {
  std::set<std::string> names;
  for (const auto& f : a.program_files) names.insert(f.first);
  for (const auto& f : b.program_files) names.insert(f.first);
  if (names.empty()) return;
  json files = json::array();
  for (const std::string& name : names) {
    auto fa = a.program_files.find(name), fb = b.program_files.find(name);
    json f = {{"name", "program/" + name}};
    f["sha256_a"] = fa == a.program_files.end() ? json() : json(attest::Sha256Hex(fa->second));
    f["sha256_b"] = fb == b.program_files.end() ? json() : json(attest::Sha256Hex(fb->second));
    f["same"] = f["sha256_a"] == f["sha256_b"];
    const bool text = name.size() > 4 && name.substr(name.size() - 4) == ".hlo";
    if (!f["same"].get<bool>() && text && fa != a.program_files.end() &&
        fb != b.program_files.end()) {
      f["diff"] = PrintableLines(
          UnifiedDiff(fa->second, fb->second, "A/program/" + name, "B/program/" + name), kMaxText);
      f["first_line"] = FirstLineDifference(fa->second, fb->second).line;
    }
    if (!f["same"].get<bool>()) (*j)["same"] = false;
    files.push_back(std::move(f));
  }
  (*j)["files"] = std::move(files);
}

json ProgramSection(const Side& a, const Side& b) {
  json j = {{"a",
             {{"path", Shown(JsonAt(a.manifest, {"program", "path"}))},
              {"sha256", Shown(JsonAt(a.manifest, {"program", "sha256"}))}}},
            {"b",
             {{"path", Shown(JsonAt(b.manifest, {"program", "path"}))},
              {"sha256", Shown(JsonAt(b.manifest, {"program", "sha256"}))}}}};
  const bool same_digest =
      JsonAt(a.manifest, {"program", "sha256"}) == JsonAt(b.manifest, {"program", "sha256"});
  j["same"] = same_digest;
  if (!a.program_read || !b.program_read) {
    j["problem"] =
        std::string("the program file of ") + (a.program_read ? "B" : "A") + " cannot be read";
    if (a.program_read != b.program_read || !same_digest) j["same"] = false;
    return j;
  }
  ProgramFiles(a, b, &j);
  if (a.program_text != b.program_text) {
    j["same"] = false;
    const std::string path_a = Str(JsonAt(a.manifest, {"program", "path"}));
    const std::string path_b = Str(JsonAt(b.manifest, {"program", "path"}));
    // The unified diff shows the text as it is; only its labels are made printable.
    j["diff"] = PrintableLines(
        UnifiedDiff(a.program_text, b.program_text, "A/" + path_a, "B/" + path_b), kMaxText);
    const LineDifference d = FirstLineDifference(a.program_text, b.program_text);
    j["first_line"] = d.line;
  }
  return j;
}

// A dataset file of a side, found where verify looks for it (the --data directories, the
// embedded copy, the program's directory, environment.json's hint) and accepted only with the
// recorded SHA-256. "" when not found; `looked` lists where it looked.
std::string LocateDataFile(const Side& s, const json& record, const std::vector<std::string>& dirs,
                           std::string* looked) {
  const std::string written = Str(JsonAt(record, {"path"}));
  const std::string want = Str(JsonAt(record, {"sha256"}));
  if (written.empty() || want.empty()) return "";
  // An embedded path that leaves the bundle is not tried.
  const std::string embedded = Str(JsonAt(record, {"embedded"}));
  const std::vector<std::string> candidates =
      DataFileCandidates(s.dir, written, Inside(s.dir, embedded).empty() ? "" : embedded,
                         Str(JsonAt(s.environment, {"program"})), dirs);
  for (const std::string& c : candidates) {
    *looked += (looked->empty() ? "" : ", ") + c;
    if (!RegularFileSize(c).ok()) continue;
    Result<std::string> bytes = ReadFile(c);
    if (bytes.ok() && attest::Sha256Hex(*bytes) == want) return c;
  }
  return "";
}

std::string ElementText(NpyDtype t, const char* p) {
  switch (t) {
    case NpyDtype::kF32: {
      uint32_t bits;
      std::memcpy(&bits, p, 4);
      return FloatText(bits);
    }
    case NpyDtype::kS32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return std::to_string(v);
    }
    case NpyDtype::kU32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return std::to_string(v);
    }
    case NpyDtype::kS64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return std::to_string(v);
    }
    case NpyDtype::kU64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return std::to_string(v);
    }
    case NpyDtype::kBool:
      return *p != 0 ? "true" : "false";
  }
  return "?";
}

// "[i, j, k]" of flat index `flat` in a row-major array of `shape`.
std::string IndexText(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t n = std::max<int64_t>(shape[d], 1);
    idx[d] = flat % n;
    flat /= n;
  }
  std::string t = "[";
  for (size_t d = 0; d < idx.size(); ++d) t += (d ? ", " : "") + std::to_string(idx[d]);
  return t + "]";
}

// How two arrays of the same dtype and shape differ, element by element (bit patterns).
json ArrayDifference(const NpyArray& a, const NpyArray& b) {
  json j = {{"dtype", std::string(NpyDescr(a.dtype))}, {"shape_a", a.shape}, {"shape_b", b.shape}};
  if (a.dtype != b.dtype || a.shape != b.shape || a.data.size() != b.data.size()) {
    j["comparable"] = false;
    j["dtype_b"] = std::string(NpyDescr(b.dtype));
    return j;
  }
  const auto size = static_cast<size_t>(NpyItemSize(a.dtype));
  int64_t differing = 0, first = -1;
  for (size_t i = 0; i + size <= a.data.size(); i += size) {
    if (std::memcmp(a.data.data() + i, b.data.data() + i, size) != 0) {
      if (first < 0) first = static_cast<int64_t>(i / size);
      ++differing;
    }
  }
  j["comparable"] = true;
  j["elements"] = static_cast<int64_t>(a.data.size() / std::max<size_t>(size, 1));
  j["differing_elements"] = differing;
  if (first >= 0) {
    const size_t off = static_cast<size_t>(first) * size;
    j["first"] = {{"flat_index", first},
                  {"index", IndexText(first, a.shape)},
                  {"a", ElementText(a.dtype, a.data.data() + off)},
                  {"b", ElementText(b.dtype, b.data.data() + off)}};
  }
  return j;
}

// What differs inside two versions of a dataset file: lines (CSV), bytes (a text corpus) or
// elements (npy, npz arrays).
json ContentDifference(const std::string& source, const std::string& path, const std::string& a,
                       const std::string& b) {
  auto ends = [&](const char* suffix) {
    const size_t n = std::strlen(suffix);
    return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
  };
  if (ends(".npy")) {
    Result<NpyArray> x = ParseNpy(a), y = ParseNpy(b);
    if (!x.ok() || !y.ok()) return {{"kind", "npy"}, {"problem", "cannot be parsed as .npy"}};
    json j = ArrayDifference(*x, *y);
    j["kind"] = "npy";
    return j;
  }
  if (ends(".npz")) {
    Result<std::map<std::string, NpyArray>> x = ParseNpz(a), y = ParseNpz(b);
    if (!x.ok() || !y.ok()) return {{"kind", "npz"}, {"problem", "cannot be parsed as .npz"}};
    json arrays = json::array();
    std::set<std::string> names;
    for (const auto& [k, v] : *x) names.insert(k);
    for (const auto& [k, v] : *y) names.insert(k);
    for (const std::string& k : names) {
      json e = {{"array", Printable(k, kMaxValueText)}};
      if (!x->count(k) || !y->count(k)) {
        e["absent"] = x->count(k) ? "b" : "a";
      } else {
        e.update(ArrayDifference(x->at(k), y->at(k)));
      }
      arrays.push_back(e);
    }
    return {{"kind", "npz"}, {"arrays", arrays}};
  }
  if (source == "text") {
    int64_t differing = 0, first = -1;
    const size_t n = std::min(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
      if (a[i] != b[i]) {
        if (first < 0) first = static_cast<int64_t>(i);
        ++differing;
      }
    }
    json j = {{"kind", "bytes"},
              {"size_a", a.size()},
              {"size_b", b.size()},
              {"differing_bytes_in_common_length", differing}};
    if (first >= 0) j["first_offset"] = first;
    return j;
  }
  // CSV: line by line.
  const std::vector<std::string_view> la = SplitLines(a), lb = SplitLines(b);
  int64_t differing = 0;
  for (size_t i = 0; i < la.size() && i < lb.size(); ++i) differing += la[i] != lb[i];
  const LineDifference d = FirstLineDifference(a, b, 0, kMaxValueText);
  json j = {{"kind", "lines"},
            {"lines_a", la.size()},
            {"lines_b", lb.size()},
            {"differing_lines_in_common_length", differing}};
  if (!d.same) {
    j["first"] = {{"line", d.line},
                  {"a", d.a_ended ? json() : json(d.line_a)},
                  {"b", d.b_ended ? json() : json(d.line_b)}};
  }
  return j;
}

json DataSection(Side& a, Side& b, const DiffOptions& o) {
  json j = json::object();
  const json& fa = JsonAt(a.data_record, {"files"});
  const json& fb = JsonAt(b.data_record, {"files"});
  json files = json::array();
  bool files_same = fa.is_array() && fb.is_array() && fa.size() == fb.size();
  const size_t n = std::max(fa.is_array() ? fa.size() : 0, fb.is_array() ? fb.size() : 0);
  for (size_t i = 0; i < n && i < kMaxFields; ++i) {
    const json& x = fa.is_array() && i < fa.size() ? fa[i] : json();
    const json& y = fb.is_array() && i < fb.size() ? fb[i] : json();
    json e = {
        {"path_a", Shown(JsonAt(x, {"path"}))},     {"path_b", Shown(JsonAt(y, {"path"}))},
        {"sha256_a", Shown(JsonAt(x, {"sha256"}))}, {"sha256_b", Shown(JsonAt(y, {"sha256"}))},
        {"size_a", Shown(JsonAt(x, {"size"}))},     {"size_b", Shown(JsonAt(y, {"size"}))}};
    const bool same = !x.is_null() && JsonAt(x, {"sha256"}) == JsonAt(y, {"sha256"});
    e["same"] = same;
    files_same = files_same && same;
    if (!same && !x.is_null() && !y.is_null()) {
      std::string looked_a, looked_b;
      const std::string pa = LocateDataFile(a, x, o.data_dirs, &looked_a);
      const std::string pb = LocateDataFile(b, y, o.data_dirs, &looked_b);
      if (pa.empty() || pb.empty()) {
        e["content"] = {{"problem", std::string("the file of ") + (pa.empty() ? "A" : "B") +
                                        " is not available (looked at: " +
                                        Printable(pa.empty() ? looked_a : looked_b, 2048) +
                                        "); give --data DIR to compare the contents"}};
      } else {
        Result<std::string> ba = ReadFile(pa), bb = ReadFile(pb);
        if (ba.ok() && bb.ok()) {
          e["content"] = ContentDifference(Str(JsonAt(a.data_record, {"source"})),
                                           Str(JsonAt(x, {"path"})), *ba, *bb);
          e["content"]["file_a"] = Printable(pa, 2048);
          e["content"]["file_b"] = Printable(pb, 2048);
        }
      }
    }
    files.push_back(e);
  }
  j["files"] = files;
  j["files_same"] = files_same;
  // The record's other fields (source, parsed digests, split, batching, standardization); where
  // a file is embedded is a run option (run.embed_data), not the data.
  json ra = a.data_record, rb = b.data_record;
  for (json* r : {&ra, &rb}) {
    if (r->is_object()) r->erase("files");
  }
  j["record"] = FieldSection(ra, rb);
  // The split's index lists, position by position.
  json split = json::object();
  for (const char* which : {"train", "validation"}) {
    const std::string field = std::string(which) + "_index_sha256";
    const json& da = JsonAt(a.data_record, {"split", field.c_str()});
    const json& db = JsonAt(b.data_record, {"split", field.c_str()});
    json e = {{"same", da == db}, {"sha256_a", Shown(da)}, {"sha256_b", Shown(db)}};
    if (da != db) {
      Result<SafetensorsFile> sa = bundle::ReadBundleSafetensors(a.dir, bundle::kSplitFile);
      Result<SafetensorsFile> sb = bundle::ReadBundleSafetensors(b.dir, bundle::kSplitFile);
      const std::string tensor = std::string(which) + "_index";
      auto find = [&](const SafetensorsFile& f) -> const SafeTensor* {
        for (const SafeTensor& t : f.tensors) {
          if (t.name == tensor && t.dtype == "I64" && t.data.size() % 8 == 0) return &t;
        }
        return nullptr;
      };
      const SafeTensor* ta = sa.ok() ? find(*sa) : nullptr;
      const SafeTensor* tb = sb.ok() ? find(*sb) : nullptr;
      if (ta == nullptr || tb == nullptr) {
        e["problem"] = "data/split.safetensors cannot be read on both sides";
      } else {
        std::vector<int64_t> va(ta->data.size() / 8), vb(tb->data.size() / 8);
        std::memcpy(va.data(), ta->data.data(), ta->data.size());
        std::memcpy(vb.data(), tb->data.data(), tb->data.size());
        int64_t differing = 0, first = -1;
        for (size_t i = 0; i < va.size() && i < vb.size(); ++i) {
          if (va[i] != vb[i]) {
            if (first < 0) first = static_cast<int64_t>(i);
            ++differing;
          }
        }
        std::vector<int64_t> sorted_a = va, sorted_b = vb, only_a, only_b;
        std::sort(sorted_a.begin(), sorted_a.end());
        std::sort(sorted_b.begin(), sorted_b.end());
        std::set_difference(sorted_a.begin(), sorted_a.end(), sorted_b.begin(), sorted_b.end(),
                            std::back_inserter(only_a));
        std::set_difference(sorted_b.begin(), sorted_b.end(), sorted_a.begin(), sorted_a.end(),
                            std::back_inserter(only_b));
        e["rows_a"] = va.size();
        e["rows_b"] = vb.size();
        e["differing_positions"] = differing;
        e["rows_only_in_a"] = only_a.size();
        e["rows_only_in_b"] = only_b.size();
        if (first >= 0) {
          e["first"] = {{"position", first},
                        {"row_a", va[static_cast<size_t>(first)]},
                        {"row_b", vb[static_cast<size_t>(first)]}};
        }
      }
    }
    split[which] = e;
  }
  j["split"] = split;
  j["same"] = files_same && j["record"]["same"].get<bool>();
  return j;
}

// ---- stages ------------------------------------------------------------------------------------

bool IsTextFile(const std::string& file) {
  for (const char* ext : {".dt", ".hlo", ".json", ".txt", ".cu", ".ptx"}) {
    const size_t n = std::strlen(ext);
    if (file.size() >= n && file.compare(file.size() - n, n, ext) == 0) return true;
  }
  return false;
}

// The stage records of a list (manifest "stages" or "executables.cuda") by name, in order.
std::vector<std::pair<std::string, json>> Records(const json& list) {
  std::vector<std::pair<std::string, json>> out;
  if (!list.is_array()) return out;
  for (const json& r : list) {
    const std::string name = Str(JsonAt(r, {"stage"}));
    if (!name.empty()) out.emplace_back(name, r);
  }
  return out;
}

// Where a stage's text first differs. The binary plan is compared through its text form
// (stages/04.plan.txt); other binary files by their first differing byte.
json StageTextDifference(const Side& a, const Side& b, const std::string& stage,
                         const std::string& file_a, const std::string& file_b) {
  const std::string dir = std::string(bundle::kStagesDir) + "/";
  std::string fa = file_a.empty() ? "" : dir + file_a, fb = file_b.empty() ? "" : dir + file_b;
  if (stage == driver::kStagePlan) fa = fb = dir + driver::kPlanTextFile;
  json j = {{"file_a", Printable(fa, kMaxValueText)}, {"file_b", Printable(fb, kMaxValueText)}};
  if (Inside(a.dir, fa).empty() || Inside(b.dir, fb).empty()) {
    j["problem"] = "the stage's file name is not a path inside the bundle";
    return j;
  }
  Result<std::string> ta = bundle::ReadBundleFile(a.dir, fa, kMaxText);
  Result<std::string> tb = bundle::ReadBundleFile(b.dir, fb, kMaxText);
  if (!ta.ok() || !tb.ok()) {
    j["problem"] = std::string("cannot read ") + (ta.ok() ? "B's " + fb : "A's " + fa);
    return j;
  }
  if (!IsTextFile(fa)) {
    size_t i = 0;
    while (i < ta->size() && i < tb->size() && (*ta)[i] == (*tb)[i]) ++i;
    j["first_byte"] = i;
    j["size_a"] = ta->size();
    j["size_b"] = tb->size();
    return j;
  }
  const LineDifference d = FirstLineDifference(*ta, *tb);
  if (d.same) {
    j["same_text"] = true;
    return j;
  }
  j["line"] = d.line;
  j["column"] = d.column;
  j["context"] = d.context;
  j["a"] = d.a_ended ? json() : json(d.line_a);
  j["b"] = d.b_ended ? json() : json(d.line_b);
  if (d.newline_only) j["newline_only"] = true;
  return j;
}

// The per-pass records of a pipeline stage: which pass first produced a difference.
json PassDifference(const json& ra, const json& rb) {
  const json& pa = JsonAt(ra, {"transform", "passes"});
  const json& pb = JsonAt(rb, {"transform", "passes"});
  if (!pa.is_array() || !pb.is_array()) return json();
  json j = {{"pipeline_a", Shown(JsonAt(ra, {"transform", "pipeline"}))},
            {"pipeline_b", Shown(JsonAt(rb, {"transform", "pipeline"}))},
            {"passes_a", pa.size()},
            {"passes_b", pb.size()}};
  for (size_t i = 0; i < pa.size() && i < pb.size(); ++i) {
    const json& x = pa[i];
    const json& y = pb[i];
    const bool same_pass = JsonAt(x, {"pass"}) == JsonAt(y, {"pass"});
    const bool same_options = JsonAt(x, {"options_sha256"}) == JsonAt(y, {"options_sha256"});
    const bool same_input = JsonAt(x, {"input_sha256"}) == JsonAt(y, {"input_sha256"});
    const bool same_output = JsonAt(x, {"output_sha256"}) == JsonAt(y, {"output_sha256"});
    if (same_pass && same_options && same_input && same_output) continue;
    j["index"] = i;
    j["pass_a"] = Shown(JsonAt(x, {"pass"}));
    j["pass_b"] = Shown(JsonAt(y, {"pass"}));
    std::string why;
    if (!same_pass) {
      why = "the pipelines differ here: pass " + std::to_string(i + 1) + " is " +
            JsonText(JsonAt(x, {"pass"})) + " in A and " + JsonText(JsonAt(y, {"pass"})) + " in B";
    } else if (!same_input) {
      why = i == 0 ? "the pipeline's input already differs (the stage before it), so every pass "
                     "sees a different module"
                   : "pass " + std::to_string(i + 1) + " has a different input";
    } else if (!same_options) {
      why = "pass " + std::to_string(i + 1) + " (" + JsonText(JsonAt(x, {"pass"})) +
            ") has different options and first produced a difference";
    } else {
      why = "pass " + std::to_string(i + 1) + " (" + JsonText(JsonAt(x, {"pass"})) +
            ") first produced a difference: the same input and options gave a different output "
            "(a different detrain build?)";
    }
    j["first_difference"] = Printable(why, 1024);
    j["produced_by_pass"] = same_pass && same_input;
    return j;
  }
  if (pa.size() != pb.size()) {
    j["first_difference"] = "the pipelines have " + std::to_string(pa.size()) + " and " +
                            std::to_string(pb.size()) + " passes; the common ones agree";
  }
  return j;
}

json StageList(const Side& a, const Side& b, const json& list_a, const json& list_b,
               bool find_first) {
  const auto ra = Records(list_a), rb = Records(list_b);
  std::vector<std::string> names;
  for (const auto& [n, r] : ra) names.push_back(n);
  for (const auto& [n, r] : rb) {
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  auto find = [](const std::vector<std::pair<std::string, json>>& rs, const std::string& n) {
    for (const auto& [name, r] : rs) {
      if (name == n) return r;
    }
    return json();
  };
  json records = json::array();
  json first;
  bool same = true;
  for (const std::string& n : names) {
    const json x = find(ra, n), y = find(rb, n);
    const bool both = !x.is_null() && !y.is_null();
    const bool eq = both && JsonAt(x, {"sha256"}) == JsonAt(y, {"sha256"});
    json e = {{"stage", Printable(n, kMaxValueText)},
              {"number", Shown(JsonAt(x.is_null() ? y : x, {"number"}))},
              {"sha256_a", Shown(JsonAt(x, {"sha256"}))},
              {"sha256_b", Shown(JsonAt(y, {"sha256"}))},
              {"same", eq}};
    if (!both) e["absent"] = x.is_null() ? "a" : "b";
    // A stage record is more than its digest: its transform (options, input) and passes. The
    // same digest from a different input is the same stage, reached another way.
    e["record_same"] = x == y;
    if (eq && x != y) {
      json fields = json::array();
      FieldDifferences(x, y, "", &fields);
      e["record_fields"] = fields;
    }
    same = same && x == y;
    const json& number = JsonAt(x.is_null() ? y : x, {"number"});
    const bool counted = !find_first || (number.is_number_integer() && number.get<int64_t>() >= 1);
    if (!eq && first.is_null() && counted && both) {
      first = {{"stage", Printable(n, kMaxValueText)}};
      first["text"] =
          StageTextDifference(a, b, n, Str(JsonAt(x, {"file"})), Str(JsonAt(y, {"file"})));
      const json passes = PassDifference(x, y);
      if (!passes.is_null()) first["passes"] = passes;
    }
    records.push_back(e);
  }
  // The pass pipeline that first produced a difference, wherever the first stage is.
  json passes = json::array();
  for (const std::string& n : names) {
    const json x = find(ra, n), y = find(rb, n);
    if (x.is_null() || y.is_null() || x == y) continue;
    json p = PassDifference(x, y);
    if (!p.is_null() && p.contains("first_difference")) {
      p["stage"] = Printable(n, kMaxValueText);
      passes.push_back(p);
    }
  }
  return {{"same", same}, {"records", records}, {"first", first}, {"passes", passes}};
}

}  // namespace detrain::diff::internal

namespace detrain::diff {

using namespace internal;  // NOLINT: the comparison's sections

Result<json> DiffBundles(const std::string& dir_a, const std::string& dir_b, const DiffOptions& o) {
  Side a, b;
  a.label = "A", b.label = "B";
  a.dir = dir_a, b.dir = dir_b;
  a.name = o.name_a.empty() ? dir_a : o.name_a;
  b.name = o.name_b.empty() ? dir_b : o.name_b;
  a.archive_sha256 = o.archive_sha256_a;
  b.archive_sha256 = o.archive_sha256_b;
  if (Status s = ReadSide(&a); !s.ok()) return s;
  if (Status s = ReadSide(&b); !s.ok()) return s;
  try {
    json r = {{"format", "detrain.diff"}, {"format_version", 1}};
    r["a"] = SideSummary(a);
    r["b"] = SideSummary(b);
    r["program"] = ProgramSection(a, b);
    if (o.progress) o.progress("diff: inputs");
    r["data"] = DataSection(a, b, o);
    r["config"] = FieldSection(JsonAt(a.manifest, {"config"}), JsonAt(b.manifest, {"config"}));
    r["seed"] = {{"a", Shown(JsonAt(a.manifest, {"config", "train", "seed"}))},
                 {"b", Shown(JsonAt(b.manifest, {"config", "train", "seed"}))}};
    // Run options that change no bit of the training are notes, not differences.
    json run_a = JsonAt(a.manifest, {"run"}), run_b = JsonAt(b.manifest, {"run"});
    json notes = json::array();
    for (const char* how : {"backend", "embed_data"}) {
      const json& x = JsonAt(run_a, {how});
      const json& y = JsonAt(run_b, {how});
      if (x != y)
        notes.push_back(std::string("run.") + how + ": " + JsonText(x) + " -> " + JsonText(y) +
                        " (changes no bit of the training)");
      if (run_a.is_object()) run_a.erase(how);
      if (run_b.is_object()) run_b.erase(how);
    }
    r["run"] = FieldSection(run_a, run_b);
    if (o.progress) o.progress("diff: stages");
    r["stages"] =
        StageList(a, b, JsonAt(a.manifest, {"stages"}), JsonAt(b.manifest, {"stages"}), true);
    const json& ea = JsonAt(a.manifest, {"executables", "cuda"});
    const json& eb = JsonAt(b.manifest, {"executables", "cuda"});
    if (!ea.is_null() || !eb.is_null()) {
      r["executables"] = StageList(a, b, ea, eb, false);
      if (ea.is_null() != eb.is_null()) {
        notes.push_back(std::string(ea.is_null() ? "A" : "B") +
                        " ran on the CPU: only the other bundle holds a CUDA executable");
      } else if (!r["executables"]["same"].get<bool>()) {
        notes.push_back("the CUDA executables differ (the CUDA source, PTX or cubins)");
      }
    }
    if (o.progress) o.progress("diff: training");
    r["training"] = TrainingSection(a, b, o);
    // The manifest's other claims (checkpoints, data summary, lineage, steps, final state,
    // status): compared whole, so that no field of either manifest goes unread.
    json ma = a.manifest, mb = b.manifest;
    for (json* m : {&ma, &mb}) {
      for (const char* k :
           {"files", "root_digest", "program", "config", "run", "stages", "executables"}) {
        m->erase(k);
      }
    }
    r["manifest"] = FieldSection(ma, mb);
    // How they ran, and with which detrain: recorded, not part of the claim.
    json env = FieldSection(a.environment, b.environment);
    r["environment"] = env;
    for (const json& f : env["fields"]) notes.push_back("environment.json: " + FieldLine(f));
    r["versions"] = {{"format_version",
                      {{"a", Shown(JsonAt(a.manifest, {"format_version"}))},
                       {"b", Shown(JsonAt(b.manifest, {"format_version"}))}}},
                     {"detrain",
                      {{"a", Shown(JsonAt(a.environment, {"detrain"}))},
                       {"b", Shown(JsonAt(b.environment, {"detrain"}))}}}};
    r["notes"] = notes;
    Finish(&r);
    return r;
  } catch (const std::exception& e) {  // a field of an unexpected type that slipped through
    return InvalidArgument(std::string("cannot compare the bundles: ") + e.what());
  }
}

}  // namespace detrain::diff
