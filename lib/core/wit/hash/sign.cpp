// Ed25519 keys, key files and detached signatures over libsodium's crypto_sign.
// Key file format: docs/keys.md.
#include "wit/hash/sign.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/base/io.h"

namespace wit {

using nlohmann::json;

namespace {

constexpr const char* kKeyFormat = "wit.key";
constexpr int kKeyVersion = 1;
constexpr const char* kKeyType = "ed25519";

static_assert(crypto_sign_PUBLICKEYBYTES == 32, "ed25519 public key size");
static_assert(crypto_sign_SECRETKEYBYTES == 64, "ed25519 secret key size");
static_assert(crypto_sign_BYTES == 64, "ed25519 signature size");

// An AtomicFile whose temporary is mode 0600 from the start (mkstemp), so the
// secret is never readable by others, not even between write and rename.
void write_secret_file(const std::string& path, const std::string& content) {
  AtomicFile f(path, false, 0600);
  f.write(content);
  f.commit();
}

// The parsed and checked fields of a key file; `has_secret` is false for a .pub file.
struct KeyFile {
  PublicKey pub;
  SecretKey secret;
  bool has_secret = false;
};

KeyFile parse_key_file(const std::string& path) {
  const std::string text = read_file(path);
  const std::string where = path == "-" ? "stdin" : path;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error("invalid key file: not a json object", where);
  if (!j.contains("format") || !j["format"].is_string() || j["format"].get<std::string>() != kKeyFormat)
    throw Error("not a wit key file (format is not \"wit.key\")", where);
  if (!j.contains("version") || !j["version"].is_number_integer())
    throw Error("invalid key file: missing version", where);
  if (j["version"].get<int64_t>() != kKeyVersion)
    throw Error("unsupported key file version " + std::to_string(j["version"].get<int64_t>()), where,
                "this wit reads version 1");
  if (!j.contains("type") || !j["type"].is_string())
    throw Error("invalid key file: missing type", where);
  if (j["type"].get<std::string>() != kKeyType)
    throw Error("unsupported key type '" + j["type"].get<std::string>() + "'", where, "wit keys are ed25519");
  KeyFile k;
  if (!j.contains("public") || !j["public"].is_string() || !PublicKey::from_hex(j["public"].get<std::string>(), k.pub))
    throw Error("invalid key file: 'public' is not 64 hex digits", where);
  if (!j.contains("secret")) return k;
  Bytes sec;
  if (!j["secret"].is_string() || j["secret"].get<std::string>().size() != 128 ||
      !from_hex(j["secret"].get<std::string>(), sec))
    throw Error("invalid key file: 'secret' is not 128 hex digits", where);
  std::copy(sec.begin(), sec.end(), k.secret.b.begin());
  sodium_memzero(sec.data(), sec.size());
  // The secret's own seed must regenerate both halves: a file whose public key
  // was edited, or whose secret was damaged, would otherwise sign heads that
  // verify against nothing.
  init_crypto();
  std::array<uint8_t, 32> pk{};
  std::array<uint8_t, 64> sk{};
  crypto_sign_seed_keypair(pk.data(), sk.data(), k.secret.b.data());
  const bool match = sk == k.secret.b && pk == k.pub.b;
  sodium_memzero(sk.data(), sk.size());
  if (!match) throw Error("public key does not match the secret key", where);
  k.has_secret = true;
  return k;
}

}  // namespace

std::string PublicKey::hex() const { return to_hex(ByteView(b.data(), b.size())); }

bool PublicKey::from_hex(const std::string& s, PublicKey& out) {
  if (s.size() != 64) return false;
  Bytes tmp;
  if (!wit::from_hex(s, tmp)) return false;
  std::copy(tmp.begin(), tmp.end(), out.b.begin());
  return true;
}

PublicKey SecretKey::pub() const {
  PublicKey p;
  std::copy(b.begin() + 32, b.end(), p.b.begin());
  return p;
}

SecretKey generate_key() {
  init_crypto();
  SecretKey k;
  std::array<uint8_t, 32> pk{};
  crypto_sign_keypair(pk.data(), k.b.data());
  return k;
}

void save_key(const std::string& path, const SecretKey& k) {
  if (path.empty() || path == "-") throw Error("a secret key must be written to a file, not stdout", "-");
  const PublicKey pub = k.pub();
  json sec = {{"format", kKeyFormat}, {"version", kKeyVersion}, {"type", kKeyType}, {"public", pub.hex()},
              {"secret", to_hex(ByteView(k.b.data(), k.b.size()))}};
  json pj = {{"format", kKeyFormat}, {"version", kKeyVersion}, {"type", kKeyType}, {"public", pub.hex()}};
  write_secret_file(path, sec.dump(2) + "\n");
  write_file_atomic(path + ".pub", pj.dump(2) + "\n");
}

SecretKey load_key(const std::string& path) {
  KeyFile k = parse_key_file(path);
  if (!k.has_secret)
    throw Error("not a secret key (this is a public key file)", path == "-" ? "stdin" : path,
                "sign with the key file that keygen wrote, not its .pub");
  return k.secret;
}

PublicKey load_public_key(const std::string& path) { return parse_key_file(path).pub; }

std::array<uint8_t, 64> sign(const SecretKey& k, ByteView msg) {
  init_crypto();
  std::array<uint8_t, 64> sig{};
  crypto_sign_detached(sig.data(), nullptr, msg.data, msg.size, k.b.data());
  return sig;
}

bool verify_signature(const PublicKey& pk, ByteView msg, const std::array<uint8_t, 64>& sig) {
  init_crypto();
  return crypto_sign_verify_detached(sig.data(), msg.data, msg.size, pk.b.data()) == 0;
}

}  // namespace wit
