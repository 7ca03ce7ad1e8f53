// The leaderboard's static site: index.html (sortable table), one page per
// run with a loss curve and replay distance-vs-threshold plots as inline SVG,
// and board.json. No network, no timestamps: the same bundles give the same bytes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

#include "wit/board/board.h"
#include "wit/run/challenge.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/data/readers.h"
#include "wit/eval/release.h"

namespace wit {

std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default:
        // Control characters other than tab and newline would only confuse a reader.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') o += "&#xfffd;";
        else o += c;
    }
  }
  return o;
}

namespace {

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return number_text(v);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

const char* kCss = R"CSS(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#1d1d1f;background:#fff}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.6em}
p.lede{color:#555;margin-top:0}
table{border-collapse:collapse;width:100%;margin:.6em 0}
th,td{padding:.35em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
th{background:#f4f4f6;cursor:pointer;user-select:none;white-space:nowrap}
th[aria-sort=ascending]::after{content:" \25B2"}th[aria-sort=descending]::after{content:" \25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.status{display:inline-block;padding:.1em .5em;border-radius:.8em;font-weight:600;font-size:.9em}
.certified{background:#d9f2df;color:#11602a}.rejected{background:#fbdada;color:#8a1212}.pending{background:#fff1c7;color:#6b5100}
.reason{color:#555;font-size:.9em}
code{font-size:.9em;word-break:break-all}
svg{background:#fafafa;border:1px solid #e3e3e3;margin:.4em 0}
svg text{font-size:11px;fill:#444}
dl{display:grid;grid-template-columns:max-content auto;gap:.3em 1em}dt{font-weight:600}dd{margin:0}
)CSS";

const char* kSortJs = R"JS(
(function(){
  var t=document.getElementById('runs');if(!t)return;
  var body=t.tBodies[0];
  var rows=Array.prototype.slice.call(body.rows);
  var count={certified:0,pending:0,rejected:0};
  rows.forEach(function(r){var s=r.getAttribute('data-status');if(s in count)count[s]++;});
  var sum=document.getElementById('summary');
  if(sum)sum.textContent=rows.length+' runs: '+count.certified+' certified, '+count.pending+' pending, '+count.rejected+' rejected';
  var ths=t.tHead.rows[0].cells;
  Array.prototype.forEach.call(ths,function(th,i){
    th.addEventListener('click',function(){
      var asc=th.getAttribute('aria-sort')!=='ascending';
      Array.prototype.forEach.call(ths,function(h){h.removeAttribute('aria-sort');});
      th.setAttribute('aria-sort',asc?'ascending':'descending');
      var num=th.getAttribute('data-type')==='num';
      var rs=Array.prototype.slice.call(body.rows);
      rs.sort(function(a,b){
        var x=a.cells[i].getAttribute('data-v'),y=b.cells[i].getAttribute('data-v');
        var c=num?(parseFloat(x)-parseFloat(y)):(x<y?-1:x>y?1:0);
        return asc?c:-c;});
      rs.forEach(function(r){body.appendChild(r);});
    });
  });
  document.documentElement.setAttribute('data-sortable','yes');
})();
)JS";

std::string page_head(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<title>" + html_escape(title) + "</title>\n<style>" + kCss + "</style>\n</head>\n<body>\n";
}

// The run's badge: "certified 99.98%" (the confidence reached, as the confidence column shows it), "pending" or "rejected".
std::string badge(const RunEntry& e) {
  const std::string s = html_escape(status_name(e.status));
  return "<span class=\"status " + s + "\">" + html_escape(badge_text(e)) + "</span>";
}

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// The score a board ranks on: the sealed loss where there is one, else the public one.
double ranked_loss(const RunEntry& e) { return e.sealed_known ? e.sealed_loss : e.eval_loss; }

// The unit of the next-byte loss: nats per token on a board of token ids, else per byte.
std::string loss_unit(const BoardDefinition* board) {
  return board && board->benchmark.reader.kind == ReaderKind::kTokens ? "nats/token" : "nats/byte";
}

// Greedy placement of point labels: each label goes right of its point and
// moves down a line while it would overlap one already placed, so tied runs
// (the same compute and score) stay legible, one name under the other.
struct LabelBox {
  double x0, y0, x1, y1;
};
std::pair<double, double> place_label(std::vector<LabelBox>& placed, double x, double y, size_t chars) {
  const double w = 6.5 * double(chars), h = 12;
  for (int tries = 0; tries < 40; tries++, y += h) {
    const LabelBox b{x, y - h + 2, x + w, y + 2};
    bool clash = false;
    for (const auto& p : placed) clash = clash || (b.x0 < p.x1 && p.x0 < b.x1 && b.y0 < p.y1 && p.y0 < b.y1);
    if (!clash) {
      placed.push_back(b);
      return {x, y};
    }
  }
  placed.push_back({x, y - h + 2, x + w, y + 2});
  return {x, y};
}

// Score against compute: every run with a score as a point (certified
// filled, others hollow), the certified frontier as a line. The y axis is the
// score the board ranks on, in its unit, increasing upwards (lower is better:
// the best runs are at the bottom, as the axis title says); the x axis is
// training compute on a log scale. Both axes have ticks and titles.
std::string compute_chart(const std::vector<RunEntry>& runs, const std::string& score, const std::string& unit) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < runs.size(); i++)
    if (runs[i].eval_known && runs[i].status != BoardStatus::kRejected && runs[i].flops > 0 &&
        std::isfinite(ranked_loss(runs[i])))
      idx.push_back(i);
  if (idx.empty()) return "<p>No scored run yet.</p>\n";
  const double W = 720, H = 320, L = 70, R = 150, T = 14, B = 46;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (size_t i : idx) {
    const double lx = std::log10(runs[i].flops);
    x0 = std::min(x0, std::floor(lx)); x1 = std::max(x1, std::ceil(lx));
    y0 = std::min(y0, ranked_loss(runs[i])); y1 = std::max(y1, ranked_loss(runs[i]));
  }
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) { y0 -= 0.5; y1 += 0.5; }
  const double pad = (y1 - y0) * 0.08;
  y0 -= pad;
  y1 += pad;
  auto px = [&](double f) { return L + (std::log10(f) - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return T + (y1 - y) / (y1 - y0) * (H - T - B); };  // higher loss higher up
  std::ostringstream o;
  o << "<svg id=\"compute\" role=\"img\" aria-label=\"" << html_escape(score) << " against training compute\" width=\"" << W
    << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " " << H << "\" xmlns=\"http://www.w3.org/2000/svg\">\n";
  o << "<path class=\"axis\" d=\"M" << L << " " << T << "V" << H - B << "H" << W - R << "\" stroke=\"#888\" fill=\"none\"/>\n";
  for (double d = x0; d <= x1 + 1e-9; d += 1) {
    const double x = L + (d - x0) / (x1 - x0) * (W - L - R);
    o << "<path class=\"tick\" d=\"M" << fixed(x, 1) << " " << H - B << "v4\" stroke=\"#888\"/>"
      << "<text class=\"xtick\" x=\"" << fixed(x - 12, 1) << "\" y=\"" << H - B + 16 << "\">1e" << number_text(d) << "</text>\n";
  }
  for (int k = 0; k <= 4; k++) {
    const double v = y0 + (y1 - y0) * k / 4;
    o << "<path class=\"tick\" d=\"M" << L - 4 << " " << fixed(py(v), 1) << "h4\" stroke=\"#888\"/>"
      << "<text class=\"ytick\" x=\"" << L - 44 << "\" y=\"" << fixed(py(v) + 4, 1) << "\">" << fixed(v, 3) << "</text>\n";
  }
  o << "<text class=\"xlabel\" x=\"" << L + 40 << "\" y=\"" << H - 8
    << "\">training compute, FLOPs &#8776; 6 &#183; params &#183; tokens (log scale)</text>\n";
  o << "<text class=\"ylabel\" transform=\"translate(14 " << H - B << ") rotate(-90)\">" << html_escape(score) << ", "
    << html_escape(unit) << " (lower is better &#8595;)</text>\n";
  const std::vector<size_t> front = certified_frontier(runs);
  if (!front.empty()) {
    o << "<path class=\"frontier\" d=\"";
    for (size_t k = 0; k < front.size(); k++)
      o << (k ? "L" : "M") << fixed(px(runs[front[k]].flops), 1) << " " << fixed(py(ranked_loss(runs[front[k]])), 1);
    o << "\" stroke=\"#11602a\" stroke-width=\"1.5\" fill=\"none\"/>\n";
  }
  // Labels in order of position (left to right, top to bottom), so ties stack in name order.
  std::vector<size_t> by_pos = idx;
  std::stable_sort(by_pos.begin(), by_pos.end(), [&](size_t a, size_t b) {
    const double xa = px(runs[a].flops), xb = px(runs[b].flops);
    if (xa != xb) return xa < xb;
    return py(ranked_loss(runs[a])) < py(ranked_loss(runs[b]));
  });
  std::vector<LabelBox> placed;
  for (size_t i : by_pos) {
    const RunEntry& e = runs[i];
    const bool cert = e.status == BoardStatus::kCertified;
    const double cx = px(e.flops), cy = py(ranked_loss(e));
    placed.push_back({cx - 5, cy - 5, cx + 5, cy + 5});
    o << "<circle class=\"run " << html_escape(status_name(e.status)) << "\" data-name=\"" << html_escape(e.name)
      << "\" cx=\"" << fixed(cx, 1) << "\" cy=\"" << fixed(cy, 1) << "\" r=\"5\" stroke=\""
      << (cert ? "#11602a" : "#9a6700") << "\" fill=\"" << (cert ? "#1a7f37" : "none") << "\"><title>" << html_escape(e.name)
      << ": " << html_escape(score) << " " << fixed(ranked_loss(e), 4) << " " << html_escape(unit) << ", " << sci(e.flops)
      << " FLOPs, " << html_escape(badge_text(e)) << "</title></circle>\n";
  }
  for (size_t i : by_pos) {
    const RunEntry& e = runs[i];
    const auto [lx, ly] = place_label(placed, px(e.flops) + 8, py(ranked_loss(e)) + 4, e.name.size());
    o << "<text class=\"label\" data-name=\"" << html_escape(e.name) << "\" x=\"" << fixed(lx, 1) << "\" y=\"" << fixed(ly, 1)
      << "\">" << html_escape(e.name) << "</text>\n";
  }
  o << "</svg>\n<p class=\"reason\">Filled: certified; hollow: pending. The line joins the certified frontier: the "
       "runs no certified run beats with no more compute. Lower is better: the best runs are at the bottom.</p>\n";
  return o.str();
}

// A line chart of (x, y) points as inline SVG, with axes and min/max labels.
std::string line_chart(const std::vector<std::pair<double, double>>& pts, const std::string& id, const std::string& label,
                       const std::string& xlabel, const std::string& ylabel) {
  const double W = 640, H = 240, L = 66, R = 12, T = 14, B = 34;
  double x0 = pts.front().first, x1 = pts.front().first, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& [x, y] : pts) {
    x0 = std::min(x0, x); x1 = std::max(x1, x);
    if (std::isfinite(y)) { y0 = std::min(y0, y); y1 = std::max(y1, y); }
  }
  if (!(y0 <= y1)) y0 = y1 = 0;  // no finite value at all
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return T + (y1 - y) / (y1 - y0) * (H - T - B); };
  std::ostringstream o;
  o << "<svg id=\"" << id << "\" role=\"img\" aria-label=\"" << html_escape(label) << "\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\" xmlns=\"http://www.w3.org/2000/svg\">\n";
  o << "<path class=\"axis\" d=\"M" << L << " " << T << "V" << H - B << "H" << W - R << "\" stroke=\"#888\" fill=\"none\"/>\n";
  o << "<path class=\"curve\" d=\"";
  bool first = true;
  for (const auto& [x, y] : pts) {
    if (!std::isfinite(y)) continue;
    o << (first ? "M" : "L") << fixed(px(x), 1) << " " << fixed(py(y), 1);
    first = false;
  }
  o << "\" stroke=\"#1f6feb\" stroke-width=\"1.5\" fill=\"none\"/>\n";
  o << "<text x=\"20\" y=\"" << T + 8 << "\">" << fixed(y1, 3) << "</text>\n";
  o << "<text x=\"20\" y=\"" << H - B << "\">" << fixed(y0, 3) << "</text>\n";
  o << "<text x=\"" << L << "\" y=\"" << H - 18 << "\">" << number_text(x0) << "</text>\n";
  o << "<text x=\"" << W - R - 40 << "\" y=\"" << H - 18 << "\">" << number_text(x1) << "</text>\n";
  o << "<text class=\"xlabel\" x=\"" << (W / 2 - 30) << "\" y=\"" << H - 4 << "\">" << html_escape(xlabel) << "</text>\n";
  o << "<text class=\"ylabel\" transform=\"translate(12 " << H - B << ") rotate(-90)\">" << html_escape(ylabel) << "</text>\n";
  o << "</svg>\n";
  return o.str();
}

const char* kFieldColours[] = {"#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7d8c", "#57606a"};

// Replay distances against their thresholds: per challenged step, each
// field's distance / threshold on a log scale; the dashed line is the
// threshold (ratio 1), a point above it is a failed comparison.
std::string replay_chart(const ChallengeState& c, const std::string& id) {
  const double W = 640, H = 260, L = 66, R = 150, T = 14, B = 34;
  const double lo = -6, hi = 2;  // log10 of the ratio shown
  std::set<std::string> fields;
  int64_t s0 = c.checks.front().step, s1 = s0;
  for (const auto& p : c.checks) {
    s0 = std::min(s0, p.step);
    s1 = std::max(s1, p.step);
    for (const auto& [k, v] : p.distances)
      if (p.thresholds.count(k)) fields.insert(k);
  }
  const double xs0 = double(s0) - 0.5, xs1 = double(s1) + 0.5;
  auto px = [&](double x) { return L + (x - xs0) / (xs1 - xs0) * (W - L - R); };
  auto py = [&](double lr) { return T + (hi - std::clamp(lr, lo, hi)) / (hi - lo) * (H - T - B); };
  std::ostringstream o;
  o << "<svg id=\"" << id << "\" class=\"replay\" role=\"img\" aria-label=\"replay distance over threshold, challenge "
    << html_escape(c.name) << "\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " " << H
    << "\" xmlns=\"http://www.w3.org/2000/svg\">\n";
  o << "<path class=\"axis\" d=\"M" << L << " " << T << "V" << H - B << "H" << W - R << "\" stroke=\"#888\" fill=\"none\"/>\n";
  o << "<path class=\"threshold\" d=\"M" << L << " " << fixed(py(0), 1) << "H" << W - R
    << "\" stroke=\"#d1242f\" stroke-dasharray=\"5 4\" fill=\"none\"/>\n";
  for (double g : {-6.0, -4.0, -2.0, 0.0, 2.0})
    o << "<text x=\"24\" y=\"" << fixed(py(g) + 4, 1) << "\">1e" << int(g) << "</text>\n";
  int fi = 0;
  for (const auto& f : fields) {
    const char* col = kFieldColours[fi % 8];
    std::ostringstream d;
    for (const auto& p : c.checks) {
      auto dt = p.distances.find(f);
      auto th = p.thresholds.find(f);
      if (dt == p.distances.end() || th == p.thresholds.end()) continue;
      double ratio = th->second > 0 ? dt->second / th->second : (dt->second > 0 ? INFINITY : 0);
      if (std::isnan(ratio)) ratio = 0;
      const double lr = ratio > 0 ? std::log10(ratio) : lo;  // also NaN -> lo
      const double x = px(double(p.step)) + (fi - double(fields.size()) / 2) * 3;
      d << "M" << fixed(x - 3, 1) << " " << fixed(py(lr), 1) << "h6";
      o << "<circle cx=\"" << fixed(x, 1) << "\" cy=\"" << fixed(py(lr), 1) << "\" r=\"3\" fill=\"" << col << "\"><title>step "
        << p.step << " " << html_escape(f) << ": " << number_text(dt->second) << " / " << number_text(th->second)
        << "</title></circle>\n";
    }
    o << "<path class=\"field\" d=\"" << d.str() << "\" stroke=\"" << col << "\" fill=\"none\"/>\n";
    // style, not the fill attribute: the page's CSS for svg text would override an attribute.
    o << "<text x=\"" << W - R + 10 << "\" y=\"" << T + 12 + 14 * fi << "\" style=\"fill:" << col << "\">&#9679; "
      << html_escape(f) << "</text>\n";
    fi++;
  }
  o << "<text x=\"" << L << "\" y=\"" << H - 18 << "\">step " << s0 << "</text>\n";
  o << "<text x=\"" << W - R - 60 << "\" y=\"" << H - 18 << "\">step " << s1 << "</text>\n";
  o << "<text class=\"xlabel\" x=\"" << (W / 2 - 30) << "\" y=\"" << H - 4 << "\">challenged step</text>\n";
  o << "<text class=\"ylabel\" transform=\"translate(12 " << H - B << ") rotate(-90)\">distance / threshold (log; dashed = 1)</text>\n";
  o << "</svg>\n";
  return o.str();
}

std::string confidence_text(const RunEntry& e) {
  if (e.status != BoardStatus::kCertified) return "&#8212;";
  return html_escape(percent(e.confidence));
}


const std::vector<std::pair<std::string, std::string>>& status_rules() {
  // docs/board.md, "Status rules" (its summary); tests/cli/test_board_rules.sh
  // checks that the docs, wit-board(1) and README say the same.
  static const std::vector<std::pair<std::string, std::string>> r = {
      {"certified",
       "nothing failed, the board's own challenges reached the policy's confidence, and the board scored the released "
       "weights on its benchmark; for a version-2 data commitment the board audited the training tree; on a board "
       "without a sealed split the bundle holds a clean contamination certificate of the benchmark."},
      {"flagged", "certified but for the gap test or an overlap the policy flags: not ranked."},
      {"pending", "nothing failed, but the run is not certified yet (the reason says what is missing)."},
      {"rejected",
       "a check failed on evidence: the board's signed replay, refusal, audit or overlap finding, or the trainer's "
       "signed data contradicting itself."},
  };
  return r;
}

// Competition ranks of the certified runs ("1", "2=", "2=", "4"): among runs
// ranked together (one sealed epoch, or the public score without a sealed
// split), one more than the number with a strictly lower score; "=" marks a
// tie. Runs of an older epoch carry it ("1 (epoch 0)"). Others: "".
std::vector<std::string> rank_labels(const std::vector<RunEntry>& runs) {
  uint64_t newest = 0;
  for (const auto& e : runs)
    if (e.status == BoardStatus::kCertified && e.sealed_known) newest = std::max(newest, e.sealed_epoch);
  auto group = [](const RunEntry& e) { return e.sealed_known ? int64_t(e.sealed_epoch) : int64_t(-1); };
  std::vector<std::string> out(runs.size());
  for (size_t i = 0; i < runs.size(); i++) {
    if (runs[i].status != BoardStatus::kCertified) continue;
    size_t better = 0, same = 0;
    for (size_t j = 0; j < runs.size(); j++) {
      if (j == i || runs[j].status != BoardStatus::kCertified || group(runs[j]) != group(runs[i])) continue;
      if (ranked_loss(runs[j]) < ranked_loss(runs[i])) better++;
      else if (ranked_loss(runs[j]) == ranked_loss(runs[i])) same++;
    }
    out[i] = std::to_string(better + 1) + (same ? "=" : "");
    if (runs[i].sealed_known && runs[i].sealed_epoch != newest) out[i] += " (epoch " + std::to_string(runs[i].sealed_epoch) + ")";
  }
  return out;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& board_status_rules() { return status_rules(); }

std::string render_index_html(const std::vector<RunEntry>& runs, double fraction, const BoardDefinition* board) {
  std::ostringstream o;
  const std::string title = board ? "wit leaderboard: " + board->name : "wit leaderboard";
  const bool sealed = board && (board->sealed || !board->revealed.empty());
  const std::string unit = loss_unit(board);
  const std::string score = sealed ? "sealed loss" : "eval loss";
  o << page_head(title);
  o << "<h1>" << html_escape(title) << "</h1>\n<p class=\"lede\">Every run below was re-checked from its bundle: "
       "signatures, proofs, that the board's own signed reports answer challenges under the run's signed heads (the "
       "board replayed each response itself), and the board's own score of the released weights. Confidence: the "
       "probability that tampering with "
    << html_escape(fraction_percent(fraction))
    << " of a run's steps would have been caught by the board-drawn challenges it survived. Click a column to sort.</p>\n";
  o << "<ul id=\"rules\">\n";
  for (const auto& [name, rule] : status_rules())
    o << "<li><b>" << html_escape(name) << "</b>: " << html_escape(rule) << "</li>\n";
  o << "</ul>\n";
  if (board) {
    o << "<p id=\"board\">Board <b>" << html_escape(board->name) << "</b>: benchmark ";
    for (size_t i = 0; i < board->records.size(); i++) {
      std::string f = board->records[i].file;
      f = f.substr(f.rfind('/') + 1);
      o << (i ? ", " : "") << "<b>" << html_escape(f) << "</b>";
    }
    o << " (" << board->benchmark.n << " published records, root <code>" << html_escape(board->benchmark.root.hex().substr(0, 16))
      << "</code>)";
    if (board->sealed)
      o << " and a sealed split of " << board->sealed->n << " records (epoch " << board->sealed->epoch
        << ", kept outside the folder; root <code>" << html_escape(board->sealed->root.hex().substr(0, 16)) << "</code>)";
    o << "; metric " << html_escape(board->metric) << "; certified from " << html_escape(percent(board->policy.confidence))
      << "; board key <code>" << html_escape(board->key.hex()) << "</code>.</p>\n";
  }
  o << "<p id=\"ranking\">Ranked by <b>" << score << "</b>: the mean " << html_escape(board ? board->metric : std::string("next-byte"))
    << " loss in " << unit << " (" << (unit == "nats/token" ? "natural-log units per token" : "natural-log units per byte")
    << ") of the released weights"
    << (sealed ? " on the sealed records nobody outside the board has read (each epoch ranked on its own)" : " on the benchmark")
    << "; <b>lower is better</b>. Only certified runs are ranked; "
    << (sealed ? "the public score and the gap test's corrected p-value are shown beside it as feedback; " : "")
    << "ties share a rank (marked =).</p>\n";
  o << "<p id=\"summary\">" << runs.size() << " runs</p>\n";
  // A board with a sealed split ranks on it: its columns come first, the public score beside them as feedback.
  o << "<table id=\"runs\">\n<thead><tr><th data-type=\"num\" title=\"rank among certified runs by " << score
    << " (lower is better); = marks a tie\">rank</th><th data-type=\"str\">run</th><th data-type=\"str\">status</th>";
  if (sealed)
    o << "<th data-type=\"num\" title=\"loss on the sealed records nobody outside the board has read: what the board ranks on\">sealed loss<br><small>"
      << unit << ", lower is better</small></th>"
         "<th data-type=\"num\">sealed accuracy</th><th data-type=\"num\" title=\"the gap test's p-value, Bonferroni-corrected over "
         "the board's runs: small when the run does better on the published records than on sealed ones\">gap p</th>";
  o << "<th data-type=\"num\">" << (sealed ? "public loss" : "eval loss") << "<br><small>" << unit
    << ", lower is better</small></th><th data-type=\"num\">" << (sealed ? "public accuracy" : "accuracy")
    << "</th><th data-type=\"num\">confidence</th>"
       "<th data-type=\"num\">challenges survived</th><th data-type=\"num\">coverage</th><th data-type=\"num\">steps</th>"
       "<th data-type=\"num\">parameters</th><th data-type=\"num\">FLOPs</th>"
       "<th data-type=\"str\">released model</th></tr></thead>\n<tbody>\n";
  // Ranked: certified runs by score (lower loss first), then pending, then rejected, each by name.
  std::vector<size_t> order(runs.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranks_before(runs[a], runs[b]); });
  const std::vector<std::string> ranks = rank_labels(runs);
  size_t position = 0;
  for (size_t oi : order) {
    const RunEntry& e = runs[oi];
    const std::string n = html_escape(e.name);
    o << "<tr data-status=\"" << html_escape(status_name(e.status)) << "\" data-name=\"" << n << "\">";
    // The rank's sort key is the row's place in the ranking (certified first); unranked rows show a dash.
    o << "<td class=\"num rank\" data-v=\"" << position++ << "\">" << (ranks[oi].empty() ? "&#8212;" : html_escape(ranks[oi]))
      << "</td>";
    o << "<td data-v=\"" << n << "\"><a href=\"runs/" << n << ".html\">" << n << "</a></td>";
    o << "<td data-v=\"" << html_escape(status_name(e.status)) << "\">" << badge(e);
    if (!e.reason.empty()) o << "<br><span class=\"reason\">" << html_escape(e.reason) << "</span>";
    if (e.pruned_files)
      o << "<br><span class=\"reason pruned\">evidence pruned " << html_escape(utc_date(e.pruned_at).substr(0, 10))
        << ": audit can no longer replay it</span>";
    o << "</td>";
    if (sealed) {
      const bool sk = e.sealed_known && e.status != BoardStatus::kRejected;
      o << "<td class=\"num\" data-v=\"" << (sk ? fixed(e.sealed_loss, 6) : "1e300") << "\">"
        << (sk ? fixed(e.sealed_loss, 4) + " <small>(epoch " + std::to_string(e.sealed_epoch) + ")</small>" : "&#8212;") << "</td>";
      o << "<td class=\"num\" data-v=\"" << (sk ? fixed(e.sealed_accuracy, 6) : "-1") << "\">"
        << (sk ? fixed(100 * e.sealed_accuracy, 2) + "%" : "&#8212;") << "</td>";
      o << "<td class=\"num\" data-v=\"" << (sk ? sci(e.gap_adjusted) : "2") << "\">" << (sk ? html_escape(number_text(e.gap_adjusted)) : "&#8212;")
        << (sk && e.flagged ? " (flagged)" : "") << "</td>";
    }
    const bool score = e.eval_known && e.status != BoardStatus::kRejected;
    o << "<td class=\"num\" data-v=\"" << (score ? fixed(e.eval_loss, 6) : "1e300") << "\">" << (score ? fixed(e.eval_loss, 4) : "&#8212;") << "</td>";
    o << "<td class=\"num\" data-v=\"" << (score ? fixed(e.eval_accuracy, 6) : "-1") << "\">"
      << (score ? fixed(100 * e.eval_accuracy, 2) + "%" : "&#8212;") << "</td>";
    o << "<td class=\"num\" data-v=\"" << (e.status == BoardStatus::kCertified ? fixed(e.confidence, 8) : "-1") << "\">" << confidence_text(e) << "</td>";
    o << "<td class=\"num\" data-v=\"" << e.survived << "\">" << e.survived << " of " << e.challenges.size() << "</td>";
    o << "<td class=\"num\" data-v=\"" << e.steps_checked.size() << "\">" << e.steps_checked.size() << " of " << e.steps << "</td>";
    o << "<td class=\"num\" data-v=\"" << e.steps << "\">" << e.steps << "</td>";
    o << "<td class=\"num\" data-v=\"" << e.params << "\">" << e.params << "</td>";
    o << "<td class=\"num\" data-v=\"" << sci(e.flops) << "\">" << sci(e.flops) << "</td>";
    const std::string model = html_escape(model_verdict_name(e.model));
    o << "<td data-v=\"" << model << "\">" << model << "</td>";
    o << "</tr>\n";
  }
  o << "</tbody>\n</table>\n";
  o << "<h2>Score against compute</h2>\n" << compute_chart(runs, score, unit);
  o << "<p><a href=\"board.json\">board.json</a>: the same, as JSON.</p>\n";
  o << "<script>" << kSortJs << "</script>\n</body>\n</html>\n";
  return o.str();
}

std::string render_run_html(const RunEntry& e) {
  std::ostringstream o;
  o << page_head("wit: " + e.name);
  o << "<p><a href=\"../index.html\">&#8592; leaderboard</a></p>\n";
  o << "<h1>" << html_escape(e.name) << " " << badge(e) << "</h1>\n";
  if (!e.reason.empty()) o << "<p class=\"reason\" id=\"reason\">" << html_escape(e.reason) << "</p>\n";
  if (e.pruned_files) o << "<p class=\"reason\" id=\"pruned\">" << html_escape(e.pruned_note()) << ".</p>\n";
  o << "<dl>\n";
  o << "<dt>bundle</dt><dd>" << html_escape(e.source) << "</dd>\n";
  if (!e.run_id.empty()) o << "<dt>run id</dt><dd><code>" << html_escape(e.run_id) << "</code></dd>\n";
  if (e.steps)
    o << "<dt>compute</dt><dd>" << e.steps << " steps &#215; batch " << e.batch_size << " &#215; context " << e.context
      << " (up to " << e.tokens << " tokens), " << e.params << " parameters, about " << sci(e.flops)
      << " FLOPs (6 &#183; params &#183; tokens)</dd>\n<dt>config</dt><dd>" << html_escape(e.model_config) << "</dd>\n";
  if (!e.board.empty()) o << "<dt>board</dt><dd>" << html_escape(e.board) << "</dd>\n";
  if (!e.eval_root.empty()) o << "<dt>eval set</dt><dd><code>" << html_escape(e.eval_root) << "</code></dd>\n";
  if (e.sealed_known) {
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "loss %.4f nats/byte, accuracy %.2f%% over %llu sealed records (epoch %llu): what the board ranks on. "
                  "Public split: loss %.4f, accuracy %.2f%% (feedback).",
                  e.sealed_loss, 100 * e.sealed_accuracy, static_cast<unsigned long long>(e.sealed_n),
                  static_cast<unsigned long long>(e.sealed_epoch), e.eval_loss, 100 * e.eval_accuracy);
    o << "<dt>sealed score</dt><dd id=\"sealed\">" << html_escape(buf) << "</dd>\n";
    std::snprintf(buf, sizeof buf,
                  "mean sealed loss - mean public loss = %.4f; one-sided permutation test, %llu permutations: p = %.3g, "
                  "%.3g after Bonferroni over %zu runs%s. At these sizes it detects a gap of about %.3g nats/byte.",
                  e.gap_observed, static_cast<unsigned long long>(e.gap_permutations), e.gap_p, e.gap_adjusted, e.gap_runs,
                  e.flagged ? ": flagged, the run does better on the published records than on sealed ones" : "",
                  e.gap_detectable);
    o << "<dt>gap test</dt><dd id=\"gap\">" << html_escape(buf) << "</dd>\n";
  }
  if (!e.ignored.empty()) {
    o << "<dt>ignored files</dt><dd>";
    for (size_t i = 0; i < e.ignored.size(); i++) o << (i ? ", " : "") << "<code>" << html_escape(e.ignored[i]) << "</code>";
    o << " (not in the bundle's index: they count for nothing)</dd>\n";
  }
  o << "<dt>challenges</dt><dd>" << e.challenges.size() << " issued, " << e.survived << " survived, " << e.pending
    << " pending, " << e.failed << " failed</dd>\n";
  if (e.status != BoardStatus::kRejected && e.steps)
    o << "<dt>confidence</dt><dd>" << html_escape(percent(e.confidence)) << " against tampering with "
      << html_escape(fraction_percent(e.fraction)) << " of the steps (" << e.bad_steps << " of " << e.steps << "); coverage "
      << e.steps_checked.size() << " of " << e.steps
      << " distinct steps replayed by the board. The spot-check limit: a run that tampers with fewer than "
      << e.bad_steps << " steps can pass unnoticed; one that tampers with more is caught at least this often.</dd>\n";
  if (e.eval_known) {
    o << "<dt>certified score</dt><dd>eval loss " << fixed(e.eval_loss, 4) << " nats/byte, accuracy "
      << fixed(100 * e.eval_accuracy, 2) << "% over " << e.eval_n << " examples, scored by the " << html_escape(e.eval_by)
      << "</dd>\n";
    if (!e.weights_digest.empty())
      o << "<dt>released weights</dt><dd>scored by the board: <code>" << html_escape(e.weights_digest) << "</code></dd>\n";
    o << "<dt>eval spot checks</dt><dd>" << e.eval_checks.size() << (e.eval_checks.size() == 1 ? " report, " : " reports, ")
      << e.eval_indices_checked.size() << " distinct examples re-evaluated";
    if (!e.eval_indices_checked.empty())
      o << "; inflating " << html_escape(fraction_percent(e.fraction)) << " of the scores (" << e.eval_bad
        << " examples) is caught with probability " << html_escape(percent(e.eval_confidence));
    o << "</dd>\n";
  }
  if (e.clean)
    o << "<dt>contamination</dt><dd>" << (*e.clean ? "clean" : "contaminated") << ": " << e.eval_distinct
      << " distinct eval records proved against the training data; the training tree "
      << (e.tree_ranged      ? "ranged: every proof checks its own path's order"
          : e.leaves_audited ? "audited sorted by the board"
                             : "not audited (the certificate means absence only in a sorted tree)")
      << "</dd>\n";
  o << "<dt>released model</dt><dd id=\"model\">" << html_escape(model_verdict_name(e.model));
  if (e.model_probe_rel) o << " (relative probe distance " << number_text(*e.model_probe_rel) << ")";
  if (!e.model_note.empty()) o << " (" << html_escape(e.model_note) << ")";
  o << "</dd>\n";
  if (!e.probe_checks.empty()) {
    o << "<dt>model behind an API</dt><dd id=\"probe-checks\">";
    for (const auto& p : e.probe_checks)
      o << html_escape(p.name) << ": " << match_name(p.pass) << " (worst " << number_text(p.worst)
        << ", tolerance " << number_text(p.tolerance) << "; " << html_escape(p.guarantee) << ")<br>";
    o << "</dd>\n";
  }
  o << "</dl>\n";

  o << "<h2>Loss curve</h2>\n";
  if (e.log_pruned) {
    o << "<p id=\"log-pruned\">The run's log (<code>" << html_escape(e.log_stored)
      << "</code>) was pruned from the evidence store: nobody can check a curve of it any more, so none is drawn.</p>\n";
  } else if (e.loss_curve.empty()) {
    o << "<p>No log in the bundle.</p>\n";
  } else {
    std::vector<std::pair<double, double>> pts;
    for (const auto& [s, l] : e.loss_curve) pts.emplace_back(double(s), l);
    o << line_chart(pts, "loss-curve", "mean training loss per step", "step", "mean training loss, nats");
    if (!e.log_stored.empty())
      o << "<p id=\"log-stored\">The trainer's logged values at " << e.loss_curve.size()
        << " steps, from the run's log in the evidence store (<code>" << html_escape(e.log_stored)
        << "</code>); the board judged the run without it (heads by their signatures), and 'wit-board audit' checks the "
           "log against the signed heads and re-derives this curve from it.</p>\n";
  }
  o << "<h2>Challenges and replay</h2>\n";
  if (e.challenges.empty()) o << "<p>No challenges yet.</p>\n";
  for (const auto& c : e.challenges) {
    o << "<h3>" << html_escape(c.name) << ": " << html_escape(status_name(c.verdict)) << "</h3>\n";
    o << "<p>" << c.k << " steps under the head of size " << c.head_size << "; drawn by "
      << (c.drawn_by == "board" ? "the board (number " + std::to_string(c.number) + ")" : std::string("a caller's nonce (counts only if it fails)"));
    if (!c.response.empty()) o << "; response <code>" << html_escape(c.response) << "</code> verified by the board";
    if (!c.reason.empty()) o << "; reason: " << html_escape(c.reason);
    o << "</p>\n";
    if (!c.checks.empty()) {
      o << replay_chart(c, "replay-" + html_escape(c.name));
      o << "<table class=\"checks\"><thead><tr><th>step</th><th>pass</th><th>failed</th></tr></thead><tbody>\n";
      for (const auto& p : c.checks)
        o << "<tr><td class=\"num\">" << p.step << "</td><td>" << (p.pass ? "yes" : "no") << "</td><td>"
          << html_escape(p.failed) << "</td></tr>\n";
      o << "</tbody></table>\n";
    }
  }
  o << "</body>\n</html>\n";
  return o.str();
}

void write_site(const std::string& site_dir, const std::vector<RunEntry>& runs, double fraction, const BoardDefinition* board) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(site_dir) / "runs", ec);
  if (ec) throw Error("cannot create directory: " + ec.message(), site_dir + "/runs");
  std::set<std::string> pages;
  for (const auto& e : runs) {
    pages.insert(e.name + ".html");
    write_file_atomic(site_dir + "/runs/" + e.name + ".html", render_run_html(e));
  }
  // Pages of runs no longer on the board would make two builds of the same
  // bundles differ; only *.html files directly in runs/ are removed.
  for (const auto& f : fs::directory_iterator(fs::path(site_dir) / "runs", ec)) {
    const std::string n = f.path().filename().string();
    if (f.is_regular_file() && n.size() > 5 && n.compare(n.size() - 5, 5, ".html") == 0 && !pages.count(n))
      fs::remove(f.path(), ec);
  }
  write_file_atomic(site_dir + "/board.json", board_json(runs, fraction, board));
  write_file_atomic(site_dir + "/index.html", render_index_html(runs, fraction, board));
}

}  // namespace wit
