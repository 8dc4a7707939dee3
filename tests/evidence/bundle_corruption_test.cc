// The corruption suite (STYLE.md 9): every FIELD of every structured file of an audit bundle,
// flipped, retyped, truncated, reordered, duplicated and swapped with the same field of another
// valid bundle (the same program with another seed, and with fewer steps). Cases are generated
// from the files themselves, so a new field is covered without a new test. File-level flips,
// truncations and deletions are bundle_tamper_test.cc's.
//
// Every case is played by the careful attacker of bundle_tamper_fixture.h (the manifest's file
// list and root digest fixed, the step log re-chained where that makes the edit consistent): the
// integrity digests then pass, and a field-level check, recompile or replay must reject the
// bundle with a message that names the file and the field. Each case is verified with integrity
// only first, then without replay, then in full, and the table says which phase caught it.
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bundle_corruption_cases.h"
#include "bundle_tamper_fixture.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/verify/verifier.h"

namespace detrain::tamper_test {
namespace {

struct Case {
  std::string format;    // the file (or the kind of file)
  std::string mutation;  // flip, type, truncate, reorder, duplicate, swap-in
  std::string label;     // what was done, for failures
  std::string rel;       // the file changed
  // Writes the mutation into a copy of the bundle (with the attacker's fixes); false when it
  // changes nothing there (the case is then not counted).
  std::function<bool(const std::string& dir)> apply;
  // Every group must have one of its strings in the message: the file, then the field.
  std::vector<std::vector<std::string>> want;
  bool accepted_by_design = false;  // environment.json's values: recorded, not claimed
};

struct Tally {
  int cases = 0, caught = 0, integrity = 0, recompile = 0, replay = 0, accepted = 0;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// 1-based line of the first byte where two texts differ.
size_t FirstDiffLine(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return 1 + static_cast<size_t>(std::count(a.begin(), a.begin() + static_cast<long>(i), '\n'));
}

class BundleCorruptionTest : public BundleTamperTest {
 protected:
  static void SetUpTestSuite() {
    BundleTamperTest::SetUpTestSuite();
    if (pristine_.empty()) return;
    // The same program with another seed, and the same program run for 16 steps.
    const std::string prog = root_ + "/seed-program";
    fs::create_directories(prog);
    std::string text = Slurp(kProgram);
    const size_t at = text.find("seed = 3");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 8, "seed = 4");
    Spit(prog + "/train.dt", text);
    fs::copy_file(fs::path(kProgram).parent_path() / "tiny.csv", prog + "/tiny.csv");
    for (int k = 0; k < 2; ++k) {
      bundle::RunOptions o;
      o.program = k == 0 ? prog + "/train.dt" : kProgram;
      o.output_dir = root_ + (k == 0 ? "/seed4" : "/steps16");
      o.embed_data = true;
      if (k == 1) o.steps = 16;
      Result<bundle::RunSummary> r = bundle::RunAttested(o);
      ASSERT_TRUE(r.ok()) << r.status().message();
      others_.push_back(o.output_dir);
    }
  }

  static VerifyReport VerifyAt(const std::string& dir, int level) {
    verify::VerifyOptions o;
    o.bundle = dir;
    o.recompile = level >= 1;
    o.replay = level >= 2;
    o.integrity_threads = 1;
    return verify::VerifyBundle(o);
  }

  // The bytes of `rel` in the other bundles (those that have it and differ).
  std::vector<std::string> OtherVersions(const std::string& rel) const {
    std::vector<std::string> out;
    const std::string mine = Slurp(pristine_ + "/" + rel);
    for (const std::string& o : others_) {
      if (!fs::exists(o + "/" + rel)) continue;
      std::string s = Slurp(o + "/" + rel);
      if (s != mine) out.push_back(s);
    }
    return out;
  }

