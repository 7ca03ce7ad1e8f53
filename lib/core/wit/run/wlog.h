// The witness log (run.wlog): an append-only file of framed binary entries
// whose leaf hashes form an RFC 6962 Merkle log, and the signed tree heads
// (run.heads) over it. Formats: docs/witness-log.md.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/check.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/base/bytes.h"
#include "wit/hash/merkle.h"
#include "wit/hash/sign.h"

namespace wit {

// ---- entries ---------------------------------------------------------------

inline constexpr char kEntryMagic[4] = {'W', 'I', 'T', 'E'};
// Version 2: every step entry holds the exact state root (version 1 had a
// checkpoint root every C steps and nothing binding the states in between).
inline constexpr uint16_t kEntryVersion = 2;
// Largest float vector an entry may hold (decode rejects bigger counts before allocating).
inline constexpr uint32_t kMaxEntryFloats = uint32_t(1) << 24;

// Entry 0: binds the log to the manifest (run id) and to the initial state.
struct GenesisEntry {
  Hash32 run_id;     // H(kManifest || manifest bytes)
  Hash32 init_root;  // state root of the initial state (params + zeroed optimizer state, step 0)
  uint64_t n_params = 0;
};

// Entry s (s >= 1), written after training step s.
struct StepEntry {
  uint64_t step = 0;
  float lr = 0, mean_loss = 0, grad_norm = 0;
  Hash32 batch_root;              // RFC 6962 root over the batch's record leaves, in batch order
  std::vector<float> losses;      // per-example losses of W(s-1) on batch s
  std::vector<float> sketch;      // weight sketch of W(s), k floats
  std::vector<float> sketch_m;    // sketch of AdamW's first moment after step s
  std::vector<float> sketch_v;    // sketch of AdamW's second moment after step s
  std::optional<std::vector<float>> probe;  // probe fingerprint of W(s), m floats, every M steps
  Hash32 state_root;                        // state root of the full state after step s (state_root.h)
  bool checkpoint = false;                  // a checkpoint file of that state was written (every C steps)
};

struct LogEntry {
  bool genesis = false;
  GenesisEntry g;
  StepEntry s;
};

// Whether `e` may stand at position `index` of the log of run `run_id`: entry
// 0 is that run's genesis, entry i > 0 is the entry of step i. nullopt, or
// what is wrong: "entry 0 is not a genesis entry", "entry 0 is the genesis of
// run X, not of run Y", "entry I is a second genesis entry", "entry I is the
// entry of step S, not of step I". The one owner of this rule: every reader
// of a log, a bundle's entries or a proof's entry asks it.
Problem entry_problem(const LogEntry& e, uint64_t index, const Hash32& run_id);

// Binary encoding (little-endian): magic "WITE", u16 version, u16 kind (0
// genesis, 1 step), then the kind's fields; floats are IEEE-754 binary32 and
// float vectors are a u32 count followed by the values.
Bytes encode_entry(const LogEntry& e);
// Throws wit::Error("...", where + " at byte N") on wrong magic, unknown
// version or kind, truncation, trailing bytes, or impossible counts.
LogEntry decode_entry(ByteView b, const std::string& where);
// The entry's leaf in the log tree: H(0x00 || encoded entry).
Hash32 entry_leaf(ByteView encoded);

// What the proof of one log entry shows: the entry, or why not.
struct ProvedEntry {
  Problem no;            // why not, or nothing
  bool decoded = false;  // the bytes are proved and decode (a "no" then is entry_problem's: out of place)
  LogEntry entry;        // when decoded
};
// The one verification of a log entry's proof, in this order and with these
// words: the entry's leaf (entry_leaf of `encoded`) is at `index` of the tree
// of `size` leaves with root `root` ("log entry I is not in the signed log:
// " and the proof error); the bytes decode strictly (the decoder's message,
// naming `where`); the entry is in its place in run `run_id`
// (entry_problem). Bytes that do not decode are a "no", not an error: they
// are the evidence. wit-log check-proof uses it; the replay verifier's log/
// members and the board's run.wlog are to switch to it (issue 39 item 4).
ProvedEntry verify_entry_proof(ByteView encoded, uint64_t index, uint64_t size, const Hash32& root,
                               const std::vector<Hash32>& path, const Hash32& run_id, const std::string& where);

// ---- the log file ----------------------------------------------------------

// Frames: u32 payload length, u32 low bits of XXH3-64(payload), payload.
// A frame cut short at the end of the file (a torn write) is recoverable by
// truncation; a bad frame before the end is corruption.
struct LogFrames {
  std::vector<ByteView> payloads;  // into the scanned bytes
  std::vector<uint64_t> offsets;   // of each frame
  uint64_t end = 0;                // just past the last whole frame
  bool torn = false;               // bytes after `end` are a torn tail
};
// The one reader of the frame format, for a file (WitnessLog::open) and for
// bytes in memory (a run bundle's run.wlog). A torn tail is reported, not
// thrown: the caller decides (cut it, or refuse). A frame with an impossible
// length or a bad checksum before the end throws wit::Error ("witness log is
// corrupt (...): WHERE at byte N").
LogFrames scan_log_frames(ByteView data, const std::string& where);
// "witness log ends in a torn frame (B bytes): WHERE at byte N", for a caller that refuses torn tails.
Error torn_log_error(const LogFrames& f, uint64_t size, const std::string& where);

// What opening a log does with a torn last frame, and with a missing file.
// kLeave reads the complete frames before a torn tail and changes nothing
// (a check before any write; such a log must not be appended to).
enum class TornTail { kRefuse, kCut, kLeave };
enum class IfMissing { kFail, kCreate };

// The log in memory is its tree, not its entries: each entry's leaf, its
// frame's offset and the tree's inner levels (about 72 bytes per entry); an
// entry's bytes are read from the file when asked for.
class WitnessLog {
 public:
  // Scans the whole log, checking every frame (through a bounded buffer, so
  // any size of log opens in little memory). With TornTail::kCut a torn tail
  // is cut off the file (a writer resuming after a crash; `torn_bytes()` says
  // how much); with kRefuse it is an error. A missing file is an error unless
  // IfMissing::kCreate.
  static WitnessLog open(const std::string& path, TornTail torn, IfMissing missing = IfMissing::kFail);

