# Install what matrix/toolkits.yaml names for one CUDA tag on a Windows runner: the exact toolkit
# release from NVIDIA's redistributable archives (`wheelfarm install-cuda`: sha256-checked,
# retried, the same components as on Linux) and the MSVC toolset its nvcc accepts
# (vcvars64 -vcvars_ver; compat.yaml holds the table to nvcc's _MSC_VER range). Exports
# CUDA_HOME/CUDA_PATH, the toolkit's bin and MSVC's environment to the following steps.
# Usage: scripts/install-cuda-windows.ps1 -Cuda cu130 -Dest $env:WHEELFARM_CACHE\cuda
param(
  [Parameter(Mandatory = $true)][string]$Cuda,
  [Parameter(Mandatory = $true)][string]$Dest
)
$ErrorActionPreference = "Stop"
$toolset = wheelfarm toolkit $Cuda --platform win_amd64 --field msvc_toolset
if ($LASTEXITCODE -ne 0) { throw "wheelfarm toolkit $Cuda failed (exit $LASTEXITCODE)" }
$cudaHome = wheelfarm install-cuda $Cuda --platform win_amd64 --dest $Dest
if ($LASTEXITCODE -ne 0) { throw "wheelfarm install-cuda $Cuda failed (exit $LASTEXITCODE)" }
if (-not (Test-Path "$cudaHome\bin\nvcc.exe")) { throw "nvcc.exe not found under $cudaHome" }
"CUDA_HOME=$cudaHome" | Out-File -FilePath $env:GITHUB_ENV -Append -Encoding utf8
"CUDA_PATH=$cudaHome" | Out-File -FilePath $env:GITHUB_ENV -Append -Encoding utf8
"$cudaHome\bin" | Out-File -FilePath $env:GITHUB_PATH -Append -Encoding utf8
# MSVC: vcvars64 with the toolset nvcc accepts, its environment imported into later steps.
$vswhere = "${env:ProgramFiles(x86)}\Microsoft Visual Studio\Installer\vswhere.exe"
$vs = & $vswhere -latest -products * -requires Microsoft.VisualStudio.Component.VC.Tools.x86.x64 -property installationPath
$vcvars = "$vs\VC\Auxiliary\Build\vcvars64.bat"
$vars = cmd /c "`"$vcvars`" -vcvars_ver=$toolset >nul && set"
if ($LASTEXITCODE -ne 0) { throw "vcvars64 -vcvars_ver=$toolset failed: is MSVC $toolset installed on this runner?" }
$vars | ForEach-Object {
  if ($_ -match "^(PATH|INCLUDE|LIB|LIBPATH|VCINSTALLDIR|VCToolsInstallDir|VCToolsVersion|WindowsSdkDir|WindowsSDKVersion|UCRTVersion|UniversalCRTSdkDir)=(.*)$") {
    "$($Matches[1])=$($Matches[2])" | Out-File -FilePath $env:GITHUB_ENV -Append -Encoding utf8
  }
}
"DISTUTILS_USE_SDK=1" | Out-File -FilePath $env:GITHUB_ENV -Append -Encoding utf8
