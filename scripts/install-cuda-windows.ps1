# Install what matrix/toolkits.yaml names for one CUDA tag on a Windows runner: the exact toolkit
# release from NVIDIA's redistributable archives (`wheelfarm install-cuda`: sha256-checked,
# retried, the same components as on Linux) and the MSVC toolset its nvcc accepts
# (vcvars64 -vcvars_ver; compat.yaml holds the table to nvcc's _MSC_VER range). A thin caller:
# `wheelfarm msvc-env` (builder/msvc.py, tested on recorded vcvars output) picks vcvars'
# variables and writes CUDA_HOME/CUDA_PATH, MSVC's environment and the toolkit's bin to
# GITHUB_ENV and GITHUB_PATH for the following steps.
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
$vswhere = "${env:ProgramFiles(x86)}\Microsoft Visual Studio\Installer\vswhere.exe"
$vs = & $vswhere -latest -products * -requires Microsoft.VisualStudio.Component.VC.Tools.x86.x64 -property installationPath
$vcvars = "$vs\VC\Auxiliary\Build\vcvars64.bat"
$recorded = Join-Path $env:RUNNER_TEMP "vcvars-$toolset.txt"
cmd /c "`"$vcvars`" -vcvars_ver=$toolset >nul && set" | Out-File -FilePath $recorded -Encoding utf8
if ($LASTEXITCODE -ne 0) { throw "vcvars64 -vcvars_ver=$toolset failed: is MSVC $toolset installed on this runner?" }
wheelfarm msvc-env --cuda-home $cudaHome --vcvars-output $recorded --github-env $env:GITHUB_ENV --github-path $env:GITHUB_PATH
if ($LASTEXITCODE -ne 0) { throw "wheelfarm msvc-env failed (exit $LASTEXITCODE)" }
