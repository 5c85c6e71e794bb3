#!/usr/bin/env bash
# AppImage from the PyInstaller bundle. Needs appimagetool (https://github.com/AppImage/appimagetool),
# which downloads nothing when given a runtime file: set APPIMAGE_RUNTIME to a type2-runtime to build offline.
#
#   bash packaging/appimage/build_appimage.sh dist/vramdesk dist/vramdesk-<version>-x86_64.AppImage
#
# (python packaging/build.py runs this when appimagetool is on PATH; the release workflow fetches it.)
set -euo pipefail
bundle=${1:?usage: build_appimage.sh BUNDLE OUT.AppImage}
out=${2:?usage: build_appimage.sh BUNDLE OUT.AppImage}
tool=${APPIMAGETOOL:-appimagetool}
here=$(cd "$(dirname "$0")/.." && pwd)
id=io.github.vramdesk.VramDesk
appdir=$(mktemp -d)/vramdesk.AppDir
mkdir -p "$appdir/usr/share/applications" "$appdir/usr/share/metainfo" "$appdir/usr/share/icons/hicolor/256x256/apps"
cp -a "$bundle" "$appdir/usr/vramdesk"
cp "$here/linux/$id.desktop" "$appdir/$id.desktop"
cp "$here/linux/$id.desktop" "$appdir/usr/share/applications/"
cp "$here/linux/$id.metainfo.xml" "$appdir/usr/share/metainfo/$id.appdata.xml"
cp "$here/../resources/icons/vramdesk-256.png" "$appdir/vramdesk.png"
cp "$here/../resources/icons/vramdesk-256.png" "$appdir/usr/share/icons/hicolor/256x256/apps/vramdesk.png"
cat > "$appdir/AppRun" <<'RUN'
#!/bin/sh
here=$(dirname "$(readlink -f "$0")")
exec "$here/usr/vramdesk/vramdesk" "$@"
RUN
chmod +x "$appdir/AppRun"
args=()
[ -n "${APPIMAGE_RUNTIME:-}" ] && args+=(--runtime-file "$APPIMAGE_RUNTIME")
ARCH=x86_64 "$tool" "${args[@]}" --no-appstream "$appdir" "$out"
rm -rf "$(dirname "$appdir")"
echo "$out"
