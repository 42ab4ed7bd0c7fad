# Install one CUDA toolkit on a Windows runner with NVIDIA's network installer (silent, only the
# components matrix/toolkits.yaml lists), then export CUDA_HOME/CUDA_PATH and MSVC's environment.
# Usage: scripts/install-cuda-windows.ps1 -Cuda cu130
param([Parameter(Mandatory = $true)][string]$Cuda)
$ErrorActionPreference = "Stop"
$facts = wheelfarm toolkit $Cuda --platform win_amd64 | ConvertFrom-Json
$installer = Join-Path $env:RUNNER_TEMP "cuda_installer.exe"
Write-Host "installing CUDA $($facts.version): $($facts.components)"
Invoke-WebRequest -Uri $facts.installer -OutFile $installer -UseBasicParsing
$proc = Start-Process -FilePath $installer -ArgumentList (@("-s") + $facts.components.Split(" ")) -Wait -PassThru
if ($proc.ExitCode -ne 0) { throw "CUDA installer exited with $($proc.ExitCode)" }
$v = [version]$facts.version
$home_ = "C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v$($v.Major).$($v.Minor)"
if (-not (Test-Path "$home_\bin\nvcc.exe")) { throw "nvcc.exe not found under $home_" }
"CUDA_HOME=$home_" | Out-File -FilePath $env:GITHUB_ENV -Append -Encoding utf8
"CUDA_PATH=$home_" | Out-File -FilePath $env:GITHUB_ENV -Append -Encoding utf8
"$home_\bin" | Out-File -FilePath $env:GITHUB_PATH -Append -Encoding utf8
# MSVC: import vcvars64's environment into the following steps (torch needs DISTUTILS_USE_SDK=1).
$vswhere = "${env:ProgramFiles(x86)}\Microsoft Visual Studio\Installer\vswhere.exe"
$vs = & $vswhere -latest -products * -requires Microsoft.VisualStudio.Component.VC.Tools.x86.x64 -property installationPath
cmd /c "`"$vs\VC\Auxiliary\Build\vcvars64.bat`" >nul && set" | ForEach-Object {
  if ($_ -match "^(PATH|INCLUDE|LIB|LIBPATH|VCINSTALLDIR|VCToolsInstallDir|WindowsSdkDir|WindowsSDKVersion|UCRTVersion|UniversalCRTSdkDir)=(.*)$") {
    "$($Matches[1])=$($Matches[2])" | Out-File -FilePath $env:GITHUB_ENV -Append -Encoding utf8
  }
}
"DISTUTILS_USE_SDK=1" | Out-File -FilePath $env:GITHUB_ENV -Append -Encoding utf8
