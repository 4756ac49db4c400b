#!/bin/busybox sh
# The workload's entrypoint, run by busybox sh as PID 1. PID 1 gets no
# default action for SIGTERM, so a server in the foreground would ignore it
# and every pod deletion would wait out the whole grace period (30s by
# default), which would make each rollout step 30s long. The shell traps
# TERM and exits at once; the server runs in the background meanwhile.
#
# The server is busybox nc in persistent listen mode, which runs serve.sh
# for each connection to port 8080 (serve.sh lists the routes). When a
# volume is mounted at /data (the image has no /data of its own), the first
# start writes a random token to /data/token, served at /token; later starts
# keep it, so the token tells whether a replacement pod got its
# predecessor's volume. The hook call log goes to /data/calls then, else to
# /tmp/calls, and starts with a "start" line at every start; the health
# marker is the container's own, /tmp/unhealthy.
trap 'exit 0' TERM INT
HOST=$(hostname)
DATA=/data
CALLS=/tmp/calls
MARKER=/tmp/unhealthy
if [ -d "$DATA" ]; then
  if [ ! -s "$DATA/token" ]; then
    # Written aside and renamed, so that a crash never leaves half a token.
    od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$DATA/token.tmp" &&
      mv "$DATA/token.tmp" "$DATA/token" ||
      echo "cannot write $DATA/token" >&2
  fi
  CALLS=$DATA/calls
fi
export HOST DATA CALLS MARKER
# Each start is logged too, so that the log tells the instances of a pod
# apart: a replacement has its predecessor's name, hence its hostname.
echo "start $(date +%s) $HOST" >>"$CALLS" || echo "cannot write $CALLS" >&2
/bin/busybox nc -ll -p 8080 -e /serve.sh &
# wait returns when a trapped signal arrives.
wait $!
