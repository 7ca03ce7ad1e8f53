// Ed25519 keys and signatures (libsodium crypto_sign) for signed tree heads.
// Key files: docs/keys.md.
#pragma once
#include <array>
#include <string>

#include "wit/base/bytes.h"

namespace wit {

struct PublicKey {
  std::array<uint8_t, 32> b{};
  std::string hex() const;
  static bool from_hex(const std::string& s, PublicKey& out);
  bool operator==(const PublicKey& o) const { return b == o.b; }
  bool operator!=(const PublicKey& o) const { return b != o.b; }
};

struct SecretKey {
  std::array<uint8_t, 64> b{};  // libsodium layout: seed || public key
  PublicKey pub() const;
};

SecretKey generate_key();
// Key file: JSON {"format":"wit.key","version":1,"type":"ed25519","public":hex,"secret":hex},
// written atomically with mode 0600; the public half alone goes to PATH.pub.
void save_key(const std::string& path, const SecretKey& k);
SecretKey load_key(const std::string& path);           // throws wit::Error
PublicKey load_public_key(const std::string& path);    // a .pub file or a secret key file

std::array<uint8_t, 64> sign(const SecretKey& k, ByteView msg);
bool verify_signature(const PublicKey& pk, ByteView msg, const std::array<uint8_t, 64>& sig);

}  // namespace wit
