# readme-reference.sh [--update] -- the configuration reference in README.md
# is `baton check --reference` between its markers. Without --update, exits 1
# (with a diff) when they differ; with it, rewrites the block.
#   BATON_BIN=build/release/baton bash tests/lib/readme-reference.sh --update
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
readme=$here/README.md
begin='<!-- BEGIN REFERENCE: baton check --reference -->'
end='<!-- END REFERENCE -->'
want=$(mktemp); have=$(mktemp); trap 'rm -f "$want" "$have"' EXIT
"${BATON_BIN:-baton}" check --reference > "$want" || exit 2
awk -v b="$begin" -v e="$end" '$0 == e {on = 0} on {print} $0 == b {on = 1}' "$readme" > "$have"
if [ "${1:-}" = "--update" ]; then
    awk -v b="$begin" -v e="$end" -v f="$want" '
        $0 == b {print; while ((getline l < f) > 0) print l; skip = 1; next}
        $0 == e {skip = 0}
        !skip {print}' "$readme" > "$readme.new" && mv "$readme.new" "$readme"
    exit 0
fi
if ! diff -u "$have" "$want"; then
    echo "README.md's configuration reference differs from 'baton check --reference';" >&2
    echo "regenerate it: BATON_BIN=... bash tests/lib/readme-reference.sh --update" >&2
    exit 1
fi
