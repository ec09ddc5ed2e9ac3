#!/usr/bin/env bash
# What the tests need from the machine besides node_modules (issue 37), checked once before any
# test runs: `npm test` runs it first, and .ci/run runs it before `npm ci` too (which may have to
# build the SQLite addon), so the README's two commands are the whole set-up. On Debian, as root
# or with password-less sudo, it installs what is missing; otherwise it names each missing part
# with the command that installs it, once, and fails before any test runs. Nothing is skipped:
# a test that needs a part would fail later, one file at a time, with less to go on.
#
#   bash scripts/test-setup.sh         check (and, as root or with sudo -n, install)
#   sudo bash scripts/test-setup.sh    install everything missing
set -euo pipefail
cd "$(dirname "$0")/.."

# The interpreter and browser the tests use: test/hf/fixtures.ts and the model tests run the
# PyTorch peers (bench/peers) with /usr/bin/python3; test/e2e/browser.ts drives MARSRL_CHROMIUM
# or Debian's /usr/bin/chromium through playwright-core.
PYTHON=/usr/bin/python3
CHROMIUM=${MARSRL_CHROMIUM:-/usr/bin/chromium}
SQLITE_ADDON=node_modules/better-sqlite3/build/Release/better_sqlite3.node
MESA_MIN=23

is_root() { [ "$(id -u)" = 0 ]; }
has_apt() { command -v apt-get >/dev/null 2>&1; }
# How this user runs apt-get as root: directly, through password-less sudo, or not at all (then
# the missing parts are named for a person to install).
as_root() {
  if is_root; then "$@"; else sudo -n "$@"; fi
}
can_install() { has_apt && { is_root || sudo -n true 2>/dev/null; }; }
mesa_vulkan_version() { dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true; }
torch_ready() { [ -x "$PYTHON" ] && "$PYTHON" -c 'import importlib.util as u, sys; sys.exit(0 if u.find_spec("torch") and u.find_spec("numpy") else 1)' 2>/dev/null; }

# The command a person runs for Debian packages (the tests' target system is Debian 12).
apt_command() {
  if has_apt; then echo "sudo apt-get install -y $*"; else echo "install the equivalents of Debian's $* with this system's package manager"; fi
}

# Each check appends what is missing: apt packages to install, and one line for a person.
packages=()
mesa_missing=0
lines=()
present=()

check() {
  packages=()
  mesa_missing=0
  lines=()
  present=()
  # better-sqlite3 builds from source (node-gyp: a C++ compiler, make, Python) when npm ci cannot
  # fetch a prebuilt binary; once the addon is built they are not needed.
  if [ -f "$SQLITE_ADDON" ]; then
    present+=("SQLite addon built")
  else
    local tools=() tool
    for tool in g++ make python3; do command -v "$tool" >/dev/null 2>&1 || tools+=("$tool"); done
    if [ ${#tools[@]} -gt 0 ]; then
      packages+=("${tools[@]}")
      lines+=("${tools[*]} (npm ci builds the SQLite addon with them when it cannot download one): $(apt_command "${tools[@]}")")
    else
      present+=("build tools")
    fi
  fi
  if [ -x "$CHROMIUM" ]; then
    present+=("Chromium $CHROMIUM")
  elif [ -n "${MARSRL_CHROMIUM:-}" ]; then
    lines+=("Chromium at MARSRL_CHROMIUM=$MARSRL_CHROMIUM (the end-to-end UI tests drive it): no executable there; point MARSRL_CHROMIUM at a Chromium binary, or unset it and $(apt_command chromium)")
  else
    packages+=(chromium)
    lines+=("Chromium at $CHROMIUM (the end-to-end UI tests drive it): $(apt_command chromium)")
  fi
  if torch_ready; then
    present+=("PyTorch and NumPy for $PYTHON")
  else
    packages+=(python3-torch python3-numpy)
    lines+=("PyTorch and NumPy for $PYTHON (the model tests compare with a PyTorch peer, bench/peers): $(apt_command python3-torch python3-numpy)")
  fi
  # The webgpu tests (test/model/webgpu*.test.ts, test/hf/webgpu*.test.ts) run on Mesa's llvmpipe
  # Vulkan driver. Debian 12's mesa-vulkan-drivers (22.3) gives Dawn no adapter; Mesa 25 from
  # bookworm-backports does.
  if command -v dpkg-query >/dev/null 2>&1; then
    local mesa
    mesa=$(mesa_vulkan_version)
    if dpkg --compare-versions "$mesa" ge "$MESA_MIN" 2>/dev/null; then
      present+=("Mesa Vulkan driver $mesa")
    else
      mesa_missing=1
      lines+=("Mesa's Vulkan driver $MESA_MIN or newer, found ${mesa:-none} (the WebGPU tests run on its llvmpipe; Debian 12's own 22.3 gives no adapter): sudo bash scripts/test-setup.sh (installs mesa-vulkan-drivers from bookworm-backports, leaving your apt sources as they are)")
    fi
  else
    present+=("Vulkan driver not checked (no dpkg here: the WebGPU tests need a WebGPU adapter, see the README's backend table)")
  fi
}

# mesa-vulkan-drivers from bookworm-backports through a private sources list and package lists:
# the machine's own apt configuration and lists stay as they are (an update with another sources
# list would drop the lists of suites it does not name). The machine's own Debian source is used,
# with the suite bookworm-backports added (no host named here).
install_mesa() {
  local apt_dir
  apt_dir=$(mktemp -d)
  chmod 755 "$apt_dir" # apt downloads as the _apt user
  mkdir -p "$apt_dir/lists/partial"
  sed -E 's/^Suites: .*bookworm( |$).*/Suites: bookworm bookworm-backports/' /etc/apt/sources.list.d/debian.sources >"$apt_dir/debian.sources"
  local apt_private=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt_dir" -o "Dir::State::Lists=$apt_dir/lists")
  as_root apt-get "${apt_private[@]}" update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get "${apt_private[@]}" install -y -qq -t bookworm-backports mesa-vulkan-drivers
  as_root rm -rf "$apt_dir"
}

check
if [ ${#lines[@]} -gt 0 ] && can_install; then
  echo "test set-up: installing what the tests need: ${packages[*]}$([ "$mesa_missing" = 1 ] && echo ' mesa-vulkan-drivers (bookworm-backports)')" >&2
  if [ ${#packages[@]} -gt 0 ]; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}"
  fi
  if [ "$mesa_missing" = 1 ]; then install_mesa; fi
  check
fi
if [ ${#lines[@]} -gt 0 ]; then
  {
    echo "test set-up: the tests need what is missing below (nothing was run):"
    printf '  - %s\n' "${lines[@]}"
    if ! is_root && has_apt; then echo "  or install them all at once: sudo bash scripts/test-setup.sh"; fi
  } >&2
  exit 1
fi
printf -v summary '%s; ' "${present[@]}"
echo "test set-up: ${summary%; }"
