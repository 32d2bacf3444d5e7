#!/usr/bin/env bash
# package.sh -- build baton's Debian 12 packages from this tree.
#
#   bash deploy/package.sh [OUTDIR]      OUTDIR: default build/packages
#
# Leaves in OUTDIR (relative to the top of the tree):
#   baton_VERSION_ARCH.deb         the command, baton-shim, the systemd unit,
#                                  the baton user (sysusers.d), /etc/baton
#                                  (tmpfiles.d) with sample conffiles, man
#                                  pages, bash and zsh completions
#   libbaton0_VERSION_ARCH.deb     the shared library
#   libbaton-dev_VERSION_ARCH.deb  baton.h, libbaton.a, baton.pc, libbaton(3)
#   *-dbgsym_*.deb, the .buildinfo and the .changes
# Install them on a Debian 12 server (apt fetches what they depend on):
#   apt-get install -y ./baton_*.deb ./libbaton0_*.deb ./libbaton-dev_*.deb
#
# The tree's files known to git (with their changes not yet committed, and
# nothing else: no build directory) are copied to a temporary directory with
# deploy/debian as its debian/, and dpkg-buildpackage builds them there.
# Works on a fresh Debian 12 as root (or with sudo): it installs what the
# build needs first (dpkg-dev, then debian/control's Build-Depends with
# build-essential), only what is missing. The version is deploy/debian's
# changelog's, which must be CMakeLists.txt's project version.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
out=${1:-build/packages}
case $out in /*) ;; *) out=$top/$out ;; esac

sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
updated=
apt_get() { # ARGS...: its output only when it fails
    local log rc=0
    log=$(mktemp)
    [ -n "$updated" ] || { $sudo apt-get update -qq >"$log" 2>&1 && updated=1; } || rc=$?
    [ "$rc" -ne 0 ] || DEBIAN_FRONTEND=noninteractive $sudo apt-get -y -qq --no-install-recommends "$@" \
        >"$log" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || cat "$log" >&2
    rm -f "$log"
    return "$rc"
}
missing=()
for p in dpkg-dev git; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "package: installing ${missing[*]}"
    apt_get install "${missing[@]}"
fi

version=$(dpkg-parsechangelog -l deploy/debian/changelog -S Version)
project=$(sed -n 's/^project(baton VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
case $version in
    "$project" | "$project"[-+~]*) ;;
    *) echo "package: deploy/debian/changelog says $version, CMakeLists.txt $project: add a changelog entry" >&2
       exit 1 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/baton-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree=$work/baton-$version
mkdir "$tree"
if [ -e .git ]; then # (a file deleted but not yet committed is left out)
    git ls-files -z | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$tree"
else
    tar --exclude='./build*' --exclude=./.cache -cf - . | tar -xf - -C "$tree"
fi
cp -r deploy/debian "$tree/debian"

# Build-Depends, and build-essential, which dpkg-buildpackage checks too.
if ! (cd "$tree" && dpkg-checkbuilddeps) >/dev/null 2>&1; then
    echo "package: installing the build dependencies of deploy/debian/control"
    apt_get build-dep "$tree"
fi

echo "package: building baton $version in $tree"
mkdir -p "$out"
if ! (cd "$tree" && DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
        dpkg-buildpackage -b -uc -us) >"$out/package-build.log" 2>&1; then
    tail -n 60 "$out/package-build.log"
    echo "package: the build failed (full log: $out/package-build.log)"
    exit 1
fi
# The previous build's packages go: OUTDIR holds one version, so that
# ./baton_*.deb names one file.
rm -f "$out"/baton_*.deb "$out"/libbaton0_*.deb "$out"/libbaton-dev_*.deb "$out"/*-dbgsym_*.deb \
    "$out"/*-dbgsym_*.ddeb "$out"/baton_*.buildinfo "$out"/baton_*.changes
mv "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes "$out"/
shopt -s nullglob
ddebs=("$work"/*.ddeb)
[ ${#ddebs[@]} -eq 0 ] || mv "${ddebs[@]}" "$out"/
echo "package: built in ${out#$top/}:"
(cd "$out" && ls -s --block-size=K baton_"$version"_*.deb libbaton0_"$version"_*.deb \
    libbaton-dev_"$version"_*.deb | sed 's/^/  /')