  // Value, type, truncation and swap mutations of every leaf of `doc`, and reorder, duplicate
  // and drop-a-key mutations of every object. `write(dir, text)` stores a mutated document as
  // the attacker would; `want_file`: the groups of names the message must give for the file
  // (and the line).
  void JsonCases(const std::string& format, const std::string& rel, const json& doc,
                 const std::vector<json>& others,
                 const std::function<void(const std::string&, const std::string&)>& write,
                 const std::vector<std::vector<std::string>>& want_file, bool values_accepted,
                 const std::function<std::vector<std::string>(const Ptr&)>& extra_names = {}) {
    std::vector<Ptr> leaves, arrays, objects;
    Walk(doc, Ptr(), &leaves, &arrays, &objects);
    auto names = [&](const Ptr& p) {
      std::vector<std::string> n = {Dotted(doc, p), "\"" + LastKey(doc, p) + "\""};
      if (LastKey(doc, p).empty()) n = {"\""};
      // In an array of records (files[], stages[]), the check may name another element.
      for (Ptr q = p; !q.empty(); q = q.parent_pointer()) {
        if (!q.parent_pointer().empty() && doc[q.parent_pointer()].is_array()) {
          n.push_back(Dotted(doc, q.parent_pointer()) + "[");
          n.push_back("\"" + Dotted(doc, q.parent_pointer()) + "\"");
          break;
        }
      }
      if (extra_names) {
        for (const std::string& e : extra_names(p)) n.push_back(e);
      }
      return n;
    };
    auto value_case = [&](const std::string& mutation, const std::string& label, const Ptr& p,
                          const json& v) {
      json m = doc;
      m[p] = v;
      const std::string text = Dump(m, Ptr(), Ptr("/-"), ObjEdit::kNone);
      cases_.push_back({format, mutation, rel + " " + label + " at " + p.to_string(), rel,
                        [=](const std::string& d) {
                          write(d, text);
                          return true;
                        },
                        Want(want_file, names(p)), values_accepted});
    };
    for (const Ptr& p : leaves) {
      const json& v = doc[p];
      value_case("flip", "flip", p, Flip(v));
      for (const auto& [label, t] : TypeChanges(v)) value_case("type", label, p, t);
      if (std::optional<json> t = Truncated(v)) value_case("truncate", "truncate", p, *t);
      for (const json& o : others) {
        if (o.contains(p) && o[p] != v) value_case("swap-in", "swap-in", p, o[p]);
      }
    }
    for (const Ptr& p : arrays) {
      if (std::optional<json> t = Truncated(doc[p])) value_case("truncate", "drop last", p, *t);
    }
    for (const Ptr& p : objects) {
      const json& o = doc[p];
      if (o.empty()) continue;
      const std::string first = o.begin().key();
      auto text_case = [&](const std::string& mutation, ObjEdit e, std::vector<std::string> n,
                           bool accepted) {
        const std::string text = Dump(doc, Ptr(), p, e);
        cases_.push_back({format, mutation, rel + " " + mutation + " in " + p.to_string(), rel,
                          [=](const std::string& d) {
                            write(d, text);
                            return true;
                          },
                          Want(want_file, n), accepted});
      };
      std::vector<std::string> keys;
      for (auto it = o.begin(); it != o.end(); ++it) keys.push_back("\"" + it.key() + "\"");
      if (o.size() >= 2) text_case("reorder", ObjEdit::kReverse, keys, false);
      text_case("duplicate", ObjEdit::kDuplicateSame, {"\"" + first + "\""}, false);
      text_case("duplicate", ObjEdit::kDuplicateOther, {"\"" + first + "\""}, false);
      json m = doc;
      m[p].erase(first);
      const std::string dropped = Dump(m, Ptr(), Ptr("/-"), ObjEdit::kNone);
      cases_.push_back({format, "truncate", rel + " drop key " + first + " of " + p.to_string(),
                        rel,
                        [=](const std::string& d) {
                          write(d, dropped);
                          return true;
                        },
                        Want(want_file, names(p / first)), values_accepted});
    }
  }

