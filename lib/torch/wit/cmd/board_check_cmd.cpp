// The subcommands of wit-board-check (board_check_cmd.h): what main used to decide.
#include "wit/cmd/board_check_cmd.h"

#include <cstdio>
#include <iostream>

#include "wit/board/recheck.h"
#include "wit/board/def.h"
#include "wit/cmd/cli.h"
#include "wit/base/error.h"
#include "wit/cmd/replay_cmd.h"
#include "wit/hash/sign.h"

namespace wit {

namespace {

// The device checked; the options every replay runs with.
VerifyOptions verify_options(const BoardCheckArgs& a) {
  check_replay_device(a.device);
  VerifyOptions vo;
  vo.threads = a.threads;
  vo.device = a.device;
  vo.quiet = a.quiet;
  return vo;
}

}  // namespace

int board_check_add_cmd(const std::string& bundle_path, const std::string& response_path, const std::string& key_path,
                        const BoardCheckArgs& a, char** argv) {
  const VerifyOptions vo = verify_options(a);
  // Decoded once: the kernels pinned with it (exact replay runs under the run's recorded kernels), then verified.
  const std::optional<OpenedResponse> response = open_response(response_path);
  pin_response_kernels(response, argv);
  const SecretKey key = load_key(key_path);
  const BoardAddResult r =
      board_add(bundle_path, response_path, key, vo, a.sealed, a.store, response ? &*response : nullptr);
  std::cout << bundle_path << "/" << r.member << "\n";
  if (!a.quiet)
    cli::note(std::string("the board replayed the response: ") +
              (r.report.certified() ? "certified" : "rejected: " + r.report.reason) + "; stored as " + r.stored +
              "; its signed report: " + r.member);
  if (r.overlap.is_object() && r.report.certified())
    cli::note("flagged (the board's overlap policy is flag): " + overlap_reason(r.overlap));
  return r.report.certified() ? cli::kOk : cli::kNegative;
}

int board_check_evaluate_cmd(const std::string& bundle_path, const std::string& weights_path,
                             const std::string& model_path, const std::string& key_path, const BoardCheckArgs& a,
                             char** argv) {
  check_replay_device(a.device);
  // Scored under the kernels audit re-scores with (the board's stored responses' recorded ones), so the
  // board's scores reproduce bit for bit.
  if (const std::string dir = board_of_bundle(bundle_path); !dir.empty()) pin_board_kernels(dir, argv, a.store);
  const SecretKey key = load_key(key_path);
  const BoardEvalResult r = board_evaluate(bundle_path, weights_path, model_path, key, a.threads, a.device, a.sealed, a.store);
  if (!r.why_not.empty()) {
    std::cerr << "wit-board: refused: " << r.why_not << "\n";
    return cli::kNegative;
  }
  std::cout << bundle_path << "/" << r.member << "\n";
  if (!r.refused.empty()) {
    std::cerr << "wit-board: the board refused the released model: " << r.refused << "\n";
    return cli::kNegative;
  }
  if (!a.quiet) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "the board scored the released weights on its benchmark: loss %.4f, accuracy %.2f%% over %llu records",
                  r.eval.loss, 100 * r.eval.accuracy, static_cast<unsigned long long>(r.eval.n));
    std::string sealed;
    if (r.sealed) {
      char sb[240];
      std::snprintf(sb, sizeof sb,
                    "; on its sealed split (what it ranks on): loss %.4f, accuracy %.2f%% over %llu records; gap test p = %.3g "
                    "(%llu permutations)",
                    r.sealed->loss, 100 * r.sealed->accuracy, static_cast<unsigned long long>(r.sealed->n), r.gap->p,
                    static_cast<unsigned long long>(r.gap->permutations));
      sealed = sb;
    }
    cli::note(std::string(buf) + sealed + "; stored as " + r.stored);
  }
  return cli::kOk;
}

int board_check_audit_cmd(const std::string& dir, const BoardCheckArgs& a, char** argv) {
  const VerifyOptions vo = verify_options(a);
  // The definition read once: the kernels pinned from its store's responses, then the audit, which
  // reuses the stored response the pin decoded (hashed as it was decoded: checked against its report's digest).
  const std::optional<BoardDefinition> def = board_definition_if_any(dir);
  std::optional<DecodedResponse> pinned = pin_board_kernels(dir, def, argv, a.store);
  const AuditResult r = audit_board(dir, vo, a.sealed, a.store, def ? &*def : nullptr, &pinned);
  for (const auto& f : r.failures) std::cout << "does not reproduce: " << f << "\n";
  for (const auto& f : r.unverifiable) std::cout << "not re-verifiable: " << f << "\n";
  for (const auto& f : r.unexpected)
    cli::note("unexpected file in the board folder or its store (it counts for nothing; remove it, or restore the "
              "folder from its history): " + f);
  if (!a.quiet)
    cli::note(std::to_string(r.checked) + " board documents checked, " + std::to_string(r.failures.size()) +
              " do not reproduce, " + std::to_string(r.unverifiable.size()) + " not re-verifiable from the store" +
              (r.sealed_unverified ? "; " + std::to_string(r.sealed_unverified) +
                                         " sealed scores not re-scored (their epoch is not revealed yet; the board's "
                                         "holder re-scores them with --sealed)"
                                   : std::string()));
  return r.failures.empty() && r.unverifiable.empty() ? cli::kOk : cli::kNegative;
}

}  // namespace wit
