# test_cli_docs.sh -- the command documents itself completely and truly:
# every option its --help lists is one the parser accepts, and every option
# the parser accepts is in --help, in the man page and in both completions;
# --version works after every command; `baton run --help` has the signals
# and every configuration key; the man pages render without a warning; the
# bash completion loads and completes commands, options, option values and
# job names from the configuration; the zsh completion parses.
. "$BATON_TESTS_DIR/lib/harness.sh"
B=$BATON_BIN
SRC=$BATON_SOURCE_DIR
MAN=$SRC/deploy/man
COMP=$SRC/deploy/completion
version=$("$B" --version)
[[ $version =~ ^baton\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "baton --version: $version"

cmds=$("$B" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/ {print $1}')
[ "$(printf '%s\n' "$cmds" | wc -l)" -ge 9 ] || fail "baton --help lists: $cmds"
man_text=$(MANWIDTH=200 man -l "$MAN/baton.1" 2>/dev/null)
for cmd in $cmds; do
    "$B" "$cmd" --help >"$T/help" 2>"$T/err" || fail "baton $cmd --help failed: $(cat "$T/err")"
    head -n1 "$T/help" | grep -q "^usage: baton $cmd" || fail "baton $cmd --help: $(head -n1 "$T/help")"
    for section in "options:" "exit status:"; do
        grep -qx "$section" "$T/help" || fail "baton $cmd --help has no '$section'"
    done
    assert_eq "$version" "$("$B" "$cmd" --version)" "baton $cmd --version"
    grep -q "^   baton $cmd\$" <<<"$man_text" || fail "baton(1) has no section for $cmd"
    # Every option in the help, with its value name when it takes one.
    opts=$(sed -n '/^options:$/,/^$/p' "$T/help" | grep -oE '^  (-[a-zA-Z], )?--[a-z-]+( [A-Z]+)?|^      --[a-z-]+( [A-Z]+)?')
    [ -n "$opts" ] || fail "baton $cmd --help lists no options"
    while read -r line; do
        long=$(grep -oE -- '--[a-z-]+' <<<"$line")
        arg=$(grep -oE ' [A-Z]+$' <<<"$line")
        # The parser knows it: given (with a value), it is never "unknown".
        if [ -n "$arg" ]; then "$B" "$cmd" "$long" x >/dev/null 2>"$T/err" </dev/null
        else timeout 10 "$B" "$cmd" "$long" >/dev/null 2>"$T/err" </dev/null; fi
        grep -q "unknown option" "$T/err" && fail "baton $cmd: $long is in --help but unknown: $(cat "$T/err")"
        # The man page and the completions know it too.
        grep -qF -- "$long" <<<"$(sed -n "/^   baton $cmd\$/,/^   baton /p" <<<"$man_text")" \
            || fail "baton(1) lacks $cmd $long"
        grep -qF -- "$long" "$COMP/baton.bash" || fail "bash completion lacks $long"
        grep -qF -- "'$long" "$COMP/_baton" || grep -qF -- ",$long" "$COMP/_baton" \
            || fail "zsh completion lacks $long"
    done <<<"$opts"
    # And the reverse: an option the help does not list is unknown.
    "$B" "$cmd" --no-such-option >/dev/null 2>"$T/err" </dev/null
    assert_eq "baton: $cmd: --no-such-option: unknown option (see 'baton $cmd --help')" "$(cat "$T/err")" "$cmd: unknown option"
done
note "help, man page and completions list every option of every command"

"$B" run --help >"$T/help"
grep -qx "signals:" "$T/help" || fail "baton run --help: no signals"
for sig in "TERM, INT" HUP "second TERM"; do grep -q "^  $sig " "$T/help" || fail "baton run --help: no $sig"; done
keys=$("$B" check --reference | sed -n '/^### baton.yaml/,/^### jobs.yaml/p' | grep -oE '^\| `[a-z_.]+`' | tr -d '|` ')
at_least 15 "baton.yaml keys in the reference" "$keys"
for key in $keys; do
    grep -qE "^  $key( |$)" "$T/help" || fail "baton run --help does not list the key $key"
done
note "baton run --help: signals and every configuration key"

note "man pages render without warnings at 80, 60 and 140 columns"
for page in baton.1 baton.yaml.5 jobs.yaml.5 libbaton.3; do
    for width in 80 60 140; do
        warn=$(MANWIDTH=$width man --warnings -l "$MAN/$page" 2>&1 >/dev/null)
        [ -z "$warn" ] || fail "man -l $page at $width columns: $warn"
    done
    MANWIDTH=80 man -l "$MAN/$page" 2>/dev/null | grep -q "^NAME" || fail "$page has no NAME"
done
keys=$("$B" check --reference | sed -n '/^### baton.yaml/,/^### Log events/p' | grep -oE '^\| `[a-z_.]+`' | tr -d '|` ')
at_least 30 "baton.yaml and jobs.yaml keys in the reference" "$keys"
for key in $keys; do
    MANWIDTH=200 man -l "$MAN/baton.yaml.5" "$MAN/jobs.yaml.5" 2>/dev/null | grep -qE "^       $key \(" \
        || fail "baton.yaml(5)/jobs.yaml(5) lack $key"
done
evs=$("$B" check --reference | sed -n '/^### Log events/,$p' | grep -oE '^\| `[a-z_]+`' | tr -d '|` ')
at_least 50 "log events in the reference" "$evs"
for ev in $evs; do
    MANWIDTH=200 man -l "$MAN/baton.1" 2>/dev/null | grep -qE "^       $ev \(" \
        || fail "baton(1) lacks the log event $ev"
done
# Every variable a run and a hook get (the tables of run.h and hook.h, as
# check --reference lists them), each described in jobs.yaml(5)'s ENVIRONMENT.
vars=$("$B" check --reference | sed -n '/^### The environment of/,$p' | grep -oE '^\| `BATON_[A-Z_]+`' | tr -d '|` ' | sort -u)
[ "$(echo "$vars" | wc -l)" -ge 17 ] || fail "check --reference lists too few variables: $vars"
env_section=$(MANWIDTH=200 man -l "$MAN/jobs.yaml.5" 2>/dev/null | sed -n '/^ENVIRONMENT/,/^SEE ALSO/p')
for v in $vars; do
    grep -qE "^       $v\$" <<<"$env_section" || fail "jobs.yaml(5)'s ENVIRONMENT lacks $v"
done
MANWIDTH=200 man -l "$MAN/libbaton.3" 2>/dev/null | grep -q "baton_with_lock" || fail "libbaton(3) lacks baton_with_lock"

note "bash completion: loads, completes commands, options, values and job names"
cat >"$T/jobs.yaml" <<'EOF'
jobs:
  - {name: nightly-backup, schedule: "@daily", shell: "true"}
  - {name: night-report, schedule: "@daily", command: ["true"]}
  - {name: tick, schedule: "@hourly", shell: "true"}
EOF
printf 'jobs: jobs.yaml\n' >"$T/baton.yaml"
# complete WORDS...: the candidates for the last word, sorted, one line.
complete_words() {
    PATH=$(dirname "$B"):$PATH bash --norc --noprofile -c '
        source "$1" || exit 9
        shift
        COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
        _baton
        printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' _ "$COMP/baton.bash" "$@"
}
assert_eq "help history " "$(complete_words baton h)" "commands starting with h"
assert_eq "check " "$(complete_words baton che)" "commands starting with che"
assert_eq "--json " "$(complete_words baton status --j)" "status --j"
assert_eq "--kill-grace " "$(complete_words baton lock --k)" "lock --k"
assert_eq "always auto " "$(complete_words baton logs --color a)" "logs --color a"
assert_eq "Europe/Berlin " "$(complete_words baton next --tz Europe/Berl)" "next --tz Europe/Berl"
assert_eq "night-report nightly-backup " "$(complete_words baton history -c "$T/baton.yaml" nigh)" "history JOB"
assert_eq "tick " "$(complete_words baton history --config "$T/baton.yaml" --count 3 t)" "history JOB after options"
assert_eq "exit-codes " "$(complete_words baton help exi)" "help topics"
(cd "$T" && assert_eq "$T/baton.yaml " "$(complete_words baton check -c "$T/bat")" "-c FILE")
bash --norc -c "source '$COMP/baton.bash' && complete -p baton" | grep -q -- "-F _baton baton" \
    || fail "the bash completion does not register _baton for baton"

note "zsh completion parses"
command -v zsh >/dev/null || fail "zsh is not installed (bash deploy/setup.sh installs it)"
zsh -n "$COMP/_baton" || fail "zsh -n _baton"
head -n1 "$COMP/_baton" | grep -qx '#compdef baton' || fail "_baton does not start with #compdef baton"
note "ok"
