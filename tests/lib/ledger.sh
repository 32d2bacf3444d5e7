# ledger.sh -- the exactly-once checks of a ledger job, for the tests that
# run one (test_faults.sh, test_quorum_supervisor.sh). Source it after
# harness.sh. The ledger job appends "BATON_SCHEDULED_AT BATON_FENCE
# BATON_NODE" to $LEDGER every second; the job's history says why a tick
# did not run. Globals the caller sets: LEDGER (the file), G (the group),
# PHASE (named in failures); LEDGER_HISTORY, the function that prints the
# job's history as history_ranges does (default history_ranges: the
# redis-server started last; a quorum's test unites its masters'), and
# $T/history-pre.txt, records kept from before a fault that lost them.
LEDGER_HISTORY=${LEDGER_HISTORY:-history_ranges}

# check_ledger FROM TO ALLOW_MISSED LOSS_FROM LOSS_TO: the checks over the
# seconds FROM..TO of the ledger job's ticks. Sets RAN, RECORDED, LOST.
check_ledger() {
    local from=$1 to=$2 allow_missed=$3 lf=$4 lt=$5
    awk -v f="$from" -v t="$to" '{print $1}' "$LEDGER" | date -u -f - +%s |
        awk -v f="$from" -v t="$to" '$1 >= f && $1 <= t' | sort -n > "$T/ran.txt"
    local dups
    dups=$(uniq -d "$T/ran.txt" | head -n 10 | tr '\n' ' ')
    [ -z "$dups" ] || fail "$PHASE: ticks run twice: $dups"
    { "$LEDGER_HISTORY" "$G" ledger; cat "$T/history-pre.txt" 2>/dev/null; } > "$T/history.txt"
    # Every second: ran, or recorded (missed only where allowed), or lost
    # in the loss window.
    local bad
    bad=$(awk -v f="$from" -v t="$to" -v am="$allow_missed" -v lf="$lf" -v lt="$lt" '
        FILENAME == ARGV[1] { ran[$1] = 1; next }
        { n++; s[n] = $1; u[n] = $2; o[n] = $3 }
        END {
            for (x = f; x <= t; x++) {
                if (x in ran) { r++; continue }
                why = ""
                for (i = 1; i <= n; i++) if (s[i] <= x && x <= u[i]) { why = o[i]; break }
                if (why != "" && (why != "missed" || am)) { rec++; continue }
                if (why == "" && x >= lf && x <= lt) { lost++; continue }
                printf "%s(%s) ", x, (why == "" ? "no record" : why); bad++
                if (bad >= 10) break
            }
            printf "\n%d %d %d\n", r, rec, lost
        }' "$T/ran.txt" "$T/history.txt")
    read -r RAN RECORDED LOST <<<"$(printf '%s\n' "$bad" | tail -n1)"
    bad=$(printf '%s\n' "$bad" | head -n1)
    if [ -n "$bad" ]; then
        { echo "ledger:"; sort "$LEDGER" | tail -n 40; echo "history (first last outcome started_ms end_ms):"; tail -n 20 "$T/history.txt"; } >&2
        fail "$PHASE: ticks neither run nor recorded: $bad"
    fi
    sort "$LEDGER" | awk '$2 < f {print "fence went down at " $1; bad = 1} {f = $2} END {exit bad}' \
        || fail "$PHASE: a later tick ran under a lower fence"
}

