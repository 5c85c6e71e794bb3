#!/bin/sh
# Add vramdesk from this unpacked tarball to your desktop menu (per user, no root):
#   ./install-desktop-entry.sh            install into ~/.local/share
#   ./install-desktop-entry.sh --remove   take it out again
# The app itself runs from this folder; nothing else is copied.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${XDG_DATA_HOME:-$HOME/.local/share}
id=io.github.vramdesk.VramDesk
if [ "${1:-}" = "--remove" ]; then
    rm -f "$data/applications/$id.desktop" "$data/mime/packages/vramdesk.xml" "$data/metainfo/$id.metainfo.xml"
    find "$data/icons/hicolor" -name 'vramdesk.png' -o -name 'vramdesk.svg' 2>/dev/null | xargs rm -f
else
    mkdir -p "$data/applications" "$data/mime/packages" "$data/metainfo"
    sed "s|^Exec=vramdesk|Exec=\"$here/vramdesk\"|; s|^TryExec=vramdesk|TryExec=$here/vramdesk|" \
        "$here/share/applications/$id.desktop" > "$data/applications/$id.desktop"
    cp "$here/share/mime/packages/vramdesk.xml" "$data/mime/packages/"
    cp "$here/share/metainfo/$id.metainfo.xml" "$data/metainfo/"
    (cd "$here/share" && find icons -type f) | while read -r f; do
        mkdir -p "$data/$(dirname "$f")" && cp "$here/share/$f" "$data/$f"
    done
fi
command -v update-mime-database >/dev/null && update-mime-database "$data/mime" || true
command -v update-desktop-database >/dev/null && update-desktop-database "$data/applications" || true
command -v gtk-update-icon-cache >/dev/null && gtk-update-icon-cache -q -t "$data/icons/hicolor" || true
echo "vramdesk: desktop entry ${1:+removed}${1:-installed} ($data)"
