#!/bin/sh
# Add vramdesk from this unpacked tarball to your desktop menu (per user, no root). The app itself runs from this
# folder; only the menu entry, the file type and the icons are copied into your data folder.
set -eu

usage() {
    cat <<EOF
Usage: $0 [--remove | --help]
  (no argument)  add the menu entry, the .vramdesk.json file type and the icons for this user
                 (into \${XDG_DATA_HOME:-~/.local/share})
  --remove       take them out again
  --help         show this help
EOF
}

action=install
case "$#:${1:-}" in
    0:) ;;
    1:--remove) action=remove ;;
    1:--help | 1:-h) usage; exit 0 ;;
    *) printf '%s: unknown argument %s\n' "$0" "$*" >&2; usage >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
data=${XDG_DATA_HOME:-$HOME/.local/share}
id=io.github.vramdesk.VramDesk
if [ "$action" = remove ]; then
    rm -f "$data/applications/$id.desktop" "$data/mime/packages/vramdesk.xml" "$data/metainfo/$id.metainfo.xml"
    if [ -d "$data/icons/hicolor" ]; then
        find "$data/icons/hicolor" \( -name 'vramdesk.png' -o -name 'vramdesk.svg' \) -exec rm -f {} +
    fi
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
if command -v update-mime-database >/dev/null; then update-mime-database "$data/mime" || true; fi
if command -v update-desktop-database >/dev/null; then update-desktop-database "$data/applications" || true; fi
if command -v gtk-update-icon-cache >/dev/null; then gtk-update-icon-cache -q -t "$data/icons/hicolor" || true; fi
if [ "$action" = remove ]; then
    echo "vramdesk: desktop entry removed ($data)"
else
    echo "vramdesk: desktop entry installed ($data)"
fi
