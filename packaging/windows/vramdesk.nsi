; vramdesk Windows installer (NSIS 3, Unicode, MUI2).
;
;   makensis -DVERSION=0.1.0 -DPAYLOAD=dist\vramdesk -DOUTFILE=dist\vramdesk-0.1.0-windows-x64-setup.exe packaging\windows\vramdesk.nsi
;
; (python packaging/build.py runs this on Windows when makensis is on PATH.)
; PAYLOAD (an absolute path: makensis runs in this folder) is the PyInstaller onedir folder: vramdesk.exe (the window), vramdesk-cli.exe (the command line), _internal\.
; Per-machine install into Program Files, Start-menu entry, "Open with" for .json plus the .vramdesk file type,
; App Paths so "vramdesk" runs from Win+R, an uninstaller listed in Apps & features that removes all of it.
; User data (saved scenarios in %APPDATA%\vramdesk) is left alone on uninstall, as Windows apps do.

Unicode true
ManifestDPIAware true
RequestExecutionLevel admin
SetCompressor /SOLID lzma
SetCompressorDictSize 64

!ifndef VERSION
  !define VERSION "0.0.0"
!endif
!ifndef PAYLOAD
  !error "define PAYLOAD: the PyInstaller folder (dist\vramdesk)"
!endif
!ifndef OUTFILE
  !define OUTFILE "vramdesk-${VERSION}-windows-x64-setup.exe"
!endif

!define APPNAME "vramdesk"
!define PUBLISHER "vramdesk developers"
!define PROGID "vramdesk.Scenario"
!define UNINST_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\${APPNAME}"
!ifndef ICON
  !define ICON "../icons/vramdesk.ico"  ; makensis runs in the script's folder; "/" works on Windows and Linux
!endif

!include "MUI2.nsh"
!include "x64.nsh"

Name "${APPNAME} ${VERSION}"
OutFile "${OUTFILE}"
InstallDir "$PROGRAMFILES64\${APPNAME}"
InstallDirRegKey HKLM "${UNINST_KEY}" "InstallLocation"
BrandingText "${APPNAME} ${VERSION}"

; a numeric version for the file properties: "0.1.0" -> 0.1.0.0 (pre-release suffixes must be stripped by the caller)
VIProductVersion "${VERSION}.0"
VIAddVersionKey "ProductName" "${APPNAME}"
VIAddVersionKey "FileDescription" "${APPNAME} installer"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "CompanyName" "${PUBLISHER}"
VIAddVersionKey "LegalCopyright" "Apache-2.0"

!define MUI_ICON "${ICON}"
!define MUI_UNICON "${ICON}"
!define MUI_ABORTWARNING
!define MUI_FINISHPAGE_RUN "$INSTDIR\vramdesk.exe"

!insertmacro MUI_PAGE_WELCOME
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"
!insertmacro MUI_LANGUAGE "SimpChinese"

Function .onInit
  ${IfNot} ${RunningX64}
    MessageBox MB_ICONSTOP "${APPNAME} needs 64-bit Windows."
    Abort
  ${EndIf}
  SetRegView 64
FunctionEnd

Function un.onInit
  SetRegView 64
FunctionEnd

Section "vramdesk" SecMain
  SectionIn RO
  ; an upgrade replaces the whole folder: no stale files from the previous version
  RMDir /r "$INSTDIR\_internal"
  SetOutPath "$INSTDIR"
  File /r "${PAYLOAD}\*.*"
  File "/oname=vramdesk.ico" "${ICON}"
  WriteUninstaller "$INSTDIR\uninstall.exe"

  ; Start menu (all users)
  SetShellVarContext all
  CreateShortcut "$SMPROGRAMS\${APPNAME}.lnk" "$INSTDIR\vramdesk.exe" "" "$INSTDIR\vramdesk.ico" 0

  ; file type: Windows keys associations on the last extension only, so a .vramdesk.json is a .json to it.
  ; vramdesk registers its ProgID and offers itself in "Open with" for .json without taking .json over.
  WriteRegStr HKLM "Software\Classes\${PROGID}" "" "vramdesk scenario"
  WriteRegStr HKLM "Software\Classes\${PROGID}\DefaultIcon" "" "$INSTDIR\vramdesk.ico,0"
  WriteRegStr HKLM "Software\Classes\${PROGID}\shell\open\command" "" '"$INSTDIR\vramdesk.exe" gui "%1"'
  WriteRegStr HKLM "Software\Classes\.json\OpenWithProgids" "${PROGID}" ""
  WriteRegStr HKLM "Software\Classes\Applications\vramdesk.exe\shell\open\command" "" '"$INSTDIR\vramdesk.exe" gui "%1"'
  WriteRegStr HKLM "Software\Classes\Applications\vramdesk.exe\SupportedTypes" ".json" ""
  WriteRegStr HKLM "Software\Microsoft\Windows\CurrentVersion\App Paths\vramdesk.exe" "" "$INSTDIR\vramdesk.exe"

  ; Apps & features
  WriteRegStr HKLM "${UNINST_KEY}" "DisplayName" "${APPNAME}"
  WriteRegStr HKLM "${UNINST_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKLM "${UNINST_KEY}" "Publisher" "${PUBLISHER}"
  WriteRegStr HKLM "${UNINST_KEY}" "DisplayIcon" "$INSTDIR\vramdesk.ico"
  WriteRegStr HKLM "${UNINST_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKLM "${UNINST_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKLM "${UNINST_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKLM "${UNINST_KEY}" "NoModify" 1
  WriteRegDWORD HKLM "${UNINST_KEY}" "NoRepair" 1
  System::Call 'shell32::SHChangeNotify(i 0x08000000, i 0, p 0, p 0)'  ; SHCNE_ASSOCCHANGED
SectionEnd

Section "Uninstall"
  SetShellVarContext all
  Delete "$SMPROGRAMS\${APPNAME}.lnk"
  DeleteRegKey HKLM "Software\Classes\${PROGID}"
  DeleteRegValue HKLM "Software\Classes\.json\OpenWithProgids" "${PROGID}"
  DeleteRegKey /ifempty HKLM "Software\Classes\.json\OpenWithProgids"
  DeleteRegKey HKLM "Software\Classes\Applications\vramdesk.exe"
  DeleteRegKey HKLM "Software\Microsoft\Windows\CurrentVersion\App Paths\vramdesk.exe"
  DeleteRegKey HKLM "${UNINST_KEY}"
  ; only what the installer put there (never RMDir /r a folder a user may have chosen for something else)
  RMDir /r "$INSTDIR\_internal"
  Delete "$INSTDIR\vramdesk.exe"
  Delete "$INSTDIR\vramdesk-cli.exe"
  Delete "$INSTDIR\vramdesk.ico"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"
  System::Call 'shell32::SHChangeNotify(i 0x08000000, i 0, p 0, p 0)'
SectionEnd
