// `detrain keygen -o NAME`: an ECDSA P-256 key pair for signing bundles (evidence/sign/keys.h).
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "evidence/sign/keys.h"

namespace detrain::cli {
namespace {

int RunKeygen(const std::string& name) {
  Result<sign::PrivateKey> key = sign::PrivateKey::Generate();
  if (!key.ok()) return ReportError("keygen", key.status());
  Status s = sign::WriteKeyPair(*key, name);
  if (!s.ok()) return ReportError("keygen", s);
  std::cout << "private key: " << name << ".key (mode 0600; keep it secret, never in a bundle)\n"
            << "public key:  " << name << ".pub\n"
            << "key id:      " << key->public_key().id() << "\n"
            << "in-toto keyid: " << key->public_key().sslib_keyid() << "\n";
  return kExitOk;
}

}  // namespace

void RegisterKeygenCommand(CLI::App& app, int* exit_code) {
  auto name = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "keygen", "Make an ECDSA P-256 key pair for signing bundles and verification summaries");
  cmd->add_option("-o,--output", *name, "NAME: writes NAME.key (private) and NAME.pub (public)")
      ->required();
  cmd->footer(
      "NAME.key is PEM PKCS#8, unencrypted, mode 0600: use it with run --attest --sign-key and\n"
      "verify --sign-key. NAME.pub is PEM SubjectPublicKeyInfo: give it to whoever checks your\n"
      "bundles (verify --trusted-key; model_signing verify key --public_key). An existing file\n"
      "is never replaced. The key id is the SHA-256 of NAME.pub's PEM text (model signing's\n"
      "key hint); the in-toto keyid, which DSSE envelopes carry, is securesystemslib's.");
  cmd->callback([name, exit_code] { *exit_code = RunKeygen(*name); });
}

}  // namespace detrain::cli