  static std::vector<std::vector<std::string>> Want(std::vector<std::vector<std::string>> groups,
                                                    std::vector<std::string> field) {
    groups.push_back(std::move(field));
    return groups;
  }

  // steps.jsonl or lineage.jsonl: every field of the lines `picks` (0-based; one line of each
  // record kind), and each of those lines duplicated, swapped with the next, dropped, cut at a
  // field boundary, the file cut after it, and the line of another bundle swapped in.
  void JsonlCases(const std::string& rel, const std::vector<size_t>& picks) {
    const std::vector<std::string> lines = Lines(Slurp(pristine_ + "/" + rel));
    std::vector<std::vector<std::string>> other_lines;
    for (const std::string& o : OtherVersions(rel)) other_lines.push_back(Lines(o));
    const bool steps = rel == bundle::kSteps;
    for (size_t n : picks) {
      ASSERT_LT(n, lines.size());
      const json doc = *attest::ParseJson(lines[n]);
      std::vector<json> others;
      for (const auto& ol : other_lines) {
        if (n < ol.size() && ol[n] != lines[n]) others.push_back(*attest::ParseJson(ol[n]));
      }
      const std::string line = std::to_string(n + 1);
      std::vector<std::vector<std::string>> where;
      std::vector<std::string> chain;  // what names a record whose edit breaks a recomputation
      if (steps) {
        where = {{"steps.jsonl line " + line, "step " + std::to_string(n - 1) + ":",
                  n == 0 ? "steps.jsonl header" : "steps.jsonl line " + line}};
        chain = {"its hash does not chain"};
      } else {
        std::vector<std::string> at = {"line " + line + ":", "line " + line + " "};
        if (doc.contains("id")) at.push_back("node " + doc["id"].dump() + " ");
        where = {{"lineage.jsonl"}, at};
        chain = {"recomputed key"};
      }
      auto write_line = [rel, lines, n](const std::string& d, const std::string& text) {
        std::vector<std::string> l = lines;
        l[n] = text;
        Spit(d + "/" + rel, Join(l));
        FixManifest(d);
      };
      JsonCases(rel, rel, doc, others, write_line, where, false, [&](const Ptr& p) {
        std::vector<std::string> n2 = chain;
        n2.push_back(TopKey(p) + ":");
        return n2;
      });
      // Whole records.
      auto record_case = [&](const std::string& mutation, const std::string& label,
                             std::vector<std::string> l, bool newline = true) {
        std::string text = Join(l);
        if (!newline && !text.empty()) text.pop_back();
        std::vector<std::string> names = {"line " + line,  "line " + std::to_string(n + 2),
                                          "records",       "holds",
                                          "is incomplete", "recomputed key"};
        cases_.push_back({rel,
                          mutation,
                          rel + " line " + line + " " + label,
                          rel,
                          [=](const std::string& d) {
                            Spit(d + "/" + rel, text);
                            FixManifest(d);
                            return true;
                          },
                          {{rel}, names}});
      };
      std::vector<std::string> l = lines;
      l.insert(l.begin() + static_cast<long>(n), lines[n]);
      record_case("duplicate", "repeated", l);
      if (n + 1 < lines.size()) {
        l = lines;
        std::swap(l[n], l[n + 1]);
        record_case("reorder", "swapped with the next", l);
      }
      l = lines;
      l.erase(l.begin() + static_cast<long>(n));
      record_case("truncate", "dropped", l);
      l.assign(lines.begin(), lines.begin() + static_cast<long>(n) + 1);
      record_case("truncate", "file cut after it", l);
      l = lines;
      l[n] = lines[n].substr(0, lines[n].find(',', lines[n].size() / 2));
      record_case("truncate", "cut at a field boundary", l);
      l.resize(n + 1);
      record_case("truncate", "cut at a field boundary, file ends", l, false);
      for (const auto& ol : other_lines) {
        if (n < ol.size() && ol[n] != lines[n]) {
          l = lines;
          l[n] = ol[n];
          record_case("swap-in", "from another bundle", l);
        }
      }
    }
  }

