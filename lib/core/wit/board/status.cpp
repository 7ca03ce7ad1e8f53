// The status policy of docs/board.md ("Status rules"): certified, flagged,
// pending or rejected; the gap test's flag, duplicate names, and the rank order.
#include "wit/board/board.h"

#include <algorithm>
#include <map>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <set>
#include <sstream>

#include "wit/board/gap.h"
#include "wit/base/cli_base.h"
#include "wit/run/challenge.h"
#include "wit/base/check.h"
#include "wit/base/json_fields.h"
#include "wit/run/report.h"
#include "wit/data/commitment.h"
#include "wit/proofs/contamination.h"
#include "wit/base/error.h"
#include "wit/eval/eval.h"
#include "wit/run/fingerprint_doc.h"
#include "wit/hash/hash.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/run/manifest.h"
#include "wit/hash/merkle.h"
#include "wit/run/model_spec.h"
#include "wit/proofs/proofs.h"
#include "wit/eval/release.h"
#include "wit/run/runlog.h"
#include "wit/run/sketch.h"
#include "wit/run/state_root.h"

namespace wit {

using nlohmann::json;

void assign_status(RunEntry& e, const BoardDefinition* board) {
  int64_t board_drawn = 0, board_waiting = 0;
  for (const auto& s : e.challenges)
    if (s.drawn_by == "board") {
      board_drawn++;
      if (s.verdict == BoardStatus::kPending) board_waiting++;
    }
  e.status = BoardStatus::kPending;
  if (!board) {
    e.reason = "not on a defined board (its reports are claims; a board verifies responses and signs its own)";
  } else if (board_drawn == 0) {
    e.reason = "no board challenge drawn yet";
  } else if (e.confidence < board->policy.confidence) {
    e.reason = "confidence " + percent(e.confidence) + " is below the board's " + percent(board->policy.confidence) +
               (board_waiting > 0 ? "; waiting for the response to " + cli::count_of(board_waiting, "board challenge")
                                  : "; the board draws more challenges");
  } else if (e.eval_by != "board") {
    e.reason = "the board has not scored the released weights on its benchmark yet (wit-board evaluate)";
  } else if (!e.leaves_audited && !e.tree_ranged) {
    e.reason = "the training tree is not audited yet: the contamination certificate means absence only in a sorted tree "
               "(wit-board leaves)";
  } else if (auto p = contamination_problem(*board, e.clean.has_value())) {
    e.reason = *p;
  } else if (!e.overlap.empty()) {
    e.flagged = true;
    e.reason = "overlap flagged by the board: " + e.overlap;
  } else {
    e.status = BoardStatus::kCertified;
    e.reason.clear();
  }
}

Problem contamination_problem(const BoardDefinition& board, bool has_certificate) {
  if (has_certificate || board.sealed || !board.revealed.empty()) return std::nullopt;
  return Problem("board " + board.name +
                 " has no sealed split: it ranks on its published benchmark, so a run needs a contamination certificate "
                 "of it (contamination.json)");
}

void apply_gap_test(std::vector<RunEntry>& entries, const BoardDefinition& def) {
  size_t m = 0;
  for (const auto& e : entries) m += e.sealed_known && e.status != BoardStatus::kRejected ? 1 : 0;
  for (auto& e : entries) {
    if (!e.sealed_known || e.status == BoardStatus::kRejected) continue;
    e.gap_runs = m;
    e.gap_adjusted = bonferroni(e.gap_p, m);
    if (e.gap_adjusted >= def.policy.gap_threshold) continue;
    e.flagged = true;
    if (e.status == BoardStatus::kCertified) {
      e.status = BoardStatus::kPending;
      char buf[200];
      std::snprintf(buf, sizeof buf, "gap test p = %.3g, %.3g after Bonferroni over %zu runs, below the policy's %g",
                    e.gap_p, e.gap_adjusted, m, def.policy.gap_threshold);
      e.reason = std::string("does better on the published records than on sealed ones (") + buf + ")";
    }
  }
}

bool ranks_before(const RunEntry& a, const RunEntry& b) {
  auto rank = [](const RunEntry& e) { return e.status == BoardStatus::kCertified ? 0 : e.status == BoardStatus::kPending ? 1 : 2; };
  if (rank(a) != rank(b)) return rank(a) < rank(b);
  if (rank(a) != 0) return false;
  // Each epoch's ranking stays whole: the newest epoch's sealed scores first, then the older ones'
  // (scores on different sealed sets are not compared).
  if (a.sealed_known && b.sealed_known && a.sealed_epoch != b.sealed_epoch) return a.sealed_epoch > b.sealed_epoch;
  if (a.sealed_known != b.sealed_known) return a.sealed_known;
  // What a board ranks on: the sealed score where there is one.
  const double la = a.sealed_known ? a.sealed_loss : a.eval_loss, lb = b.sealed_known ? b.sealed_loss : b.eval_loss;
  return la < lb;
}

std::vector<RunEntry> order_board(std::vector<RunEntry> entries) {
  // Of two bundles with one name, an intact one keeps the name: a damaged copy
  // (rejected before its checks got anywhere) cannot knock it off the board.
  std::stable_sort(entries.begin(), entries.end(), [](const RunEntry& a, const RunEntry& b) {
    if (a.name != b.name) return a.name < b.name;
    const bool ra = a.status == BoardStatus::kRejected, rb = b.status == BoardStatus::kRejected;
    if (ra != rb) return rb;
    return a.source < b.source;
  });
  std::set<std::string> taken;
  for (const auto& e : entries) taken.insert(e.name);
  std::set<std::string> seen;
  for (auto& e : entries) {
    if (seen.insert(e.name).second) continue;
    const std::string orig = e.name;
    std::string page;
    for (int i = 2;; i++) {
      std::string suffix = "-" + std::to_string(i);
      page = orig.substr(0, 64 - suffix.size()) + suffix;
      if (!taken.count(page)) break;
    }
    taken.insert(page);
    seen.insert(page);
    e.name = page;
    e.status = BoardStatus::kRejected;
    e.reason = "another bundle on the board has the name " + orig;
  }
  return entries;
}

}  // namespace wit
