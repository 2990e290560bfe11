#!/usr/bin/env bash
# Debian packages the tests run for real on loopback, each started by the tests themselves:
#   postgresql  - the reservation record's database (greenops/local/postgres.py). Debian's package
#                 rather than the pgserver wheel: the security-maintained build for this OS, the
#                 major version the platform deploys.
#   nginx-light - the data plane of an NGINX ingress controller, configured from the Ingresses the
#                 platform declares (tests/support/ingress.py): the external route to OPA and the scheduler.
#   cloud-init  - its own schema check of the user-data the renderers and the chart write (the
#                 command only: nothing of it runs on this machine).
#   chromium    - a real headless browser for the dashboard's test (tests/support/browser.py).
#   chromium-driver - the WebDriver built from the same source as chromium, so their versions
#                 always match (Selenium is given its path and never downloads a driver).
# Usage: install-deb.sh <package> <a path its binary has, glob allowed>. Downloads are cached
# outside the checkout.
set -euo pipefail
package="$1" probe="$2"
if compgen -G "$probe" >/dev/null; then
  echo "[$package] $(compgen -G "$probe" | tail -1) (installed)"
  exit 0
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/greenops/apt"
mkdir -p "$cache/partial"
sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
install() {
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o Dir::Cache::Archives="$cache" -o Dpkg::Use-Pty=0 \
    install -y -qq --no-install-recommends "$package" >/dev/null
}
install || { $sudo apt-get update -qq && install; }
echo "[$package] $(compgen -G "$probe" | tail -1) (installed now)"
