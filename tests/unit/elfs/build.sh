#!/usr/bin/env bash
# Rebuilds the ELF fixtures of tests/unit/test_symbols.py (README.md says what each is).
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lib() {  # lib OUT SONAME VERSION|- SOURCE
  local out=$1 soname=$2 version=$3 source=$4 args=()
  mkdir -p "$(dirname "$out")"
  printf '%s\n' "$source" >"$work/src.c"
  if [[ $version != - ]]; then
    printf '%s { global: *; };\n' "$version" >"$work/vers.map"
    args=("-Wl,--version-script=$work/vers.map")
  fi
  cc -shared -fPIC -s -o "$out" "$work/src.c" "-Wl,-soname,$soname" "${args[@]}"
}
probe=_ZN3c105probeEv
lib rt13/libfakert.so.13 libfakert.so.13 RT_13.0 'int rt_alloc(void){return 1;} int rt_newer(void){return 3;}'
lib rt13-other/libfakert.so.13 libfakert.so.13 RT_13.0 'int rt_other(void){return 1;}'
lib rt12/libfakert.so.13 libfakert.so.13 RT_12.0 'int rt_alloc(void){return 1;}'
lib c10/libc10.so libc10.so - "int $probe(void){return 2;}"
lib c10-other/libc10.so libc10.so - 'int other(void){return 2;}'
printf 'int rt_alloc(void); int %s(void);\nint run(void){return rt_alloc()+%s();}\n' $probe $probe >"$work/ext.c"
cc -shared -fPIC -s -o ext.so "$work/ext.c" -Lrt13 -Lc10 -l:libfakert.so.13 -lc10 -Wl,-soname,ext.so
