; vramdesk Windows installer (NSIS 3, Unicode, MUI2).
;
;   makensis -DVERSION=0.1.0 -DPAYLOAD=dist\vramdesk -DOUTFILE=dist\vramdesk-0.1.0-windows-x64-setup.exe packaging\windows\vramdesk.nsi
;
; (python packaging/build.py runs this on Windows when makensis is on PATH.)
; PAYLOAD (an absolute path: makensis runs in this folder) is the PyInstaller onedir folder: vramdesk.exe (the window), vramdesk-cli.exe (the command line), _internal\.
; Per-user install, no administrator rights: %LOCALAPPDATA%\Programs\vramdesk, everything in the registry under
; HKCU: Start-menu entry, "Open with" for .json plus the .vramdesk file type, App Paths so "vramdesk" runs from Win+R,
; an uninstaller listed in Apps & features that removes all of it. The installer is never elevated, so the finish
; page's "Run vramdesk" starts the app as the user, not as an administrator.
; Installing or uninstalling while vramdesk runs asks to close it first (the window holds the RUNNING_MUTEX below:
; vramdesk/ui/running_mutex.py), instead of failing on files in use.
; User data (saved scenarios in %APPDATA%\vramdesk) is left alone on uninstall, as Windows apps do.

Unicode true
ManifestDPIAware true
RequestExecutionLevel user
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
!define RUNNING_MUTEX "Local\io.github.vramdesk.VramDesk.running"
!ifndef ICON
  !define ICON "../icons/vramdesk.ico"  ; makensis runs in the script's folder; "/" works on Windows and Linux
!endif

!include "MUI2.nsh"
!include "x64.nsh"
!include "LogicLib.nsh"

Name "${APPNAME} ${VERSION}"
OutFile "${OUTFILE}"
InstallDir "$LOCALAPPDATA\Programs\${APPNAME}"
InstallDirRegKey HKCU "${UNINST_KEY}" "InstallLocation"
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
; the installer runs as the user (RequestExecutionLevel user): so does the app it starts here
!define MUI_FINISHPAGE_RUN "$INSTDIR\vramdesk.exe"

!insertmacro MUI_PAGE_WELCOME
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"
!insertmacro MUI_LANGUAGE "SimpChinese"

; Abort while the window runs (it holds RUNNING_MUTEX), after offering to retry once it is closed.
; Silent (/S): no question, the install or uninstall stops with exit code 2.
!macro ABORT_WHILE_RUNNING
  retry:
  System::Call 'kernel32::OpenMutexW(i 0x00100000, i 0, w "${RUNNING_MUTEX}") p .r0'  ; SYNCHRONIZE
  ${If} $0 <> 0
    System::Call 'kernel32::CloseHandle(p r0)'
    MessageBox MB_RETRYCANCEL|MB_ICONEXCLAMATION "${APPNAME} is running. Close its window, then click Retry." /SD IDCANCEL IDRETRY retry
    SetErrorLevel 2
    Abort
  ${EndIf}
!macroend

Function .onInit
  ${IfNot} ${RunningX64}
    MessageBox MB_ICONSTOP "${APPNAME} needs 64-bit Windows."
    Abort
  ${EndIf}
  SetRegView 64
  SetShellVarContext current
  !insertmacro ABORT_WHILE_RUNNING
FunctionEnd

Function un.onInit
  SetRegView 64
  SetShellVarContext current
  !insertmacro ABORT_WHILE_RUNNING
FunctionEnd

Section "vramdesk" SecMain
  SectionIn RO
  ; an upgrade replaces the whole folder: no stale files from the previous version
  RMDir /r "$INSTDIR\_internal"
  SetOutPath "$INSTDIR"
  File /r "${PAYLOAD}\*.*"
  File "/oname=vramdesk.ico" "${ICON}"
  WriteUninstaller "$INSTDIR\uninstall.exe"

  ; Start menu (this user's)
  SetShellVarContext current
  CreateShortcut "$SMPROGRAMS\${APPNAME}.lnk" "$INSTDIR\vramdesk.exe" "" "$INSTDIR\vramdesk.ico" 0

  ; file type: Windows keys associations on the last extension only, so a .vramdesk.json is a .json to it.
  ; vramdesk registers its ProgID and offers itself in "Open with" for .json without taking .json over.
  WriteRegStr HKCU "Software\Classes\${PROGID}" "" "vramdesk scenario"
  WriteRegStr HKCU "Software\Classes\${PROGID}\DefaultIcon" "" "$INSTDIR\vramdesk.ico,0"
  WriteRegStr HKCU "Software\Classes\${PROGID}\shell\open\command" "" '"$INSTDIR\vramdesk.exe" gui "%1"'
  WriteRegStr HKCU "Software\Classes\.json\OpenWithProgids" "${PROGID}" ""
  WriteRegStr HKCU "Software\Classes\Applications\vramdesk.exe\shell\open\command" "" '"$INSTDIR\vramdesk.exe" gui "%1"'
  WriteRegStr HKCU "Software\Classes\Applications\vramdesk.exe\SupportedTypes" ".json" ""
  WriteRegStr HKCU "Software\Microsoft\Windows\CurrentVersion\App Paths\vramdesk.exe" "" "$INSTDIR\vramdesk.exe"

  ; Apps & features
  WriteRegStr HKCU "${UNINST_KEY}" "DisplayName" "${APPNAME}"
  WriteRegStr HKCU "${UNINST_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKCU "${UNINST_KEY}" "Publisher" "${PUBLISHER}"
  WriteRegStr HKCU "${UNINST_KEY}" "DisplayIcon" "$INSTDIR\vramdesk.ico"
  WriteRegStr HKCU "${UNINST_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKCU "${UNINST_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKCU "${UNINST_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKCU "${UNINST_KEY}" "NoModify" 1
  WriteRegDWORD HKCU "${UNINST_KEY}" "NoRepair" 1
  System::Call 'shell32::SHChangeNotify(i 0x08000000, i 0, p 0, p 0)'  ; SHCNE_ASSOCCHANGED
SectionEnd

Section "Uninstall"
  SetShellVarContext current
  Delete "$SMPROGRAMS\${APPNAME}.lnk"
  DeleteRegKey HKCU "Software\Classes\${PROGID}"
  DeleteRegValue HKCU "Software\Classes\.json\OpenWithProgids" "${PROGID}"
  DeleteRegKey /ifempty HKCU "Software\Classes\.json\OpenWithProgids"
  DeleteRegKey HKCU "Software\Classes\Applications\vramdesk.exe"
  DeleteRegKey HKCU "Software\Microsoft\Windows\CurrentVersion\App Paths\vramdesk.exe"
  DeleteRegKey HKCU "${UNINST_KEY}"
  ; only what the installer put there (never RMDir /r a folder a user may have chosen for something else)
  RMDir /r "$INSTDIR\_internal"
  Delete "$INSTDIR\vramdesk.exe"
  Delete "$INSTDIR\vramdesk-cli.exe"
  Delete "$INSTDIR\vramdesk.ico"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"
  System::Call 'shell32::SHChangeNotify(i 0x08000000, i 0, p 0, p 0)'
SectionEnd
