// See parser_internal.h: the debug tables of HLO text (FileNames, FunctionNames, FileLocations,
// StackFrames), kept in the module for messages and never hashed (module.h DebugTables).
#include <map>
#include <string>
#include <string_view>

#include "compiler/ir/parser_internal.h"

namespace detrain::ir::parser_internal {

// The debug tables of HLO text printed with debug information (module.h DebugTables):
//   FileNames      ID "path"
//   FunctionNames  ID "name"
//   FileLocations  ID {file_name_id=N function_name_id=N line=N end_line=N column=N ...}
//   StackFrames    ID {file_location_id=N parent_frame_id=N}
// A table is its name alone on a line followed by an entry (so a computation that happens to
// be named FileNames still parses as one). Every reference must resolve.
Status ParseDebugTables(Cursor& cur, DebugTables& t) {
  static constexpr std::string_view kTables[] = {"FileNames", "FunctionNames", "FileLocations",
                                                 "StackFrames"};
  std::map<int64_t, SourceLoc> location_at, frame_at;
  for (;;) {
    int table = -1;
    for (int i = 0; i < 4 && table < 0; ++i) {
      Cursor probe = cur;  // look ahead: the name, then (past comments) an entry's id
      if (!probe.TryConsumeKeyword(kTables[i])) continue;
      const char next = probe.Peek();
      if (next >= '0' && next <= '9') table = i;
    }
    if (table < 0) break;
    cur.TryConsumeKeyword(kTables[table]);
    while (cur.Peek() >= '0' && cur.Peek() <= '9') {
      const SourceLoc at = cur.Loc();
      DETRAIN_ASSIGN_OR_RETURN(
          int64_t id, cur.ReadInt(std::string("a ") + std::string(kTables[table]) + " id"));
      if (id <= 0) return Cursor::ErrorAt(at, "a debug table id must be positive");
      auto duplicate = [&] {
        return Cursor::ErrorAt(
            at, "duplicate id " + std::to_string(id) + " in " + std::string(kTables[table]));
      };
      if (table <= 1) {
        DETRAIN_ASSIGN_OR_RETURN(std::string text, cur.ReadString());
        auto& names = table == 0 ? t.file_names : t.function_names;
        if (!names.emplace(id, std::move(text)).second) return duplicate();
        continue;
      }
      std::map<std::string, int64_t> fields;
      DETRAIN_RETURN_IF_ERROR(cur.Expect("{", "to open a debug table entry"));
      while (!cur.TryConsume("}")) {
        if (cur.AtEnd()) return cur.Error("unterminated debug table entry");
        const SourceLoc key_at = (cur.SkipSpace(), cur.Loc());
        std::string key = cur.ReadWord();
        if (key.empty()) return cur.Error("expected a field name, found " + cur.Found());
        DETRAIN_RETURN_IF_ERROR(cur.Expect("=", "after field " + Quoted(key)));
        DETRAIN_ASSIGN_OR_RETURN(int64_t v, cur.ReadInt("field " + Quoted(key)));
        if (!fields.emplace(key, v).second) {
          return Cursor::ErrorAt(key_at, "field " + Quoted(key) + " given twice");
        }
        cur.TryConsume(",");
      }
      auto field = [&](const char* name) {
        auto it = fields.find(name);
        return it == fields.end() ? int64_t{0} : it->second;
      };
      if (table == 2) {
        DebugTables::Location l{field("file_name_id"), field("function_name_id"),
                                field("line"),         field("end_line"),
                                field("column"),       field("end_column")};
        if (!t.file_locations.emplace(id, l).second) return duplicate();
        location_at[id] = at;
      } else {
        if (!t.stack_frames
                 .emplace(id,
                          DebugTables::Frame{field("file_location_id"), field("parent_frame_id")})
                 .second) {
          return duplicate();
        }
        frame_at[id] = at;
      }
    }
  }
  for (const auto& [id, l] : t.file_locations) {
    if (!t.file_names.count(l.file_name_id)) {
      return Cursor::ErrorAt(location_at[id], "FileLocations " + std::to_string(id) +
                                                  ": no FileNames entry " +
                                                  std::to_string(l.file_name_id));
    }
    if (l.function_name_id != 0 && !t.function_names.count(l.function_name_id)) {
      return Cursor::ErrorAt(location_at[id], "FileLocations " + std::to_string(id) +
                                                  ": no FunctionNames entry " +
                                                  std::to_string(l.function_name_id));
    }
  }
  for (const auto& [id, f] : t.stack_frames) {
    if (!t.file_locations.count(f.file_location_id)) {
      return Cursor::ErrorAt(frame_at[id], "StackFrames " + std::to_string(id) +
                                               ": no FileLocations entry " +
                                               std::to_string(f.file_location_id));
    }
    // XLA writes a frame without a parent as its own parent (or 0).
    if (f.parent_frame_id != 0 && !t.stack_frames.count(f.parent_frame_id)) {
      return Cursor::ErrorAt(frame_at[id], "StackFrames " + std::to_string(id) +
                                               ": no parent frame " +
                                               std::to_string(f.parent_frame_id));
    }
  }
  return Status::Ok();
}

}  // namespace detrain::ir::parser_internal
