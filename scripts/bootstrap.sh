#!/usr/bin/env bash
# Install what vnet needs on Debian 12, idempotently; quiet when all is there.
#   scripts/bootstrap.sh --demo   what `make demo` needs: the lab's tools, uv, and the
#                                 environment without the test toolchain
#   scripts/bootstrap.sh          the Python side of the tests as well (`make lint`, `make unit`)
#   scripts/bootstrap.sh --rust   also a Rust toolchain for the native crates (`make test`)
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION=0.13.9
TOOLS=.cache/tools
export UV_PYTHON_DOWNLOADS=never   # only package registries are reachable

# What `vnet demo` runs: the lab (iproute2), its probes (ping, fping, iperf3), the agents and
# the controller on SQLite (Python; the libyang binding is built from source against
# Debian's libyang2).
DEMO_PACKAGES=(iproute2 iputils-ping fping iperf3 python3 python3-venv
               gcc python3-dev libffi-dev libyang2-dev)
# Tools the tests and benchmarks run as independent programs.
TEST_PACKAGES=(tcpdump netsniff-ng openvswitch-switch openvswitch-common curl libyang2-tools
               # reference NETCONF server and client for comparisons and interop
               netconfd yangcli openssh-server openssh-client
               # SNMP: Net-SNMP clients and trap receiver for tests, smilint for the MIB;
               # erlang-snmp carries SNMPv2-SMI/-TC/-CONF and INET-ADDRESS-MIB (Debian's
               # own IETF MIB files are non-free) so smilint and the tools can load it
               smitools snmp snmptrapd erlang-snmp
               # routing inside VRs: zebra, ospfd, ospf6d and bfdd (the agent runs them)
               frr
               # the controller's PostgreSQL: the server tests start (initdb, postgres as nobody)
               # and libpq5, which psycopg 3 (pure Python) loads
               postgresql libpq5
               # the services' units are checked with systemd-analyze verify
               systemd
               # the web console's browser tests: Playwright drives Debian's Chromium by its
               # executable path (Playwright's own browser download is never used)
               chromium)
RUST_PACKAGES=(cargo-web rustc-web rust-web-clippy rustfmt-web)

want_rust=0 want_tests=1
case "${1:-}" in
  --rust) want_rust=1 ;;
  --demo) want_tests=0 ;;
  "") ;;
  *) echo "usage: scripts/bootstrap.sh [--demo | --rust]" >&2; exit 2 ;;
esac

APT_PACKAGES=("${DEMO_PACKAGES[@]}")
[ $want_tests = 1 ] && APT_PACKAGES+=("${TEST_PACKAGES[@]}")
missing=()
# the console's browser libraries come from the npm registry (see below): the demo shows it
command -v npm >/dev/null || APT_PACKAGES+=(nodejs npm)
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
# A cargo already on PATH (e.g. from rustup) is used if it is recent enough.
cargo_ok() {
  command -v cargo >/dev/null && cargo clippy --version >/dev/null 2>&1 &&
    [ "$(cargo --version | awk '{split($2, v, "."); print (v[1] > 1 || v[2] >= 80)}')" = 1 ]
}
if [ $want_rust = 1 ] && ! cargo_ok; then
  missing+=("${RUST_PACKAGES[@]}")
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "bootstrap: missing Debian packages: ${missing[*]}; run as root (sudo make ...)" >&2
    exit 1
  fi
  echo "bootstrap: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x "$TOOLS/bin/uv" ] || [ "$("$TOOLS/bin/uv" --version | awk '{print $2}')" != "$UV_VERSION" ]; then
  echo "bootstrap: installing uv $UV_VERSION into $TOOLS"
  rm -rf "$TOOLS"
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/pip" install -q --disable-pip-version-check "uv==$UV_VERSION"
fi

# --frozen: install exactly the committed lock; it is quick and silent when nothing changed.
# The tests: everything, the dev group and the benchmarks' numpy/scipy/matplotlib (`bench`)
# included. The demo: what its agents and its controller run (the `agent` and `controller`
# extras; without them `vnet demo` stopped at once, asking for the `all` extra), not the
# benchmarks'; --inexact keeps what an earlier full install added (a plain sync would remove
# the test toolchain from the environment).
if [ $want_tests = 1 ]; then
  "$TOOLS/bin/uv" sync --frozen --all-extras -q
else
  "$TOOLS/bin/uv" sync --frozen --no-dev --inexact --extra agent --extra controller -q
fi

# Byte-code for the installed libraries, once per lock: Debian's default environment may set
# PYTHONDONTWRITEBYTECODE=1, and then every agent and CLI start compiled the ~5000 modules it
# imports again (about a second of CPU per process; the tests start hundreds of processes).
# Python still reads .pyc files under that setting; an explicit compileall writes them. Some
# libraries ship files for other Python versions that do not compile: compileall reports them
# and goes on, so its exit status is not an error here.
stamp=.venv/.bytecode-for-lock$([ $want_tests = 1 ] || echo -demo)  # the demo installs less
if [ ! -f "$stamp" ] || ! cmp -s uv.lock "$stamp"; then
  .venv/bin/python -m compileall -q -j 0 .venv/lib >/dev/null 2>&1 || true
  cp uv.lock "$stamp"
fi

# The web console's browser libraries (htmx, Cytoscape.js) and the /docs pages' Swagger UI (the
# controller's API and the agent's RESTCONF, vnet.tools.api_docs), pinned by
# src/vnet/controller/ui/assets/package-lock.json: `npm ci` into .cache (no install scripts), the
# minified files copied beside the console's own static files and into src/vnet/tools/swagger-ui;
# again only when the lock changes. Each server serves them itself: no other site at run time.
ui=src/vnet/controller/ui
docs=src/vnet/tools/swagger-ui
if [ ! -f "$ui/static/vendor/.lock" ] || [ ! -f "$docs/.lock" ] \
  || ! cmp -s "$ui/assets/package-lock.json" "$ui/static/vendor/.lock"; then
  rm -rf .cache/ui-assets "$ui/static/vendor" "$docs"
  mkdir -p .cache/ui-assets "$ui/static/vendor" "$docs"
  cp "$ui/assets/package.json" "$ui/assets/package-lock.json" .cache/ui-assets/
  (cd .cache/ui-assets && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  modules=.cache/ui-assets/node_modules
  cp "$modules/htmx.org/dist/htmx.min.js" "$modules/htmx.org/LICENSE" "$ui/static/vendor/"
  mv "$ui/static/vendor/LICENSE" "$ui/static/vendor/htmx.LICENSE"
  cp "$modules/cytoscape/dist/cytoscape.min.js" "$ui/static/vendor/"
  cp "$modules/cytoscape/LICENSE" "$ui/static/vendor/cytoscape.LICENSE"
  swagger="$modules/swagger-ui-dist"  # the /docs pages
  cp "$swagger/swagger-ui-bundle.js" "$swagger/swagger-ui.css" "$swagger/favicon-32x32.png" "$docs/"
  cp "$swagger/LICENSE" "$docs/swagger-ui.LICENSE"
  cp "$ui/assets/package-lock.json" "$ui/static/vendor/.lock"
  cp "$ui/assets/package-lock.json" "$docs/.lock"
fi
