#!/usr/bin/env bash
# A real PostgreSQL server for the reservation record's tests and benchmark (the cluster path's
# database). Debian's `postgresql` package rather than the pgserver wheel: it is the security-
# maintained build for this OS, the same major version the platform deploys, and the tests start
# their own throw-away cluster on loopback from its binaries (greenops/local/postgres.py).
# Downloaded packages are cached outside the checkout.
set -euo pipefail
if compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; then
  echo "[postgres] $(ls -d /usr/lib/postgresql/*/bin/postgres | tail -1) (installed)"
  exit 0
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/greenops/apt"
mkdir -p "$cache/partial"
sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
install() {
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o Dir::Cache::Archives="$cache" -o Dpkg::Use-Pty=0 \
    install -y -qq --no-install-recommends postgresql >/dev/null
}
install || { $sudo apt-get update -qq && install; }
echo "[postgres] $(ls -d /usr/lib/postgresql/*/bin/postgres | tail -1) (installed now)"
