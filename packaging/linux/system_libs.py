"""The system libraries the Linux bundle does NOT carry, and the Debian packages that provide them.

PyInstaller collects every shared library the bundled extension modules and Qt plugins link to. Those below are
on every desktop distribution (a desktop cannot start without them), and a private copy does harm: an older
libstdc++ than the system's Mesa needs makes every OpenGL path abort ("Could not initialize GLX"), and lintian
flags copies of zlib / libpng / freetype / expat. The .deb depends on these packages instead; the tarball
expects them (install-desktop-entry.sh and the README name them per distribution).

What stays bundled, on purpose: libpython, OpenSSL and libffi (Debian 11 and 12 ship different sonames:
libssl1.1 / libssl3, libffi7 / libffi8), Qt and ICU, and libxcb-cursor (Debian 11 has no package for it).
"""

from __future__ import annotations

#: soname prefix -> Debian package (Debian 11, 12 and 13 all have these names; Debian 13's 64-bit time_t
#: renames provide the old names)
SYSTEM_LIBS: dict[str, str] = {
    "libstdc++.so.": "libstdc++6",
    "libgcc_s.so.": "libgcc-s1",
    "libz.so.": "zlib1g",
    "libexpat.so.": "libexpat1",
    "libpng16.so.": "libpng16-16",
    "libfreetype.so.": "libfreetype6",
    "libfontconfig.so.": "libfontconfig1",
    # GLib is one set: a bundled gio / gobject of Debian 11 beside the system's newer glib would not match
    "libglib-2.0.so.": "libglib2.0-0",
    "libgthread-2.0.so.": "libglib2.0-0",
    "libgobject-2.0.so.": "libglib2.0-0",
    "libgio-2.0.so.": "libglib2.0-0",
    "libgmodule-2.0.so.": "libglib2.0-0",
    # what those system libraries themselves link to (PyInstaller follows them): the system's own copies
    "libmount.so.": "libmount1",
    "libblkid.so.": "libblkid1",
    "libselinux.so.": "libselinux1",
    "libpcre.so.": "libpcre3",
    "libpcre2-8.so.": "libpcre2-8-0",
    "libsystemd.so.": "libsystemd0",
    "liblz4.so.": "liblz4-1",
    "libzstd.so.": "libzstd1",
    "libgcrypt.so.": "libgcrypt20",
    "libgpg-error.so.": "libgpg-error0",
    "libbsd.so.": "libbsd0",
    "libmd.so.": "libmd0",
    "libbrotlicommon.so.": "libbrotli1",
    "libbrotlidec.so.": "libbrotli1",
    "libdrm.so.": "libdrm2",
    "libxcb-glx.so.": "libxcb-glx0",
    # QtNetwork's (the window's single-instance socket) GSSAPI: Kerberos as the system has it
    "libgssapi_krb5.so.": "libgssapi-krb5-2",
    "libkrb5.so.": "libkrb5-3",
    "libk5crypto.so.": "libk5crypto3",
    "libkrb5support.so.": "libkrb5support0",
    "libcom_err.so.": "libcom-err2",
    "libkeyutils.so.": "libkeyutils1",
    "libdbus-1.so.": "libdbus-1-3",
    "libX11.so.": "libx11-6",
    "libX11-xcb.so.": "libx11-xcb1",
    "libXau.so.": "libxau6",
    "libXdmcp.so.": "libxdmcp6",
    "libxcb.so.": "libxcb1",
    "libxcb-icccm.so.": "libxcb-icccm4",
    "libxcb-image.so.": "libxcb-image0",
    "libxcb-keysyms.so.": "libxcb-keysyms1",
    "libxcb-randr.so.": "libxcb-randr0",
    "libxcb-render.so.": "libxcb-render0",
    "libxcb-render-util.so.": "libxcb-render-util0",
    "libxcb-shape.so.": "libxcb-shape0",
    "libxcb-shm.so.": "libxcb-shm0",
    "libxcb-sync.so.": "libxcb-sync1",
    "libxcb-util.so.": "libxcb-util1",
    "libxcb-xfixes.so.": "libxcb-xfixes0",
    "libxcb-xinerama.so.": "libxcb-xinerama0",
    "libxcb-xkb.so.": "libxcb-xkb1",
    "libxkbcommon.so.": "libxkbcommon0",
    "libxkbcommon-x11.so.": "libxkbcommon-x11-0",
    "libwayland-client.so.": "libwayland-client0",
    "libwayland-cursor.so.": "libwayland-cursor0",
    "libwayland-egl.so.": "libwayland-egl1",
    "libbz2.so.": "libbz2-1.0",
    "liblzma.so.": "liblzma5",
    "libuuid.so.": "libuuid1",
}

#: what PyInstaller never bundles but Qt loads: OpenGL / EGL (the system's driver stack)
ALWAYS_SYSTEM = ("libegl1", "libgl1")

#: desktop integration the .deb's files need (MIME type, icon theme directories)
DESKTOP = ("shared-mime-info", "hicolor-icon-theme")


def is_system(file_name: str) -> bool:
    """``file_name`` (a bundled file's last path part) is a library the system provides."""
    return any(file_name.startswith(prefix) for prefix in SYSTEM_LIBS)


def packages(file_names: list[str]) -> list[str]:
    """The Debian packages for the system libraries among ``file_names`` (in the order of SYSTEM_LIBS), then the
    OpenGL / EGL and desktop packages."""
    wanted = [pkg for prefix, pkg in SYSTEM_LIBS.items() if any(n.startswith(prefix) for n in file_names)]
    out: list[str] = []
    for pkg in (*wanted, *ALWAYS_SYSTEM, *DESKTOP):
        if pkg not in out:
            out.append(pkg)
    return out
