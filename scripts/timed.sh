#!/usr/bin/env bash
# `timed.sh NAME COMMAND...`: run COMMAND, then print how long the phase NAME took (make test).
name=$1
shift
start=$SECONDS
rc=0
"$@" || rc=$?
echo "phase '$name': $((SECONDS - start)) s$([ "$rc" -eq 0 ] || echo ", failed (exit $rc)")"
exit "$rc"
