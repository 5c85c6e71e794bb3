"""The macOS bundle's Info.plist (packaging/vramdesk.spec's BUNDLE): the document type and the lowest macOS the
bundled Qt runs on. Plain Python, so tests/packaging/test_macos_recipe.py checks it on any system.

Qt's own "Supported Configurations" tables (https://doc.qt.io/qt-6.<minor>/macos.html) give the lowest macOS per Qt
release; LSMinimumSystemVersion follows the Qt the build bundles, so macOS refuses to start the app on a system Qt
does not support instead of it crashing there.
"""

from __future__ import annotations

APP_ID = "io.github.vramdesk.VramDesk"

#: (Qt major, minor) -> lowest macOS, from doc.qt.io/qt-6.<minor>/macos.html ("Target Platform")
QT_MIN_MACOS: dict[tuple[int, int], str] = {
    (6, 5): "11.0",
    (6, 8): "12.0",
    (6, 10): "13.0",
    (6, 11): "13.0",
    (6, 12): "14.4",
}


def min_macos_for_qt(qt_version: str) -> str:
    """The lowest macOS for ``qt_version`` ("6.11.3"). A release between two listed ones takes the later one's
    (stricter, never too lax); one newer than the table is an error: look it up and add it."""
    major, minor = (int(p) for p in qt_version.split(".")[:2])
    later = sorted(v for v in QT_MIN_MACOS if v >= (major, minor))
    if not later:
        newest = ".".join(map(str, max(QT_MIN_MACOS)))
        raise SystemExit(
            f"Qt {qt_version} is newer than packaging/macos/bundle_info.py knows (up to {newest}): add its lowest "
            f"macOS from https://doc.qt.io/qt-{major}.{minor}/macos.html to QT_MIN_MACOS"
        )
    return QT_MIN_MACOS[later[0]]


def info_plist(version: str, qt_version: str) -> dict[str, object]:
    """What PyInstaller's BUNDLE merges into Info.plist."""
    return {
        "CFBundleName": "vramdesk",
        "CFBundleDisplayName": "vramdesk",
        "CFBundleShortVersionString": version,
        "CFBundleVersion": version,
        "NSHighResolutionCapable": True,
        "LSMinimumSystemVersion": min_macos_for_qt(qt_version),
        "CFBundleDocumentTypes": [
            {
                "CFBundleTypeName": "vramdesk scenario",
                "CFBundleTypeRole": "Editor",
                "LSHandlerRank": "Owner",
                "LSItemContentTypes": [APP_ID + ".scenario"],
            }
        ],
        "UTExportedTypeDeclarations": [
            {
                "UTTypeIdentifier": APP_ID + ".scenario",
                "UTTypeDescription": "vramdesk scenario",
                "UTTypeConformsTo": ["public.json"],
                "UTTypeTagSpecification": {"public.filename-extension": ["vramdesk.json"]},
            }
        ],
    }
