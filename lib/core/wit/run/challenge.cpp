// Challenges: the seed from a signed head and a nonce, the uniform draws of
// steps and checkpoint intervals (Floyd's algorithm on a ChaCha20 stream), the
// exact detection guarantee, and the JSON form. Format: docs/challenge.md.
#include "wit/run/challenge.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_set>

#include "wit/base/cli_base.h"
#include "wit/base/error.h"
#include "wit/base/json_fields.h"
#include "wit/hash/hash.h"
#include "wit/base/io.h"
#include "wit/hash/rng.h"
#include "wit/hash/tags.h"

namespace wit {

using json = nlohmann::json;

namespace {

// Heads past this size would overflow the int64 arithmetic below; no log gets near it.
constexpr uint64_t kMaxHeadSize = uint64_t(1) << 62;

Hash32 challenge_seed(const TreeHead& head, const Hash32& nonce) {
  Blake2b h;
  h.update_field(ByteView(tags::kChallenge));
  const Bytes hb = head.signed_bytes();
  h.update_field(ByteView(hb));
  h.update(ByteView(nonce.data(), Hash32::size()));
  return h.final();
}

bool fraction_ok(double f) { return f > 0 && f <= 1; }  // false for NaN

}  // namespace

// Floyd's algorithm: k distinct values uniformly from [1, n] (every k-subset
// equally likely), consuming exactly k uniform() draws from the stream. For
// j = n-k+1 .. n: t = 1 + uniform(j); take t, or j if t is already taken.
// Returned sorted. Preconditions: 0 <= k <= n.
std::vector<int64_t> floyd_sample(ChaChaStream& s, int64_t n, int64_t k) {
  std::unordered_set<int64_t> taken;
  taken.reserve(size_t(k));
  std::vector<int64_t> out;
  out.reserve(size_t(k));
  for (int64_t j = n - k + 1; j <= n; j++) {
    const int64_t t = 1 + int64_t(s.uniform(uint64_t(j)));
    const int64_t v = taken.count(t) ? j : t;
    taken.insert(v);
    out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// p as a percentage rounded down to hundredths (the sentence says "at least"),
// with 1e-10 of slack so that a computed 0.09999999999999998 reads 10.00%, and
// 100% only for exactly 1 (callers pass the detection of an uncertain draw
// below 1, so rounding never makes it read as certain).
std::string percent(double p) {
  if (p >= 1.0) return "100%";
  double v = std::floor(p * 10000.0 + 1e-6) / 100.0;
  if (v > 99.99) v = 99.99;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", v);
  return buf;
}

std::string fraction_percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g%%", f * 100.0);
  return buf;
}

double miss_probability(int64_t T, int64_t bad, int64_t k) {
  if (T < 0 || bad < 0 || bad > T || k < 0 || k > T)
    throw Error("miss probability needs 0 <= bad <= T and 0 <= k <= T",
                "T = " + std::to_string(T) + ", bad = " + std::to_string(bad) + ", k = " + std::to_string(k));
  if (bad == 0 || k == 0) return 1.0;
  if (k > T - bad) return 0.0;
  // C(T-bad, k) / C(T, k) = prod_{j<m} (T-M-j) / (T-j), with m = min(k, bad) and
  // M = max(k, bad) (the formula is symmetric in k and bad). Every factor is at
  // most 1 - M/T, so the product falls below the smallest double after about
  // sqrt(745 T) factors at worst; stop there (it is 0 as a double).
  const int64_t m = std::min(k, bad), M = std::max(k, bad);
  const long double tiny = (long double)std::numeric_limits<double>::denorm_min() / 4;
  long double p = 1;
  for (int64_t j = 0; j < m; j++) {
    p *= (long double)(T - M - j) / (long double)(T - j);
    if (p < tiny || p == 0) return 0.0;
  }
  return double(p);
}

int64_t bad_steps_for(int64_t T, double fraction) {
  if (!fraction_ok(fraction)) throw Error("fraction must be in (0, 1]", std::to_string(fraction));
  const long double x = (long double)fraction * (long double)T;
  const long double r = std::nearbyint(x);
  int64_t bad = std::fabs(x - r) <= 1e-9L * std::max((long double)1, x) ? int64_t(r) : int64_t(std::ceil(x));
  return std::min(std::max<int64_t>(bad, 1), T);
}

int64_t k_for_confidence(int64_t T, double fraction, double confidence) {
  if (T < 1) throw Error("no steps to challenge", "T = " + std::to_string(T));
  if (!(confidence > 0 && confidence < 1)) throw Error("confidence must be in (0, 1)", std::to_string(confidence));
  const int64_t bad = bad_steps_for(T, fraction);
  // Detection 1 - miss(k) grows with k and is exactly 1 at k = T - bad + 1:
  // binary search for the smallest k with detection >= confidence.
  int64_t lo = 1, hi = T - bad + 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (1.0 - miss_probability(T, bad, mid) >= confidence)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

Guarantee make_guarantee(int64_t T, int64_t k, double fraction) {
  Guarantee g;
  g.steps = T;
  g.k = k;
  g.fraction = fraction;
  g.bad_steps = bad_steps_for(T, fraction);
  g.detection = 1.0 - miss_probability(T, g.bad_steps, k);
  // 1 - (1 - f)^k without cancellation for small f.
  g.detection_binomial = fraction >= 1 ? 1.0 : -std::expm1(double(k) * std::log1p(-fraction));
  return g;
}

std::string Guarantee::words() const {
  const std::string steps_s = cli::count_of(uint64_t(steps), "step");
  const std::string bad_s = cli::count_of(uint64_t(bad_steps), "step");
  const std::string chal_s = k == 1 ? "this 1 challenge" : "these " + std::to_string(k) + " challenges";
  std::string s = "a run that tampered with at least " + fraction_percent(fraction) + " of its " + steps_s + " (" +
                  bad_s + ") is caught by " + chal_s;
  // Certain exactly when k exceeds the good steps; a detection that merely
  // rounds to 1 as a double is still "at least 99.99%".
  if (k > steps - bad_steps)
    s += " with certainty";
  else
    s += " with probability at least " + percent(std::min(detection, std::nextafter(1.0, 0.0)));
  s += " (hypergeometric; 1-(1-f)^k = " + percent(detection_binomial) + ")";
  return s;
}

Challenge derive_challenge(const TreeHead& head, const Hash32& nonce, int64_t k, int64_t n_segments,
                           int64_t checkpoint_every, double fraction) {
  const std::string hw = "head of size " + std::to_string(head.size);
  if (head.size < 2) throw Error("head covers no training steps", hw);
  if (head.size > kMaxHeadSize) throw Error("head size is too large", hw);
  if (auto p = head_problem(head, std::nullopt, std::nullopt)) throw Error(*p, hw);
  const int64_t T = int64_t(head.size) - 1;
  if (k < 1 || k > T)
    throw Error("k must be between 1 and the " + std::to_string(T) + " steps the head covers", "k = " + std::to_string(k));
  if (k > kMaxChallengeSteps)
    throw Error("too many challenges (at most " + std::to_string(kMaxChallengeSteps) + ")", "k = " + std::to_string(k));
  if (!fraction_ok(fraction)) throw Error("fraction must be in (0, 1]", std::to_string(fraction));
  if (n_segments < 0) throw Error("negative segment count", std::to_string(n_segments));
  int64_t intervals = 0;
  if (n_segments > 0) {
    if (checkpoint_every < 1)
      throw Error("segments need a checkpoint interval of at least 1", "checkpoint_every = " + std::to_string(checkpoint_every));
    intervals = (T - 1) / checkpoint_every + 1;  // ceil(T / C)
    if (n_segments > intervals)
      throw Error("more segments than the head's " + std::to_string(intervals) + " checkpoint intervals",
                  std::to_string(n_segments));
  }

  Challenge c;
  c.head = head;
  c.nonce = nonce;
  c.seed = challenge_seed(head, nonce);
  c.checkpoint_every = n_segments > 0 ? checkpoint_every : 0;
  ChaChaStream s(c.seed);
  c.steps = floyd_sample(s, T, k);
  // Segments continue the same stream after the k step draws.
  for (int64_t i : floyd_sample(s, intervals, n_segments))
    c.segments.push_back({(i - 1) * checkpoint_every, std::min(i * checkpoint_every, T)});
  c.guarantee = make_guarantee(T, k, fraction);
  return c;
}

json Guarantee::to_json(const std::string& statement) const {
  return {{"steps", steps},         {"k", k},
          {"fraction", fraction},   {"bad_steps", bad_steps},
          {"detection", detection}, {"detection_binomial", detection_binomial},
          {"statement", statement}};
}

json Challenge::to_json() const {
  json segs = json::array();
  for (const Segment& g : segments) segs.push_back({{"from", g.from}, {"to", g.to}});
  const json gj = guarantee.to_json(guarantee.words());
  return {{"format", kChallengeFormat},
          {"version", kChallengeVersion},
          {"run_id", head.run_id.hex()},
          {"head", head.to_json()},
          {"nonce", nonce.hex()},
          {"seed", seed.hex()},
          {"checkpoint_every", checkpoint_every},
          {"steps", steps},
          {"segments", segs},
          {"guarantee", gj}};
}

Challenge Challenge::from_json(const json& j, const std::string& where) {
  constexpr jsonf::Fields F{"invalid challenge"};
  if (!j.is_object()) F.bad("not a json object", where);
  if (!j.contains("format") || !j["format"].is_string()) F.bad("missing field 'format'", where);
  if (j["format"].get<std::string>() != kChallengeFormat)
    F.bad("not a challenge (format '" + j["format"].get<std::string>() + "')", where);
  if (!j.contains("version") || !j["version"].is_number_integer()) F.bad("missing field 'version'", where);
  if (j["version"].get<int64_t>() != kChallengeVersion)
    throw Error("unsupported challenge version " + std::to_string(j["version"].get<int64_t>()) + " (this wit reads " +
                    std::to_string(kChallengeVersion) + ")",
                where);
  F.only_keys(j, {"format", "version", "run_id", "head", "nonce", "seed", "checkpoint_every", "steps", "segments",
                  "guarantee"},
              where);

  const TreeHead head = TreeHead::from_json(F.need(j, "head", where), where);
  if (auto p = head_problem(head, std::nullopt, std::nullopt)) F.bad(*p, where);
  if (head.size < 2 || head.size > kMaxHeadSize) F.bad("the head covers no training steps", where);
  if (F.hash(j, "run_id", where) != head.run_id) F.bad("field 'run_id' is not the head's run id", where);
  const Hash32 nonce = F.hash(j, "nonce", where);
  if (F.hash(j, "seed", where) != challenge_seed(head, nonce)) F.bad("the seed is not the one the head and nonce give", where);
  const int64_t ckpt = F.count(F.need(j, "checkpoint_every", where), "checkpoint_every", where);

  const json& js = F.array(j, "steps", where);
  std::vector<int64_t> steps;
  for (const json& v : js) steps.push_back(F.count(v, "steps", where));
  const json& jg = F.array(j, "segments", where);
  std::vector<Segment> segs;
  for (const json& v : jg) {
    if (!v.is_object() || v.size() != 2) F.bad("a segment is not an object {\"from\", \"to\"}", where);
    segs.push_back({F.count(F.need(v, "from", where), "segments.from", where),
                    F.count(F.need(v, "to", where), "segments.to", where)});
  }

  const json& gj = F.need(j, "guarantee", where);
  if (!gj.is_object()) F.bad("field 'guarantee' is not an object", where);
  F.only_keys(gj, {"steps", "k", "fraction", "bad_steps", "detection", "detection_binomial", "statement"}, where,
              "guarantee");
  const double fraction = F.number(gj, "fraction", where, "guarantee");
  if (!fraction_ok(fraction)) F.bad("field 'guarantee.fraction' is not in (0, 1]", where);

  const int64_t T = int64_t(head.size) - 1;
  const int64_t k = int64_t(steps.size());
  if (k < 1 || k > T) F.bad("it has " + std::to_string(k) + " steps for a head covering " + std::to_string(T), where);
  if (!segs.empty() && ckpt < 1) F.bad("it has segments but no checkpoint interval", where);
  if (segs.empty() && ckpt != 0) F.bad("field 'checkpoint_every' is set without segments", where);
  if (ckpt > 0 && int64_t(segs.size()) > (T - 1) / ckpt + 1) F.bad("more segments than checkpoint intervals", where);

  Challenge c = derive_challenge(head, nonce, k, int64_t(segs.size()), ckpt, fraction);
  if (c.steps != steps) F.bad("the steps are not the ones the head and nonce give", where);
  for (size_t i = 0; i < segs.size(); i++)
    if (segs[i].from != c.segments[i].from || segs[i].to != c.segments[i].to)
      F.bad("the segments are not the ones the head and nonce give", where);

  // The guarantee is derived too. Its probabilities may differ in the last bits
  // between platforms (long double), so they are compared with a tolerance, and
  // the statement is checked against the numbers as written.
  Guarantee g = c.guarantee;
  auto count = [&](const char* key) { return F.count(F.need(gj, key, where), std::string("guarantee.") + key, where); };
  if (count("steps") != g.steps || count("k") != g.k || count("bad_steps") != g.bad_steps)
    F.bad("the guarantee does not match its steps", where);
  const double det = F.number(gj, "detection", where, "guarantee"),
               bin = F.number(gj, "detection_binomial", where, "guarantee");
  if (!(std::fabs(det - g.detection) <= 1e-9) || !(std::fabs(bin - g.detection_binomial) <= 1e-9))
    F.bad("the guarantee's probabilities are not the ones its steps give", where);
  g.detection = det;
  g.detection_binomial = bin;
  const json& st = F.need(gj, "statement", where);
  if (!st.is_string() || st.get<std::string>() != g.words()) F.bad("the guarantee's statement does not match it", where);
  c.guarantee = g;
  return c;
}

int64_t request_count(const ChallengeRequest& req, int64_t n, const std::string& population, int64_t max) {
  if (!req.k && !req.confidence) throw Error("missing -k N or --confidence P --fraction F", "", "run with --help for usage");
  if (req.k && req.confidence) throw Error("-k and --confidence exclude each other");
  if (req.confidence && !req.fraction) throw Error("--confidence needs --fraction", "", "e.g. --confidence 0.99 --fraction 0.05");
  if (req.confidence && !(*req.confidence > 0 && *req.confidence < 1))
    throw Error("--confidence must be between 0 and 1 (exclusive)", std::to_string(*req.confidence));
  if (req.fraction && !fraction_ok(*req.fraction)) throw Error("--fraction must be in (0, 1]", std::to_string(*req.fraction));
  const int64_t k = req.k ? *req.k : k_for_confidence(n, req.fraction.value_or(0.05), *req.confidence);
  if (k < 1 || k > n)
    throw Error("-k must be between 1 and the " + std::to_string(n) + " " + population, std::to_string(k));
  if (k > max)
    throw Error("too many to check at once (at most " + std::to_string(max) + ")", std::to_string(k),
                "lower --confidence or raise --fraction");
  return k;
}

Challenge issue_challenge(const TreeHead& head, const std::string& head_where, const Hash32& nonce,
                          const ChallengeRequest& req) {
  if (req.segments < 0) throw Error("--segments must not be negative", std::to_string(req.segments));
  if (auto p = head_problem(head, std::nullopt, std::nullopt)) throw Error(*p, head_where);
  if (head.size < 2) throw Error("the head covers no training steps", head_where);
  const int64_t T = int64_t(head.size) - 1;
  if (req.segments > 0 && !req.checkpoint_every)
    throw Error("--segments needs --checkpoint-every", std::to_string(req.segments),
                "or pass --run RUN to read it from the manifest");
  if (req.segments > 0 && *req.checkpoint_every < 1)
    throw Error("--checkpoint-every must be at least 1", std::to_string(*req.checkpoint_every));
  const int64_t n = request_count(req, T, "steps the head covers", kMaxChallengeSteps);
  return derive_challenge(head, nonce, n, req.segments, req.checkpoint_every.value_or(0), req.fraction.value_or(0.05));
}

Challenge Challenge::load(const std::string& path) {
  const std::string where = path == "-" ? "stdin" : path;
  return from_json(jsonf::parse(read_file(path), "invalid challenge", where), where);
}

Hash32 nonce_from_args(const std::string& hex, const std::string& file) {
  Hash32 n;
  if (!hex.empty()) {
    if (!Hash32::from_hex(hex, n)) throw Error("--nonce is not 64 hex digits", hex, "a nonce is 32 bytes as hex, e.g. $(od -An -N32 -tx1 /dev/urandom | tr -d ' \\n')");
    return n;
  }
  if (file.empty()) throw Error("missing --nonce HEX or --nonce-file F", "", "the nonce must come from someone other than the trainer or evaluator, after the fact");
  std::string text = read_file(file);
  const char* ws = " \t\r\n";
  const size_t a = text.find_first_not_of(ws);
  text = a == std::string::npos ? "" : text.substr(a, text.find_last_not_of(ws) - a + 1);
  if (!Hash32::from_hex(text, n)) throw Error("nonce file is not 64 hex digits", file == "-" ? "stdin" : file);
  return n;
}

}  // namespace wit
