// The subcommands of wit-board, one function each: wit-board's main parses
// the flags and calls one of these, which decide everything a user sees
// (which lock is taken first, what a member is named, the lines printed on
// stdout, the notes on stderr unless `quiet`) and return the exit status.
// Errors throw wit::Error (exit 2). Rules: docs/board.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wit/board/board.h"
#include "wit/board/def.h"

namespace wit {

// init: define a board (DIR/board.def.json); prints its path.
int board_init_cmd(const BoardInit& in, bool quiet);

// reveal: publish the current epoch's sealed set (DIR/benchmark/sealed/epoch-E.json); prints its path.
int board_reveal_cmd(const std::string& dir, const std::string& key_path, const std::string& sealed_path, bool quiet);
// seal: seal the next epoch's set (kept at `sealed_path`, outside DIR); prints board.def.json's path.
int board_seal_cmd(const std::string& dir, const std::string& key_path, const std::string& sealed_path,
                   const std::vector<std::string>& files, bool quiet);

// submit: put a whole run bundle on a board as DIR/runs/NAME, checked against
// the board's definition; prints the new folder.
int board_submit_cmd(const std::string& board_dir, const std::string& bundle, bool quiet);

// leaves: the board's audit of a run's sorted training leaves; prints the
// stored member; exit 1 when the tree fails the audit.
int board_leaves_cmd(const std::string& bundle, const std::string& leaves, const std::string& key_path,
                     unsigned threads, bool quiet, const std::string& store = "");

// pack: a new run bundle at `out` (a directory, or a .wbundle file).
// `released` (--released FILE): also export the released weights from the
// run's final checkpoint to FILE and pack their binding (export_released).
int board_pack_cmd(const PackInput& in, const std::string& out, const std::string& released, bool quiet);

// Names on stderr every file in board folder `dir` it does not expect (unexpected_board_files).
void note_unexpected_files(const std::string& dir, const BoardDefinition& def);
// prune: drop the stored bytes of runs named or older than `before` (YYYY-MM-DD, UTC); prints the store paths.
int board_prune_cmd(const std::string& dir, const std::string& store, const std::vector<std::string>& runs,
                    const std::string& before, bool quiet);

// build: judge a board folder (or bundles and folders of bundles) and write the site.
int board_build_cmd(const std::vector<std::string>& paths, const std::string& site, double fraction, bool quiet);

// challenge: a board draw (key_path) or a caller's challenge (nonce) against
// a bundle's newest signed head, stored in the bundle, also written to `out`.
struct BoardChallengeArgs {
  std::string bundle, nonce, key_path, out;
  std::optional<int64_t> k;
  std::optional<double> confidence, fraction;
};
int board_challenge_cmd(const BoardChallengeArgs& a, bool quiet);

// repair: rebuild a bundle's index from its members, noting each change.
int board_repair_cmd(const std::string& bundle, const std::string& name, bool quiet);

// show: the verdict on one bundle (exit 1 if rejected), judged against
// `board_dir` (default: the board it sits on).
int board_show_cmd(const std::string& bundle, std::string board_dir, double fraction, bool json);

}  // namespace wit