  // The careful attacker on steps.jsonl: the field edits of record `t` that still parse, with the
  // chain recomputed, the checkpoints' step hashes and the manifest fixed: replay must name them.
  void RechainCases(size_t t) {
    const std::vector<std::string> lines = Lines(Slurp(pristine_ + "/" + bundle::kSteps));
    const json doc = *attest::ParseJson(lines[t + 1]);
    std::vector<json> others;
    for (const std::string& o : OtherVersions(bundle::kSteps)) {
      std::vector<std::string> ol = Lines(o);
      if (t + 1 < ol.size()) others.push_back(*attest::ParseJson(ol[t + 1]));
    }
    std::vector<Ptr> leaves, arrays, objects;
    Walk(doc, Ptr(), &leaves, &arrays, &objects);
    for (const Ptr& p : leaves) {
      std::vector<std::pair<std::string, json>> values = {{"flip", Flip(doc[p])}};
      if (std::optional<json> v = Truncated(doc[p])) values.emplace_back("truncate", *v);
      for (const json& o : others) {
        if (o.contains(p) && o[p] != doc[p]) values.emplace_back("swap-in", o[p]);
      }
      const std::string top = TopKey(p);
      for (const auto& [mutation, v] : values) {
        json m = doc;
        m[p] = v;
        Result<bundle::StepRecord> rec = bundle::ParseStepRecord(m, attest::DigestPolicy::kXxh3);
        if (!rec.ok()) continue;  // the integrity cases cover it
        const bundle::StepRecord r = *rec;
        cases_.push_back({"steps.jsonl (re-chained)",
                          mutation,
                          "steps.jsonl step " + std::to_string(t) + " " + mutation + " at " +
                              p.to_string() + ", re-chained",
                          bundle::kSteps,
                          [=](const std::string& d) {
                            Rechain(d, [&](std::vector<bundle::StepRecord>& recs) { recs[t] = r; });
                            return true;
                          },
                          {{"steps.jsonl line " + std::to_string(t + 2),
                            "step " + std::to_string(t) + "'s record"},
                           {"\"" + top, top + " ", top + ":", "\"" + LastKey(doc, p)}}});
      }
    }
  }

  // A safetensors file's header: every field of every tensor entry and of __metadata__.
  void SafetensorsCases(const std::string& rel) {
    const std::string bytes = Slurp(pristine_ + "/" + rel);
    auto header_of = [](const std::string& b) {
      uint64_t n = 0;
      for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(b[static_cast<size_t>(i)]);
      return std::make_pair(*attest::ParseJson(b.substr(8, n)), b.substr(8 + n));
    };
    const std::pair<json, std::string> parts = header_of(bytes);
    const json& doc = parts.first;
    const std::string data = parts.second;
    std::vector<json> others;
    for (const std::string& o : OtherVersions(rel)) others.push_back(header_of(o).first);
    const bool final_weights = rel == bundle::kFinalWeights;
    auto write = [rel, data, final_weights](const std::string& d, const std::string& header) {
      // The final weights are not in files[] (they name the root digest): fix first, then edit.
      if (final_weights) FixManifest(d);
      std::string h = header;
      while (h.size() % 8 != 0) h += ' ';
      std::string out(8, '\0');
      for (int i = 0; i < 8; ++i)
        out[static_cast<size_t>(i)] = static_cast<char>(h.size() >> (8 * i));
      Spit(d + "/" + rel, out + h + data);
      if (!final_weights) FixManifest(d);
    };
    JsonCases(rel + " header", rel, doc, others, write, {{rel}}, false, [&](const Ptr& p) {
      std::vector<std::string> n = {LastKey(doc, p)};
      if (!p.empty()) n.push_back(TopKey(p));
      return n;
    });
  }

