#!/usr/bin/env bash
# System packages the tests need; idempotent. `bash install.sh test` runs it (as root or with sudo).
#   bubblewrap: the sandbox that runs model-written code (boundlab.sandbox). Code tests fail
#   without it in CI (CI=true) instead of skipping.
#   libseccomp2: libseccomp, which compiles the sandbox's seccomp filter for this machine's
#   architecture (boundlab.sandbox.seccomp loads it through ctypes; without it code is refused).
#   chromium, chromium-driver: headless Chromium and /usr/bin/chromedriver for the dashboard's
#   browser tests (tests/integration/test_dashboard_browser.py drives them through selenium; a
#   browser that downloads itself at install time cannot work offline).
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
if ! command -v bwrap >/dev/null 2>&1; then
  $SUDO apt-get update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bubblewrap
fi
bwrap --version
if ! ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2'; then
  $SUDO apt-get update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libseccomp2
fi
if ! command -v chromium >/dev/null 2>&1 || [ ! -x /usr/bin/chromedriver ]; then
  $SUDO apt-get update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver
fi
chromium --version
