// Every domain-separation prefix wit hashes with, in one place. H is never used
// untagged: each use below names what it hashes, so a digest from one context
// can never be replayed as a digest of another.
#pragma once
#include <cstdint>
#include <string_view>

namespace wit::tags {

// RFC 6962 section 2.1: leaf = H(0x00 || data), node = H(0x01 || left || right).
inline constexpr uint8_t kRfc6962LeafHashPrefix = 0x00;
inline constexpr uint8_t kRfc6962NodeHashPrefix = 0x01;
// A ranged data-tree node (commitment version 3): BLAKE2b-256 with this
// 16-byte personalisation over left || right || left_last || right_first
// (docs/proofs.md). It is BLAKE2b's parameter block, not a prefix: 16 bytes
// exactly, plus the terminating NUL of the literal.
inline constexpr char kRangedNodePersonal[17] = "wit/rangenode/v1";

// Digest of a source file: H(kSourceDigest || le64 size || le64 piece_size || MTH(pieces)).
inline constexpr std::string_view kSourceDigest = "wit/source-digest/v1";
// Digest of a reader specification, bound into the commitment id.
inline constexpr std::string_view kReaderSpec = "wit/reader-spec/v1";

}  // namespace wit::tags

namespace wit::tags {

// A state tensor's leaf: H(kTensorLeaf || name || dtype || shape || le64 nbytes || chunk root)
// (docs/state-root.md); v1 hashed the bytes whole.
inline constexpr std::string_view kTensorLeaf = "wit/tensor-leaf/v2";
// The state root: H(kStateRoot || parameters root || optimizer root).
inline constexpr std::string_view kStateRoot = "wit/state-root/v1";
// The run id: H(kManifest || canonical manifest JSON bytes).
inline constexpr std::string_view kManifest = "wit/manifest/v1";
// The commitment to the secret seed published in the manifest: H(kSeedCommit || seed).
inline constexpr std::string_view kSeedCommit = "wit/seed-commit/v1";
// ChaCha20 keys: data order per epoch, initial weights per tensor, probe choice.
inline constexpr std::string_view kDataOrder = "wit/data-order/v1";
inline constexpr std::string_view kInitWeights = "wit/init-weights/v1";
inline constexpr std::string_view kProbeChoice = "wit/probe-choice/v1";
// A TorchScript model file's digest in the manifest: H(kModelFile || file bytes).
inline constexpr std::string_view kModelFile = "wit/model-file/v1";
// Batch root: the RFC 6962 root over the batch's record leaves (no extra tag: it is a tree).
// What a trainer's Ed25519 key signs for a tree head.
inline constexpr std::string_view kTreeHead = "wit/tree-head/v1";
// The default public sketch seed of a run: H(kSketchSeed || data root).
inline constexpr std::string_view kSketchSeed = "wit/sketch-seed/v1";
// Challenge seed: H(kChallenge || head bytes || nonce).
inline constexpr std::string_view kChallenge = "wit/challenge/v1";
// A board-drawn challenge (docs/board.md): the board key signs
// kBoardDraw || run id || head signed bytes || le64 number; the challenge's
// nonce is H(kBoardNonce || that signature).
inline constexpr std::string_view kBoardDraw = "wit/board-draw/v1";
inline constexpr std::string_view kBoardNonce = "wit/board-nonce/v1";
// What the board key signs for a board report: kBoardReport || the report's canonical JSON without "signature".
inline constexpr std::string_view kBoardReport = "wit/board-report/v1";
// What the board key signs for its own evaluation of a run's released weights: kBoardEval || canonical JSON.
inline constexpr std::string_view kBoardEval = "wit/board-eval/v1";
// What the board key signs for its audit of a run's training tree (sorted leaves): kBoardLeaves || canonical JSON.
inline constexpr std::string_view kBoardLeaves = "wit/board-leaves/v1";
// A sealed benchmark record's leaf (docs/board.md, "The sealed split"):
// H(kBoardSealedLeaf || salt (32 bytes) || record). The salt is secret until
// the reveal, so nobody can test a guessed record against the commitment.
inline constexpr std::string_view kBoardSealedLeaf = "wit/board-sealed-leaf/v1";
// The gap test's permutation seed: H(kBoardGap || public scores root || sealed scores root).
inline constexpr std::string_view kBoardGap = "wit/board-gap/v1";
// The id of a public split enlarged by revealed epochs (docs/board.md, "Epochs:
// reveal and seal"): H(kBoardPublicSplit || benchmark root || le64 n || per
// revealed epoch in order: le64 epoch || sealed root || le64 n).
inline constexpr std::string_view kBoardPublicSplit = "wit/board-public-split/v1";
// What the board key signs for its definition (board.def.json): kBoardDefinition || canonical JSON.
inline constexpr std::string_view kBoardDefinition = "wit/board-definition/v1";
// Certified evaluation (docs/eval.md). A score leaf is an RFC 6962 leaf:
// H(0x00 || le64 len || kEvalScoreLeaf || record leaf || le64 loss bits || le64 accuracy bits).
inline constexpr std::string_view kEvalScoreLeaf = "wit/eval-score-leaf/v1";
// The eval commitment's id: H(kEvalCommitment || canonical eval.json bytes).
inline constexpr std::string_view kEvalCommitment = "wit/eval-commitment/v1";
// Eval spot-check seed: H(kEvalCheck || eval id || le64 len || nonce).
inline constexpr std::string_view kEvalCheck = "wit/eval-check/v1";
// Causal evaluation: the ChaCha20 key of one record's cut points and
// replacement tokens, derive_key(kEvalCausal, {nonce, record leaf}).
inline constexpr std::string_view kEvalCausal = "wit/eval-causal/v1";
// A fresh-probe check of a released model (docs/release.md): the ChaCha20 key
// of its drawn records and random inputs, derive_key(kProbeCheck, {run id, nonce}).
inline constexpr std::string_view kProbeCheck = "wit/probe-check/v1";
// The dropout generator's seed of one training forward (docs/training.md):
// derive_key(kDropout, {seed, le64 step, le64 first row}).
inline constexpr std::string_view kDropout = "wit/dropout/v1";
// A fully sharded run's shard plan, compared across ranks at start-up
// (docs/distributed.md): H(kShardPlan || the plan's JSON).
inline constexpr std::string_view kShardPlan = "wit/shard-plan/v1";

}  // namespace wit::tags