  // A text file: a character of the first, middle and last line changed; the middle line
  // dropped, repeated and swapped with the next; the file cut after it; another bundle's copy.
  void TextCases(const std::string& format, const std::string& rel) {
    const std::string text = Slurp(pristine_ + "/" + rel);
    const std::vector<std::string> lines = Lines(text);
    const size_t mid = lines.size() / 2;
    const bool csv = rel.rfind("data/files/", 0) == 0;
    auto add = [&](const std::string& mutation, const std::string& label, const std::string& to) {
      const std::string line = std::to_string(FirstDiffLine(text, to));
      // The data record holds the file's digest only: no row can be named.
      std::vector<std::string> field =
          csv ? std::vector<std::string>{"SHA-256"}
              : std::vector<std::string>{"line " + line + ":", ":" + line + ":"};
      cases_.push_back({format,
                        mutation,
                        rel + " " + label,
                        rel,
                        [=](const std::string& d) {
                          Spit(d + "/" + rel, to);
                          FixManifest(d);
                          return true;
                        },
                        {{rel}, field}});
    };
    for (size_t l : {size_t{0}, mid, lines.size() - 1}) {
      std::vector<std::string> m = lines;
      m[l] = Flip(json(m[l])).get<std::string>();
      add("flip", "line " + std::to_string(l + 1) + " changed", Join(m));
    }
    std::vector<std::string> m = lines;
    m.erase(m.begin() + static_cast<long>(mid));
    add("truncate", "middle line dropped", Join(m));
    m.assign(lines.begin(), lines.begin() + static_cast<long>(mid));
    add("truncate", "cut after the middle line", Join(m));
    m = lines;
    m.insert(m.begin() + static_cast<long>(mid), lines[mid]);
    add("duplicate", "middle line repeated", Join(m));
    m = lines;
    std::swap(m[mid], m[mid + 1]);
    add("reorder", "middle line swapped with the next", Join(m));
    for (const std::string& o : OtherVersions(rel)) add("swap-in", "another bundle's", o);
  }

  // A binary stage: bytes changed, dropped, repeated; the file cut; another bundle's copy.
  void BinaryCases(const std::string& rel) {
    const std::string bytes = Slurp(pristine_ + "/" + rel);
    auto add = [&](const std::string& mutation, const std::string& label, const std::string& to) {
      size_t i = 0;
      while (i < bytes.size() && i < to.size() && bytes[i] == to[i]) ++i;
      cases_.push_back({"stages/*.pb",
                        mutation,
                        rel + " " + label,
                        rel,
                        [=](const std::string& d) {
                          Spit(d + "/" + rel, to);
                          FixManifest(d);
                          return true;
                        },
                        {{rel}, {"at offset " + std::to_string(i) + " "}}});
    };
    for (size_t at : {size_t{0}, bytes.size() / 2, bytes.size() - 1}) {
      std::string b = bytes;
      b[at] = static_cast<char>(b[at] ^ 0x01);
      add("flip", "byte " + std::to_string(at), b);
    }
    add("truncate", "cut in half", bytes.substr(0, bytes.size() / 2));
    add("truncate", "a byte dropped",
        bytes.substr(0, bytes.size() / 2) + bytes.substr(bytes.size() / 2 + 1));
    add("duplicate", "16 bytes repeated",
        bytes.substr(0, bytes.size() / 2) + bytes.substr(bytes.size() / 2, 16) +
            bytes.substr(bytes.size() / 2));
    for (const std::string& o : OtherVersions(rel)) add("swap-in", "another bundle's", o);
  }

