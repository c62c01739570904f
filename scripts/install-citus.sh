#!/usr/bin/env bash
# Builds and installs the Citus extension into the machine's PostgreSQL (Debian), once: does nothing
# when citus.so and the extension's control file are already in place.
#
# No Debian release reachable here packages Citus, so this builds it from a source tarball
# (CITUS_SOURCE, default the Citus 13.2.2 tarball kept in the steering repo's shared/vendor/citus/),
# applying the patch beside it that PostgreSQL 15.20 needs. With internet access, use Citus's
# official packages instead (see README). Installing the library needs no restart of the machine's
# server: only servers started with shared_preload_libraries='citus' load it (the test cluster).
#
#   scripts/install-citus.sh                          as root on the database machine
#   CITUS_SOURCE=/path/citus-X.tar.gz                 another source tarball
#   CITUS_PATCH=/path/fix.patch                       its patch (default: the one beside the tarball, if any)
set -euo pipefail

say() { echo "install-citus: $*"; }
die() { echo "install-citus: $*" >&2; exit 1; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEFAULT_SOURCE=$ROOT/../shared/vendor/citus/citus-13.2.2.tar.gz
SOURCE=${CITUS_SOURCE:-$DEFAULT_SOURCE}

PG_CONFIG=${PG_CONFIG:-}
if [ -z "$PG_CONFIG" ]; then
  if [ -d /etc/postgresql ] && [ "$(ls /etc/postgresql | wc -l)" -eq 1 ]; then
    PG_CONFIG=/usr/lib/postgresql/$(ls /etc/postgresql)/bin/pg_config
  else
    die "cannot tell the PostgreSQL version: /etc/postgresql does not hold exactly one version; set PG_CONFIG"
  fi
fi
MAJOR=$(basename "$(dirname "$(dirname "$PG_CONFIG")")")
LIBDIR=/usr/lib/postgresql/$MAJOR/lib
SHAREDIR=/usr/share/postgresql/$MAJOR

if [ -f "$LIBDIR/citus.so" ] && [ -f "$SHAREDIR/extension/citus.control" ]; then
  say "Citus is already installed for PostgreSQL $MAJOR; nothing to do"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || die "Citus is missing for PostgreSQL $MAJOR; run this script as root (sudo $0)"
[ -f "$SOURCE" ] || die "Citus is missing for PostgreSQL $MAJOR and its source tarball is not at $SOURCE; set CITUS_SOURCE"
PATCH=${CITUS_PATCH:-$(find "$(dirname "$SOURCE")" -maxdepth 1 -name '*.patch' | sort | head -n 1)}

export DEBIAN_FRONTEND=noninteractive
# Citus links libpq and the server's security libraries: without libkrb5-dev the build stops at gssapi/gssapi.h.
missing=()
for pkg in build-essential "postgresql-server-dev-$MAJOR" libkrb5-dev liblz4-dev libzstd-dev libselinux1-dev \
  libpam0g-dev libxslt1-dev libreadline-dev libssl-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing the build dependencies ${missing[*]}"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
    die "could not install ${missing[*]} with apt-get"
fi

WORK=$(mktemp -d /tmp/install-citus.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# A `git archive` tarball has no top directory, a release tarball has one: unpack into a folder of its own.
mkdir "$WORK/src"
tar xzf "$SOURCE" -C "$WORK/src"
SRC=$WORK/src
[ -f "$SRC/configure" ] || SRC=$(find "$WORK/src" -mindepth 1 -maxdepth 1 -type d | head -n 1)
[ -f "$SRC/configure" ] || die "$SOURCE did not unpack to a source tree with a configure script"
if [ -n "$PATCH" ]; then
  say "applying $(basename "$PATCH")"
  (cd "$SRC" && patch -s -p1 <"$PATCH")
fi

# with_llvm=no: no LLVM bitcode for JIT, so clang is not needed (the server runs Citus without it).
say "building $(basename "$SOURCE") against PostgreSQL $MAJOR (a few minutes of CPU)"
(cd "$SRC" && ./configure -q --without-libcurl PG_CONFIG="$PG_CONFIG" >/dev/null &&
  make -s -j "$(nproc)" with_llvm=no >/dev/null && make -s install with_llvm=no >/dev/null) ||
  die "the build failed (run the steps by hand in an unpacked $SOURCE to see why)"

[ -f "$LIBDIR/citus.so" ] && [ -f "$SHAREDIR/extension/citus.control" ] ||
  die "the build finished, but $LIBDIR/citus.so or $SHAREDIR/extension/citus.control is missing"
say "Citus installed for PostgreSQL $MAJOR"
