#!/bin/sh
# expect_fail.sh BUILD_DIR TARGET PATTERN - build TARGET (excluded from the normal build) and
# pass only when the build fails with a message matching PATTERN (an extended regex): the
# layers' rule held for the reason meant, not for another.
out=$(cmake --build "$1" --target "$2" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
  printf '%s\n' "$out" | tail -n 20
  echo "$2: built, but it breaks the layers' rule and must not"
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq "$3"; then
  printf '%s\n' "$out" | tail -n 20
  echo "$2: failed, but not with /$3/"
  exit 1
fi
echo "$2: refused as it must be (/$3/)"