  // Plays every case (two at a time: VerifyBundle may run on different bundles at once) and
  // prints the table: per file and mutation, the cases, those caught with a message that names
  // the file and the field, the phase that caught them, and those accepted by design.
  void Run() {
    std::map<std::pair<std::string, std::string>, Tally> table;
    std::vector<std::string> failures;
    std::mutex mu;
    std::atomic<size_t> next{0};
    auto worker = [&](int id) {
      for (size_t i = next++; i < cases_.size(); i = next++) {
#ifdef DETRAIN_CORRUPTION_STRIDE
        // Sanitizer builds (about 20 times slower) play every DETRAIN_CORRUPTION_STRIDE-th case.
        if (i % DETRAIN_CORRUPTION_STRIDE != 0) continue;
#endif
        const Case& c = cases_[i];
        const std::string d = root_ + "/case." + std::to_string(id) + "." + std::to_string(i);
        fs::copy(pristine_, d, fs::copy_options::recursive);
        if (!c.apply(d) || Slurp(d + "/" + c.rel) == Slurp(pristine_ + "/" + c.rel)) {
          fs::remove_all(d);
          continue;
        }
        VerifyReport r;
        int level = 0;
        for (; level < 3; ++level) {
          if (c.accepted_by_design && level == 2) break;  // replay does not read environment.json
          r = VerifyAt(d, level);
          if (r.outcome != Outcome::kVerified) break;
        }
        fs::remove_all(d);
        std::string failure;
        if (r.outcome == Outcome::kVerified) {
          if (!c.accepted_by_design) failure = c.label + ": VERIFIED";
        } else {
          std::string missing;
          for (const std::vector<std::string>& group : c.want) {
            bool any = false;
            for (const std::string& s : group) any = any || r.message.find(s) != std::string::npos;
            if (!any) missing += " [" + (group.empty() ? std::string() : group[0]) + "]";
          }
          if (!missing.empty()) {
            failure = c.label + ": message lacks" + missing + ": " + r.message.substr(0, 300);
          }
        }
        std::lock_guard<std::mutex> lock(mu);
        Tally& t = table[{c.format, c.mutation}];
        ++t.cases;
        if (!failure.empty()) {
          failures.push_back(failure);
        } else if (r.outcome == Outcome::kVerified) {
          ++t.accepted;
        } else {
          ++t.caught;
          (level == 0 ? t.integrity : level == 1 ? t.recompile : t.replay)++;
        }
      }
    };
    std::thread helper(worker, 1);
    worker(0);
    helper.join();
    std::printf("\n%-24s %-10s %6s %6s %10s %10s %7s %9s\n", "format", "mutation", "cases",
                "caught", "integrity", "recompile", "replay", "accepted");
    Tally total;
    for (const auto& [key, t] : table) {
      std::printf("%-24s %-10s %6d %6d %10d %10d %7d %9d\n", key.first.c_str(), key.second.c_str(),
                  t.cases, t.caught, t.integrity, t.recompile, t.replay, t.accepted);
      total.cases += t.cases;
      total.caught += t.caught;
      total.accepted += t.accepted;
    }
    std::printf("%-24s %-10s %6d %6d %39d\n", "total", "", total.cases, total.caught,
                total.accepted);
    for (const std::string& f : failures) std::printf("FAILURE %s\n", f.c_str());
    for (size_t i = 0; i < failures.size() && i < 40; ++i) {
      ADD_FAILURE() << failures[i];
    }
    EXPECT_EQ(failures.size(), 0u);
    EXPECT_EQ(total.caught + total.accepted, total.cases);
  }

  // Writes `text` (one canonical line) into `rel` and fixes the manifest.
  static std::function<void(const std::string&, const std::string&)> LineWriter(
      const std::string& rel) {
    return [rel](const std::string& d, const std::string& text) {
      Spit(d + "/" + rel, text + "\n");
      FixManifest(d);
    };
  }

