#!/usr/bin/env bash
# Installs pgvector into the machine's PostgreSQL server (Debian), once: does nothing when the
# server at 127.0.0.1:5432 already offers the `vector` extension and its library is in place.
#
# Debian bookworm ships no pgvector package for its PostgreSQL 15, so this builds Debian's own
# pgvector *source* package from the next release (trixie), fetched with `apt-get source` through a
# private apt configuration (its own sources list, lists and cache under a temporary directory) on
# the mirror the machine already uses. The system's apt sources are not touched. Installing an
# extension needs no server restart; this script never restarts the server.
#
#   scripts/install-pgvector.sh            as root (or with sudo) on the database machine
#   PGVECTOR_SOURCE_SUITE=trixie           the release to take the source from (default: the next one)
set -euo pipefail

say() { echo "install-pgvector: $*"; }
die() { echo "install-pgvector: $*" >&2; exit 1; }

# The server's major version: from the running server, else from its one configured cluster.
server_major() {
  local num
  if num=$(psql -h 127.0.0.1 -p 5432 -U postgres -w -d postgres -Atc 'SHOW server_version_num' 2>/dev/null); then
    echo $((num / 10000))
  elif [ -d /etc/postgresql ] && [ "$(ls /etc/postgresql | wc -l)" -eq 1 ]; then
    ls /etc/postgresql
  else
    die "cannot tell the PostgreSQL version: no server answers at 127.0.0.1:5432 and /etc/postgresql does not hold exactly one version"
  fi
}

MAJOR=$(server_major)
LIBDIR=/usr/lib/postgresql/$MAJOR/lib
SHAREDIR=/usr/share/postgresql/$MAJOR

# Installed when the library is there and the server lists the extension (pg_available_extensions
# reads the control files on every call); without a reachable server, the control file stands in.
installed() {
  [ -f "$LIBDIR/vector.so" ] || return 1
  local listed
  if listed=$(psql -h 127.0.0.1 -p 5432 -U postgres -w -d postgres -Atc \
    "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'" 2>/dev/null); then
    [ "$listed" = 1 ]
  else
    [ -f "$SHAREDIR/extension/vector.control" ]
  fi
}

if installed; then
  say "pgvector is already installed for PostgreSQL $MAJOR; nothing to do"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || die "pgvector is missing for PostgreSQL $MAJOR; run this script as root (sudo $0)"

. /etc/os-release
SUITE=${PGVECTOR_SOURCE_SUITE:-}
if [ -z "$SUITE" ]; then
  case "${VERSION_CODENAME:-}" in
    bookworm) SUITE=trixie ;;
    *) die "no default source release for Debian '${VERSION_CODENAME:-unknown}'; set PGVECTOR_SOURCE_SUITE (or install postgresql-$MAJOR-pgvector with apt if the release has it)" ;;
  esac
fi

export DEBIAN_FRONTEND=noninteractive

# The build tools and server headers, from the machine's own Debian release.
missing=()
for pkg in build-essential "postgresql-server-dev-$MAJOR"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing ${missing[*]}"
  # a bare machine may have no (or stale) package lists
  apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; }
fi

# The mirror (and its signing keyring) the machine uses for its own release, read from its apt
# sources in either format: deb822 (*.sources) or one-line (sources.list, *.list). Plain POSIX awk
# (a bare Debian has mawk).
read_mirror() {
  local files=()
  [ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  [ "${#files[@]}" -gt 0 ] || return 0
  awk -v suite="$VERSION_CODENAME" '
    function emit(uri, key) { if (!found) { print uri " " key; found = 1 } }
    function check(   s, n, i, u) {
      if (stanza["types"] ~ /(^| )deb( |$)/ && stanza["enabled"] != "no") {
        n = split(stanza["suites"], s, " ")
        for (i = 1; i <= n; i++) if (s[i] == suite) { split(stanza["uris"], u, " "); emit(u[1], stanza["signed-by"]) }
      }
      split("", stanza)
    }
    FNR == 1 { check(); deb822 = FILENAME ~ /[.]sources$/ }
    deb822 {
      if ($0 ~ /^[ \t]*$/) { check(); next }
      if ($0 ~ /^[ \t#]/) next  # comments, and continuation lines (an inline key block)
      field = tolower($1); sub(/:$/, "", field); $1 = ""; sub(/^ +/, "")
      stanza[field] = $0
      next
    }
    /^[ \t]*deb[ \t]/ {
      key = ""
      if ($2 ~ /^[[]/) {  # [ options ]: take signed-by, drop the rest
        while ($2 != "" && $2 !~ /[]]$/) { if ($2 ~ /^[[]?signed-by=/) key = $2; $2 = ""; $0 = $0 }
        if ($2 ~ /^[[]?signed-by=/) key = $2
        $2 = ""; $0 = $0
        sub(/^[[]?signed-by=/, "", key); sub(/[]]$/, "", key)
      }
      if ($3 == suite) emit($2, key)
    }
    END { check() }
  ' "${files[@]}"
}

read -r MIRROR KEYRING < <(read_mirror) || true
[ -n "${MIRROR:-}" ] || die "no apt source for '$VERSION_CODENAME' in /etc/apt/sources.list or /etc/apt/sources.list.d/"
case "$KEYRING" in /*) ;; *) KEYRING="" ;; esac  # an inline key block: fall back to apt's trusted keys

WORK=$(mktemp -d /tmp/install-pgvector.XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lists/partial" "$WORK/cache/archives/partial" "$WORK/src"
echo "deb-src ${KEYRING:+[signed-by=$KEYRING] }$MIRROR $SUITE main" >"$WORK/sources.list"
# apt downloads as the unprivileged _apt user where it exists
id _apt >/dev/null 2>&1 && chown -R _apt "$WORK/lists" "$WORK/cache" "$WORK/src"
APT=(-o "Dir::Etc::sourcelist=$WORK/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$WORK/lists"
  -o "Dir::Cache=$WORK/cache" -o Acquire::Languages=none)

say "fetching Debian's pgvector source package from $SUITE on $MIRROR"
apt-get "${APT[@]}" update -qq
(cd "$WORK/src" && apt-get "${APT[@]}" source -qq --only-source pgvector)
SRC=$(find "$WORK/src" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n 1)
[ -n "$SRC" ] || die "apt-get source did not unpack pgvector"

# OPTFLAGS empty, as Debian builds it: no -march=native, so the library runs on any x86-64 host.
say "building $(basename "$SRC") against PostgreSQL $MAJOR"
PG_CONFIG=/usr/lib/postgresql/$MAJOR/bin/pg_config
make -s -C "$SRC" -j "$(nproc)" PG_CONFIG="$PG_CONFIG" OPTFLAGS=""
make -s -C "$SRC" install PG_CONFIG="$PG_CONFIG" OPTFLAGS=""

installed || die "pgvector was built and installed, but the server still does not list it"
say "pgvector installed for PostgreSQL $MAJOR (no server restart needed)"