  uint64_t size() const { return leaves_.size(); }
  const std::vector<Hash32>& leaves() const { return leaves_; }
  // Entry i's bytes, read from the file (pread) and checked against the
  // frame the scan saw: a file changed since then throws wit::Error
  // ("witness log changed on disk since it was opened"), as does i >= size().
  Bytes entry_bytes(uint64_t i) const;
  LogEntry entry(uint64_t i) const;
  uint64_t torn_bytes() const { return torn_; }

  // Root of the first `size` entries.
  Hash32 root(uint64_t size) const;
  std::vector<Hash32> inclusion_proof(uint64_t index, uint64_t size) const;
  std::vector<Hash32> consistency_proof(uint64_t old_size, uint64_t new_size) const;

  // Appends one framed entry (buffered by the OS; call sync() to make it durable).
  void append(const Bytes& encoded);
  void sync();
  // Drops entries from `n` on, on disk too (used when resuming from a checkpoint).
  void truncate(uint64_t n);

 private:
  std::string path_;
  std::shared_ptr<const Fd> fd_;  // the file, open for reading
  std::vector<Hash32> leaves_;
  std::vector<uint64_t> offsets_;  // file offset of each frame
  uint64_t torn_ = 0;
  uint64_t end_ = 0;  // file offset just past the last good frame
  // levels_[j-1][i] is the root of leaves [i*2^j, (i+1)*2^j): every aligned
  // perfect subtree, kept as entries arrive, so any root or proof over any
  // prefix costs O(log^2 n) hashes.
  std::vector<std::vector<Hash32>> levels_;
  void push(const Hash32& leaf, uint64_t offset);
  Hash32 range_hash(Range r) const;
};

// ---- signed tree heads -----------------------------------------------------

struct TreeHead {
  Hash32 run_id;
  uint64_t size = 0;
  Hash32 root;
  uint64_t time = 0;  // seconds since the epoch; informational, signed
  PublicKey key;
  std::array<uint8_t, 64> sig{};

  // len-prefixed kTreeHead tag || run_id || le64 size || root || le64 time.
  Bytes signed_bytes() const;
  bool signature_ok() const;
  // One JSON object: {"run_id","size","root","time","key","sig"} (hex).
  nlohmann::json to_json() const;
  static TreeHead from_json(const nlohmann::json& j, const std::string& where);  // throws wit::Error
  // The same head, field for field (a head "is one of the run's heads" only so).
  bool operator==(const TreeHead& o) const {
    return run_id == o.run_id && size == o.size && root == o.root && time == o.time && key == o.key && sig == o.sig;
  }
  bool operator!=(const TreeHead& o) const { return !(*this == o); }
};

// The one rule for "a signed head of this run": it names the run `run_id`, is
// signed by `key` (either unset: not pinned) and its signature verifies,
// checked in that order. nullopt when it is; else the reason, with `subject`
// as its subject: "<subject> names another run", "<subject> is signed by
// another key than the run's trainer key", "<subject> has a bad signature".
Problem head_problem(const TreeHead& h, const std::optional<Hash32>& run_id,
                                        const std::optional<PublicKey>& key, const std::string& subject = "the head");

TreeHead sign_head(const SecretKey& k, const Hash32& run_id, uint64_t size, const Hash32& root, uint64_t time);

// run.heads: one JSON head per line, appended and fsync'd. Refuses to append
// after a torn last line (call cut_torn_heads first).
void append_head(const std::string& path, const TreeHead& h);
// What reading heads does with a torn last line (no newline): an error, or
// skip it and leave the file as it is (a reader beside a live writer).
enum class TornLine { kRefuse, kIgnore };
// Reads all heads; a torn last line is handled as `torn` says (`torn_bytes`,
// when given, says how long it was). Any other bad line is an error naming PATH:LINE.
std::vector<TreeHead> read_heads(const std::string& path, TornLine torn = TornLine::kRefuse, uint64_t* torn_bytes = nullptr);
// Cuts a torn last line off the heads file (a writer resuming after a crash);
// returns the number of bytes cut. A missing file is left missing.
uint64_t cut_torn_heads(const std::string& path);

}  // namespace wit