  static inline std::vector<std::string> others_;
  std::vector<Case> cases_;
};

TEST_F(BundleCorruptionTest, JsonFiles) {
  ASSERT_EQ(others_.size(), 2u);
  // manifest.json: the careful attacker recomputes the root digest of the edited manifest.
  const json manifest = *attest::ParseJson(Slurp(pristine_ + "/manifest.json"));
  std::vector<json> other_manifests;
  for (const std::string& o : others_) {
    other_manifests.push_back(*attest::ParseJson(Slurp(o + "/manifest.json")));
  }
  auto files_entry = [&](const Ptr& p) -> std::vector<std::string> {
    // A files[] entry's file is named by the checks that use the entry.
    std::string s = p.to_string();
    if (s.rfind("/files/", 0) != 0) return {};
    const size_t i = std::stoul(s.substr(7));
    return {manifest["files"][i]["path"].get<std::string>()};
  };
  JsonCases(
      "manifest.json", "manifest.json", manifest, other_manifests,
      [](const std::string& d, const std::string& text) {
        Result<json> edited = attest::ParseJson(text);
        if (edited.ok() && edited->is_object() && Canonical(*edited) == text + "\n") {
          // A value edit: re-signed, and the final weights' bundle_root with it.
          FixManifest(d, [&](json& m) { m = *edited; });
        } else {
          // A text edit of the same values (or none the parser accepts): the root digest
          // is still the manifest's own.
          FixManifest(d);
          Spit(d + "/manifest.json", text + "\n");
        }
      },
      {{"manifest.json"}}, false, files_entry);
  for (const char* rel :
       {"run.json", "data/data.json", "stages/02.init.json", "environment.json"}) {
    const json doc = *attest::ParseJson(Slurp(pristine_ + "/" + rel));
    std::vector<json> others;
    for (const std::string& s : OtherVersions(rel)) others.push_back(*attest::ParseJson(s));
    const bool env = std::string(rel) == bundle::kEnvironment;
    JsonCases(rel, rel, doc, others, LineWriter(rel), {{rel}}, env);
  }
  Run();
}

TEST_F(BundleCorruptionTest, JsonLines) {
  ASSERT_EQ(others_.size(), 2u);
  // steps.jsonl: the header, a plain record, a record with roots and eval, the last record.
  JsonlCases(bundle::kSteps, {0, 1, 6, 8, 24});
  // lineage.jsonl: the header, the seed node, a fold_in node, a use, a split node (a run in
  // partitionable mode has none), the last line.
  const std::vector<std::string> lines = Lines(Slurp(pristine_ + "/" + bundle::kLineage));
  std::vector<size_t> picks = {0, 1, 2, 3};
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("\"op\":\"split\"") != std::string::npos) {
      picks.push_back(i);
      break;
    }
  }
  picks.push_back(lines.size() - 1);
  JsonlCases(bundle::kLineage, picks);
  Run();
}

TEST_F(BundleCorruptionTest, ReChainedStepRecords) {
  // A plain record in the first segment, the record before a checkpoint, the last record.
  for (size_t t : {5, 7, 23}) RechainCases(t);
  Run();
}

TEST_F(BundleCorruptionTest, SafetensorsHeaders) {
  for (const std::string& rel :
       {bundle::CheckpointPath(8), bundle::CheckpointPath(16), std::string(bundle::kFinalWeights),
        std::string(bundle::kSplitFile)}) {
    SafetensorsCases(rel);
  }
  Run();
}

TEST_F(BundleCorruptionTest, ProgramAndStageFiles) {
  for (const std::string& rel : Files()) {
    if (rel == "program/train.dt") TextCases("program/*.dt", rel);
    if (rel.rfind("data/files/", 0) == 0) TextCases("data/files/*.csv", rel);
    if (rel.rfind("stages/", 0) != 0) continue;
    if (rel.size() > 3 && rel.substr(rel.size() - 3) == ".pb") {
      BinaryCases(rel);
    } else if (rel.size() < 5 || rel.substr(rel.size() - 5) != ".json") {
      TextCases(rel.find("/passes/") != std::string::npos ? "stages/passes/*" : "stages/*", rel);
    }
  }
  Run();
}

}  // namespace
}  // namespace detrain::tamper_test
