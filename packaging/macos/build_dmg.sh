#!/usr/bin/env bash
# macOS: sign (when a Developer ID is available), make the .dmg, notarise and staple (when credentials are).
#
#   bash packaging/macos/build_dmg.sh dist/vramdesk.app dist/vramdesk-<version>-macos-arm64.dmg
#
# (python packaging/build.py runs this on macOS after PyInstaller made dist/vramdesk.app.)
# Secrets, all optional; each step runs only when its secrets are set, otherwise it says it was skipped:
#   MACOS_CERTIFICATE_P12 (base64 .p12 of a "Developer ID Application" certificate) + MACOS_CERTIFICATE_PASSWORD
#     -> imported into a temporary keychain (CI); or MACOS_SIGN_IDENTITY when it is in a keychain already
#   MACOS_NOTARY_APPLE_ID + MACOS_NOTARY_PASSWORD (app-specific password) + MACOS_NOTARY_TEAM_ID -> notarytool
# Without a signature the app still runs after right-click > Open (Gatekeeper asks once); PyInstaller already
# ad-hoc signs every binary, which Apple Silicon requires.
set -euo pipefail
app=${1:?usage: build_dmg.sh APP DMG}
dmg=${2:?usage: build_dmg.sh APP DMG}
here=$(cd "$(dirname "$0")" && pwd)
[ "$(uname)" = Darwin ] || { echo "build_dmg.sh: needs macOS (hdiutil, codesign)" >&2; exit 2; }

identity=${MACOS_SIGN_IDENTITY:-}
if [ -n "${MACOS_CERTIFICATE_P12:-}" ] && [ -n "${MACOS_CERTIFICATE_PASSWORD:-}" ]; then
    keychain="$RUNNER_TEMP/vramdesk-signing.keychain-db"
    kc_pass=$(uuidgen)
    echo "$MACOS_CERTIFICATE_P12" | base64 --decode > "$RUNNER_TEMP/cert.p12"
    security create-keychain -p "$kc_pass" "$keychain"
    security set-keychain-settings -lut 3600 "$keychain"
    security unlock-keychain -p "$kc_pass" "$keychain"
    security import "$RUNNER_TEMP/cert.p12" -k "$keychain" -P "$MACOS_CERTIFICATE_PASSWORD" -T /usr/bin/codesign
    security set-key-partition-list -S apple-tool:,apple: -s -k "$kc_pass" "$keychain" >/dev/null
    security list-keychains -d user -s "$keychain" $(security list-keychains -d user | tr -d '"')
    rm -f "$RUNNER_TEMP/cert.p12"
    identity=${identity:-$(security find-identity -v -p codesigning "$keychain" | awk -F'"' '/Developer ID Application/ {print $2; exit}')}
fi

if [ -n "$identity" ]; then
    echo "--- signing with: $identity"
    # inside out: every Mach-O first, then the bundle, with the hardened runtime notarisation requires
    find "$app/Contents" -type f \( -name '*.so' -o -name '*.dylib' -o -perm -u+x \) -print0 |
        xargs -0 codesign --force --timestamp --options runtime --entitlements "$here/entitlements.plist" --sign "$identity"
    codesign --force --timestamp --options runtime --entitlements "$here/entitlements.plist" --sign "$identity" "$app"
    codesign --verify --deep --strict --verbose=2 "$app"
else
    echo "--- signing skipped: no MACOS_SIGN_IDENTITY / MACOS_CERTIFICATE_P12 (the app keeps PyInstaller's ad-hoc signature)"
fi

echo "--- $dmg"
stage=$(mktemp -d)
cp -R "$app" "$stage/"
ln -s /Applications "$stage/Applications"
rm -f "$dmg"
hdiutil create -volname vramdesk -srcfolder "$stage" -fs HFS+ -format UDZO -imagekey zlib-level=9 "$dmg"
rm -rf "$stage"
[ -n "$identity" ] && codesign --force --timestamp --sign "$identity" "$dmg"

if [ -n "$identity" ] && [ -n "${MACOS_NOTARY_APPLE_ID:-}" ] && [ -n "${MACOS_NOTARY_PASSWORD:-}" ] && [ -n "${MACOS_NOTARY_TEAM_ID:-}" ]; then
    echo "--- notarising"
    xcrun notarytool submit "$dmg" --apple-id "$MACOS_NOTARY_APPLE_ID" --password "$MACOS_NOTARY_PASSWORD" \
        --team-id "$MACOS_NOTARY_TEAM_ID" --wait
    xcrun stapler staple "$dmg"
    spctl --assess --type open --context context:primary-signature --verbose "$dmg"
else
    echo "--- notarisation skipped: needs a signature and MACOS_NOTARY_APPLE_ID / _PASSWORD / _TEAM_ID"
fi
