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


# ---- run_on: all: once per (node, tick) ----
#
# history_members GROUP JOB [LOGS...]: JOB's history as "first last
# outcome node started_ms end_ms" lines, node the one member a record is
# about: the member its run id was offered to, as the leaders' "assigned"
# lines in LOGS say (a node's own run id of run_on: all, "<marker>.<n>",
# whoever wrote the record: the member, or the leader recording it not
# started); else the member named by a "run_on: all: NODE ..." reason;
# else the record's node for a run that started or a run lost; "*" for a
# record about the whole tick (skipped, missed, superseded, a claim that
# did not start).
history_members() {
    local g=$1 job=$2 raw; shift 2
    raw=$({ [ $# -eq 0 ] || grep -h '"event":"assigned"' "$@" |
                sed -n 's/.*"run_id":"\([^"]*\)".*"member":"\([^"]*\)".*/@ \1 \2/p'
            rcli xrange "baton:{$g}:runs:$job" - + ; } | awk '
        $1 == "@" && NF == 3 { to[$2] = $3; next }
        function out() {
            if (s == "") return
            m = "*"
            if (id in to) m = to[id]
            else if (r ~ /^run_on: all: [^ ]+ /) { m = substr(r, 14); sub(/ .*/, "", m) }
            else if (o == "lost" || st != "" || id ~ /\.[0-9]+$/) m = nd
            print s, (u == "" ? s : u), o, m, (st == "" ? "1970-01-01T00:00:00Z" : st), d + 0
        }
        /^[0-9]+-[0-9]+$/ { out(); s = u = o = st = id = nd = r = k = ""; d = 0; next }
        k == "scheduled_at" { s = $0 } k == "until" { u = $0 } k == "outcome" { o = $0 }
        k == "started" { st = $0 } k == "duration_ms" { d = $0 } k == "run_id" { id = $0 }
        k == "node" { nd = $0 } k == "reason" { r = $0 }
        { k = (k == "" ? $0 : "") }
        END { out() }')
    [ -n "$raw" ] || return 0
    paste -d' ' <(awk '{print $1}' <<<"$raw" | date -u -f - +%s) \
                <(awk '{print $2}' <<<"$raw" | date -u -f - +%s) \
                <(awk '{print $3, $4}' <<<"$raw") \
                <(awk '{print $5}' <<<"$raw" | date -u -f - +%s%3N) \
                <(awk '{print $6}' <<<"$raw") |
        awk '{ printf "%d %d %s %s %.0f %.0f\n", $1, $2, $3, $4, $5, $5 + $6 }'
}

# check_ledger_members LEDGER HISTORY FAULTS NODES LEASE_MS POLICY: the
# checks of a run_on: all ledger (lines "BATON_SCHEDULED_AT BATON_FENCE
# BATON_NODE"), over every tick from its first to its last line. HISTORY:
# history_members's lines; FAULTS: "ms what node" lines, what one of start
# (the node's process spawned), kill, term, stop, cont, and "ms redis-down
# -" / "ms redis-up -"; NODES: the members' names. The rule, for each node
# n and tick t:
#   - n ran t at most once (0 doubled);
#   - n is "in" for t when, over the whole window [t - 2 s, t + lease +
#     2 s], its process was running and not stopped (started 1 s or more
#     before the window: a supervisor heartbeats and hears its offers
#     within that), it was not being killed, stopped or shut down, and
#     redis-server was up: nothing excuses such a node from a tick
#     without a record; outside that window, a node gone, frozen or
#     leaving may or may not have run t (an offer made before its fault,
#     a backlog offered after its return): either is right, doubled is
#     not;
#   - an "in" node ran t, or a record says why: about the whole tick
#     (replace: superseded, killed; failed_to_start: a claim that did not
#     start, no live member) or about n (forbid, which applies per node
#     on all: skipped while n's own earlier run was alive during t;
#     replace, per node too: superseded, a newer tick offered to n before
#     it took t; failed_to_start: its offer not accepted in time, or accepted and
#     lost before its start; lost; killed after it started: it ran, once,
#     before writing its line). Missed, a run's end without its line, a
#     whole tick skipped (forbid never skips a tick on every node for one
#     node's run), a node skipped while no run of its own lived, or no
#     record at all: missing;
#   - sorted by tick, the fences never go down.
# Prints one line "ran in down recorded not_started_in doubled missing
# fence_regressions" (pairs: ran, checked "in", left out while down,
# recorded, of which failed_to_start on an "in" node) and, when any
# check fails, the first failures on stderr; returns 1 then.
check_ledger_members() {
    local ledger=$1 history=$2 faults=$3 nodes=$4 lease_ms=$5 policy=$6
    awk '{print $1}' "$ledger" | date -u -f - +%s | paste -d' ' - <(awk '{print $3, $2}' "$ledger") |
        sort -k1,1n -k2,2 > "$ledger.ran"
    sort -n "$faults" | awk -v nodes="$nodes" -v lease="$lease_ms" -v policy="$policy" '
        FILENAME == ARGV[1] { # tick node fence
            if (($1, $2) in ran) { doubled++; if (doubled <= 10) bad = bad " " $1 "/" $2 "(twice)" }
            ran[$1, $2]++
            if ($3 + 0 < fence + 0) { regress++; if (regress <= 3) bad = bad " " $1 "/" $2 "(fence down)" }
            fence = $3
            if (first == "" || $1 < first) first = $1
            if ($1 > last) last = $1
            next
        }
        FILENAME == ARGV[2] { h++; hs[h] = $1; hu[h] = $2; ho[h] = $3; hm[h] = $4; hst[h] = $5; he[h] = $6; next }
        # the faults, by time: the intervals "in" of each node, redis-server down
        $2 == "redis-down" { rd = $1; next }
        $2 == "redis-up" { nr++; rfrom[nr] = rd; rto[nr] = $1; rd = ""; next }
        $2 == "start" { since[$3] = $1 + 1000; next }
        $2 == "cont" { since[$3] = $1; next }
        { if ($3 in since) { ni[$3]++; a[$3, ni[$3]] = since[$3]; b[$3, ni[$3]] = $1; delete since[$3] } }
        function is_in(n, t,   ws, we, i) {
            ws = t * 1000 - 2000; we = t * 1000 + lease + 2000
            for (i = 1; i <= nr; i++) if (rfrom[i] <= we && rto[i] >= ws) return 0
            if (rd != "" && rd <= we) return 0
            for (i = 1; i <= ni[n]; i++) if (a[n, i] <= ws && b[n, i] >= we) return 1
            return (n in since) && since[n] <= ws
        }
        # why n did not run t: the outcome of a record about t and n (or
        # the whole tick), "" none
        function why(n, t,   i) {
            for (i = 1; i <= h; i++)
                if (hs[i] <= t && t <= hu[i] && (hm[i] == n || hm[i] == "*")) return i
            return 0
        }
        function alive_at(t, n,   i) { # a run of the job on n alive during tick t
            for (i = 1; i <= h; i++)
                if (hm[i] == n && hst[i] > 0 && hst[i] <= t * 1000 + 1000 && he[i] >= t * 1000) return 1
            return 0
        }
        END {
            nn = split(nodes, nv, " ")
            for (t = first; t <= last; t++) for (k = 1; k <= nn; k++) {
                n = nv[k]
                if ((t, n) in ran) { r++; if (is_in(n, t)) checked++; continue }
                i = why(n, t); o = i ? ho[i] : ""
                ok = 0
                if (o == "skipped") ok = policy == "forbid" && hm[i] == n && alive_at(t, n)
                else if (o == "superseded" || (o == "killed" && hst[i] == 0)) ok = policy == "replace"
                else if (o == "killed" || o == "lost" || o == "failed_to_start") ok = 1
                if (!is_in(n, t)) { if (ok) rec++; else down++; continue }
                checked++
                if (ok) { rec++; if (o == "failed_to_start") nsi++; continue }
                missing++
                if (missing <= 10) bad = bad " " t "/" n "(" (o == "" ? "no record" : o) ")"
            }
            if (bad != "") print "ticks/nodes:" bad > "/dev/stderr"
            printf "%d %d %d %d %d %d %d %d\n", r, checked, down, rec, nsi, doubled, missing, regress
            exit bad != ""
        }' "$ledger.ran" "$history" -
}
