#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# cellgate-node: keeps `cellgate serve` running inside a container. Kernels outlive the gateway
# process (it re-adopts them when it starts again), but not the container: restarting the gateway
# here, rather than letting the container die with it, is what keeps their memory across a crash.
# SIGTERM (the pod is stopping) is passed on, and then the loop ends.
stopping=0
child=0
trap 'stopping=1; [ "$child" -ne 0 ] && kill -TERM "$child" 2>/dev/null' TERM INT
while :; do
  cellgate serve "$@" &
  child=$!
  wait "$child"
  status=$?
  # wait returns early when a trapped signal arrives: wait again for the gateway's own exit.
  while [ "$stopping" -eq 1 ] && kill -0 "$child" 2>/dev/null; do wait "$child"; status=$?; done
  [ "$stopping" -eq 1 ] && exit "$status"
  # A configuration error (exit 2) will not fix itself: let the container fail, visibly.
  [ "$status" -eq 2 ] && exit 2
  echo "cellgate-node: cellgate serve exited with $status; restarting in 1 s" >&2
  sleep 1
done
