#!/bin/sh
# Runs INSIDE the older build root (packaging/linux/buildroot.py sets it up and enters it with chroot): builds a
# Python for the bundle there, installs vramdesk's dependencies into a venv, and runs PyInstaller, so every
# ELF file of the bundle links against this root's glibc (Debian 11: 2.31) instead of the build host's.
#
#   /src        the checkout (bind-mounted; dist/ and build/ are written there)
#   /opt/python the Python built here (kept between builds: rebuilt only when its source changes)
#   /opt/venv   vramdesk's build dependencies (remade when the constraints or pyproject change)
#
# Environment: PY_SOURCE (the Debian source package of the Python, e.g. python3.11), SOURCE_SUITE (the Debian
# release it and libxcb-cursor0 come from), MIRROR, JOBS.
set -eu
: "${PY_SOURCE:?}" "${SOURCE_SUITE:?}" "${MIRROR:?}" "${JOBS:=2}"
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8

stamp() { printf '[root] %s\n' "$*"; }

# --- a Python of our own, linked against this root's glibc ------------------------------------------------------
# The upstream tarball comes from Debian's source archive (apt checks it against the signed Sources index).
mkdir -p /build/sources && cd /build/sources
apt-get source -q --download-only "$PY_SOURCE" >/dev/null
orig="$(ls "$PY_SOURCE"_*.orig.tar.* | grep -v '\.asc$' | tail -n 1)"
[ -n "$orig" ] || { echo "no upstream tarball for $PY_SOURCE in Debian's source archive" >&2; exit 1; }
# --enable-shared: PyInstaller bundles libpython. No rpath (lintian: a search path pointing at the build root would
# ship in every extension module): this script finds libpython through LD_LIBRARY_PATH instead. pyexpat links the
# system's libexpat (a dependency of the .deb) instead of compiling in Python's own copy.
flags="--prefix=/opt/python --enable-shared --with-ensurepip=install --with-system-expat"
export LD_LIBRARY_PATH=/opt/python/lib
if [ "$(cat /opt/python/.source 2>/dev/null || true)" != "$orig $flags" ]; then
    stamp "building Python from $orig (several minutes)"
    rm -rf /opt/python /build/cpython && mkdir -p /build/cpython && cd /build/cpython
    tar -xf "/build/sources/$orig"
    cd Python-*/
    # shellcheck disable=SC2086
    ./configure -q $flags >/dev/null
    make -s -j "$JOBS" >/dev/null 2>&1 || make -j 1   # on failure, rerun serially so the error is readable
    make -s install >/dev/null
    echo "$orig $flags" > /opt/python/.source
    cd / && rm -rf /build/cpython
fi

# --- libxcb-cursor: Qt's xcb plugin needs it and Debian 11 has no package for it ---------------------------------
# Debian 12's binary package (it needs glibc 2.8 and libxcb libraries Debian 11 has), fetched and verified by apt
# with a sources list of its own so that the root's own packages stay Debian 11's.
if ! dpkg -s libxcb-cursor0 >/dev/null 2>&1; then
    stamp "libxcb-cursor0 from $SOURCE_SUITE"
    mkdir -p /etc/apt/extra /var/lib/apt/lists-extra/partial /build/extra
    echo "deb $MIRROR $SOURCE_SUITE main" > /etc/apt/extra/sources.list
    set -- -o Dir::Etc::SourceList=/etc/apt/extra/sources.list -o Dir::Etc::SourceParts=/nonexistent \
        -o Dir::State::Lists=/var/lib/apt/lists-extra
    apt-get "$@" update -q >/dev/null
    (cd /build/extra && apt-get "$@" download -q libxcb-cursor0 >/dev/null)
    dpkg -i /build/extra/libxcb-cursor0_*.deb >/dev/null
    rm -rf /build/extra /var/lib/apt/lists-extra
fi

# --- the build venv ----------------------------------------------------------------------------------------------
want="$(cat /src/pyproject.toml /src/packaging/linux/constraints.txt | sha256sum | cut -d' ' -f1)"
if [ "$(cat /opt/venv/.inputs 2>/dev/null || true)" != "$want" ]; then
    stamp "installing the build dependencies"
    rm -rf /opt/venv
    /opt/python/bin/python3 -m venv /opt/venv
    /opt/venv/bin/pip install -q --upgrade pip
    /opt/venv/bin/pip install -q -c /src/packaging/linux/constraints.txt "/src[package]"
    echo "$want" > /opt/venv/.inputs
else
    # the dependencies are there; vramdesk itself may have changed
    /opt/venv/bin/pip install -q --no-deps --force-reinstall "/src"
fi

stamp "PyInstaller"
cd /src
/opt/venv/bin/python packaging/build.py --host --bundle-only
