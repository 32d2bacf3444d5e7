# coverage.sh BUILD_DIR -- line and branch coverage of what the suites just
# ran in BUILD_DIR (built with -DBATON_COVERAGE=ON), with gcovr: one JSON
# line per part (src/lib: libbaton, src/supervisor: baton run), and a
# failure when a part's line coverage is below its floor. The floors only
# go up: raise them as the suites cover more.
set -euo pipefail
build=${1:?usage: coverage.sh BUILD_DIR}
declare -A FLOOR=([src/lib]=85 [src/supervisor]=85)
status=0
for part in src/lib src/supervisor; do
    json=$(gcovr --root . --object-directory "$build" --filter "$part/" \
               --exclude-unreachable-branches --json-summary - 2>/dev/null)
    read -r lines branches < <(python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["line_percent"], d["branch_percent"])' <<<"$json")
    printf '{"coverage":"%s","lines_percent":%s,"branches_percent":%s,"lines_floor":%s}\n' \
        "$part" "$lines" "$branches" "${FLOOR[$part]}"
    if ! awk -v got="$lines" -v floor="${FLOOR[$part]}" 'BEGIN { exit !(got + 0 >= floor) }'; then
        echo "coverage.sh: $part: $lines% of lines, below the floor of ${FLOOR[$part]}%"
        status=1
    fi
done
exit $status
