#!/usr/bin/env bash
# The leaderboard in a real browser: torch_board.sh builds a defined board's
# site from real bundles (the honest run certified by the board's own replay
# of its response), then headless Chromium (Debian's `chromium`) opens index.html and a
# run page from disk, with no network. Checks the DOM after the page's own
# script ran (the summary it writes, the sortable marker), that the table
# lists the runs with their statuses, that the SVG plots are there with path
# data, that a screenshot is drawn, and that a pruned run is marked.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"

CHROME=${WIT_CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
if [ -z "$CHROME" ]; then
  # Exit 77: ctest reports the test as skipped (SKIP_RETURN_CODE), not passed.
  echo "SKIP: chromium is not installed (apt-get install chromium, or scripts/install-deps.sh); the browser test did not run" >&2
  exit 77
fi

# Build the bundles and the site (the CLI test itself, keeping its site).
WIT_BOARD_KEEP="$T/keep" bash "$HERE/torch_board.sh" >"$T/board.log" 2>&1 && ok ||
  fail "torch_board.sh failed: $(tail -5 "$T/board.log")"
SITE="$T/keep/site"
[ -f "$SITE/index.html" ] || { fail "no site built"; finish; exit 1; }

browse() {  # browse OUT ARGS... : headless Chromium, no sandbox (CI runs as root), a throwaway profile
  local out=$1
  shift
  timeout 60 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$T/profile" --virtual-time-budget=2000 "$@" >"$out" 2>"$T/chrome.err"
}

browse "$T/index.dom" --dump-dom "file://$SITE/index.html" && ok || fail "chromium could not open index.html: $(tail -3 "$T/chrome.err")"
dom="$T/index.dom"
# The page's script ran: it counted the rows by status and marked the table sortable.
grep -q '<p id="summary">[0-9]* runs: 1 certified, 1 pending, [0-9]* rejected</p>' "$dom" && ok ||
  fail "summary not written by the page's script: $(grep -o '<p id="summary">[^<]*' "$dom")"
grep -q 'data-sortable="yes"' "$dom" && ok || fail "sort script did not run"
for row in 'data-status="certified" data-name="honest"' 'data-status="pending" data-name="claims"'; do
  grep -q "$row" "$dom" && ok || fail "table lacks the row: $row"
done
grep -q '>certified 50.00%</span>' "$dom" && ok || fail "no badge with the confidence reached"
# The badge and the confidence column say the same (no "certified 99%" beside "99.98%").
grep -q '<td class="num" data-v="0.50000000">50.00%</td>' "$dom" && ok || fail "the confidence column differs from the badge"
# What the ranking is: an explicit rank, the unit and direction, the benchmark by name and size (issue 37 item 7).
grep -q '<th data-type="num" title="rank among certified runs[^"]*">rank</th>' "$dom" && ok || fail "no rank column"
grep -q '<td class="num rank" data-v="0">1</td><td data-v="honest">' "$dom" && ok || fail "the certified run is not ranked 1"
grep -q '<td class="num rank" data-v="[0-9]*">&#8212;</td><td data-v="claims">\|<td class="num rank" data-v="[0-9]*">—</td><td data-v="claims">' "$dom" &&
  ok || fail "a pending run is ranked"
grep -q 'Ranked by <b>eval loss</b>: the mean next-byte loss in nats/byte' "$dom" && grep -q '<b>lower is better</b>' "$dom" && ok ||
  fail "the ranking's metric, unit or direction is not stated"
grep -q 'benchmark <b>[^<]*</b> ([0-9]* published records' "$dom" && ok || fail "the benchmark is not named with its size"
grep -q '<li><b>certified</b>: nothing failed' "$dom" && ok || fail "the status rules are not in the intro"
# The plot's axes are titled; the loss axis says which way is better.
grep -q '<text class="ylabel"[^>]*>eval loss, nats/byte (lower is better' "$dom" && grep -q '<text class="xlabel"' "$dom" && ok ||
  fail "the score-against-compute axes are not titled"
grep -q 'no board challenge drawn yet' "$dom" && ok || fail "pending reason not shown"
grep -q '<p id="board">Board <b>tiny</b>' "$dom" && ok || fail "the board is not named"
grep -q '<svg id="compute"' "$dom" && grep -q '<circle class="run certified" data-name="honest"' "$dom" && ok ||
  fail "no score-against-compute plot with the honest run"
grep -q '<path class="frontier" d="M' "$dom" && ok || fail "no certified frontier"
rows=$(grep -o '<tr data-status=' "$dom" | wc -l)
[ "$rows" -ge 2 ] && ok || fail "only $rows runs in the table"

browse "$T/run.dom" --dump-dom "file://$SITE/runs/honest.html" && ok || fail "chromium could not open the run page"
dom="$T/run.dom"
grep -q '<svg id="loss-curve"' "$dom" && ok || fail "no loss curve svg"
curve=$(grep -o '<path class="curve" d="M[^"]*"' "$dom" | head -1)
[ "$(grep -o 'L' <<<"$curve" | wc -l)" -ge 7 ] && ok || fail "loss curve has too few points: $curve"
grep -q '<svg id="replay-[0-9a-f]*" class="replay"' "$dom" && ok || fail "no replay plot svg"
grep -q '<path class="threshold" d="M' "$dom" && ok || fail "no threshold line"
grep -q '<text class="ylabel"[^>]*>mean training loss, nats</text>' "$dom" && ok || fail "the loss curve's y axis is not titled"
grep -q '<circle cx="[0-9.]*" cy="[0-9.]*" r="3"' "$dom" && ok || fail "no replay points"
grep -q 'drawn by the board (number 0)' "$dom" && ok || fail "who drew the challenge is not shown"
grep -q 'verified by the board' "$dom" && ok || fail "the verified response is not named"

# After a prune (torch_board.sh's board-p): the table and the run page say the honest run's evidence was pruned.
browse "$T/pruned.dom" --dump-dom "file://$T/keep/psite/index.html" && ok || fail "chromium could not open the pruned board's index.html"
grep -q 'evidence pruned [0-9-]*: audit can no longer replay it' "$T/pruned.dom" && ok || fail "the table does not mark the pruned run"
grep -q 'data-status="certified" data-name="honest"' "$T/pruned.dom" && ok || fail "a prune changed the run's status on the site"
browse "$T/pruned-run.dom" --dump-dom "file://$T/keep/psite/runs/honest.html" && ok || fail "chromium could not open the pruned run page"
grep -q '<p class="reason" id="pruned">evidence pruned from the store on ' "$T/pruned-run.dom" && ok ||
  fail "the run page does not say the evidence was pruned"

# The browser draws the pages (a blank page would compress to almost nothing).
browse /dev/null --screenshot="$T/index.png" --window-size=1280,900 "file://$SITE/index.html"
browse /dev/null --screenshot="$T/run.png" --window-size=1280,1400 "file://$SITE/runs/honest.html"
for png in "$T/index.png" "$T/run.png"; do
  size=$(stat -c %s "$png" 2>/dev/null || echo 0)
  [ "$size" -gt 20000 ] && ok || fail "screenshot $png is missing or blank ($size bytes)"
  head -c 8 "$png" | od -An -tx1 | grep -q '89 50 4e 47' && ok || fail "screenshot $png is not a PNG"
done
[ -n "${WIT_BOARD_SHOTS:-}" ] && cp "$T/index.png" "$T/run.png" "$WIT_BOARD_SHOTS"/
finish
