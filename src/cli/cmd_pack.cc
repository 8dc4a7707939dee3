// `detrain pack BUNDLE -o FILE.tar` and `detrain unpack FILE.tar -o DIR`: a bundle as one
// deterministic archive for long-term storage (evidence/bundle/archive.h).
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "evidence/bundle/archive.h"

namespace detrain::cli {
namespace {

struct PackFlags {
  std::string input, output;
};

int RunPack(const PackFlags& f) {
  Result<bundle::PackResult> r = bundle::PackBundle(f.input, f.output);
  if (!r.ok()) return ReportError("pack", r.status());
  std::cout << "archive: " << f.output << "\n"
            << "files: " << r->files << "\n"
            << "bytes: " << r->bytes << "\n"
            << "sha256: " << r->sha256 << "\n";
  return kExitOk;
}

int RunUnpack(const PackFlags& f) {
  Result<uint64_t> files = bundle::UnpackBundle(f.input, f.output);
  if (!files.ok()) return ReportError("unpack", files.status());
  std::cout << "bundle: " << f.output << " (" << *files << " files)\n";
  return kExitOk;
}

}  // namespace

void RegisterPackCommands(CLI::App& app, int* exit_code) {
  auto pack = std::make_shared<PackFlags>();
  CLI::App* p = app.add_subcommand(
      "pack", "Write a finished bundle as one deterministic tar archive, for archival");
  p->add_option("BUNDLE", pack->input, "The bundle directory")->required();
  p->add_option("-o,--output", pack->output, "The archive to write (FILE.tar)")->required();
  p->footer(
      "The same bundle always gives the same bytes (POSIX ustar; files sorted by path, mode\n"
      "0644, owner 0, mtime 0; no directory entries); the archive's SHA-256 is printed.\n"
      "verify and inspect read the archive directly; unpack restores it.");
  p->callback([pack, exit_code] { *exit_code = RunPack(*pack); });

  auto unpack = std::make_shared<PackFlags>();
  CLI::App* u = app.add_subcommand("unpack", "Restore a bundle from an archive made by pack");
  u->add_option("ARCHIVE", unpack->input, "The archive (FILE.tar)")->required();
  u->add_option("-o,--output", unpack->output, "The directory to create (must not exist)")
      ->required();
  u->footer(
      "Refuses, naming the entry, anything but regular files and directories (links, devices,\n"
      "FIFOs), absolute paths, '..' and '.' components, duplicates, and truncated or corrupt\n"
      "headers; nothing is left behind when it refuses.");
  u->callback([unpack, exit_code] { *exit_code = RunUnpack(*unpack); });
}

}  // namespace detrain::cli
