#!/bin/busybox sh
# serve.sh answers one HTTP request on standard input and output: busybox
# nc (-ll -e, a process per connection) runs it for each connection to port
# 8080, see run.sh. busybox httpd runs CGI scripts only under /cgi-bin/ and
# Debian's build has no rewriting or proxying, so the routes fedop's hooks
# use are served here instead. Every answer is text/plain with a
# Content-Length and "Connection: close".
#
#   GET /             200, the page; the e2e suite's readiness probe
#   GET /token        200 and the token run.sh wrote to /data/token; 404
#                     when no volume is mounted at /data
#   GET /drain        200; appends "drain <unix time> <hostname>" to the
#   GET /undrain      call log (and "undrain ..." or "health ..." likewise)
#   GET /health       200, or 500 while the health marker exists
#   GET /health/fail  200; creates the health marker
#   GET /health/pass  200; removes it
#   GET /calls        200 and the call log, one line per hook call, and
#                     a "start <unix time> <hostname>" line per start
#
# With HOOK_DELAY set (seconds, in the container's environment), /drain,
# /undrain and /health take that long to answer, as a real drain would:
# make demo-hooks sets it, so that its stages can be watched.
#
# POST is answered as GET, HEAD without a body, other methods with 405. The
# call log is /data/calls when a volume is mounted at /data (it outlives the
# container, and each line says which pod wrote it), else /tmp/calls; the
# health marker is /tmp/unhealthy. run.sh exports DATA, CALLS, MARKER, HOST.
cr=$(printf '\r')
read -r -t 10 method target _ || exit 0
# The headers are read and ignored, up to the empty line that ends them.
while read -r -t 10 line && [ -n "${line%"$cr"}" ]; do :; done
path=${target%%\?*}

# reply STATUS REASON BODY writes the whole response.
reply() {
  body=$3
  [ -z "$body" ] || body="$body
"
  printf 'HTTP/1.1 %s %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %s\r\nConnection: close\r\n\r\n' \
    "$1" "$2" "${#body}"
  [ "$method" = HEAD ] || printf '%s' "$body"
  exit 0
}

# hook records a call of hook $1 in the call log.
hook() {
  echo "$1 $(date +%s) $HOST" >>"$CALLS" || reply 500 "Internal Server Error" "cannot write $CALLS"
}

case $method in
  GET | POST | HEAD) ;;
  *) reply 405 "Method Not Allowed" "use GET" ;;
esac

case $path in
  / | /index.html) reply 200 OK "$(cat /www/index.html)" ;;
  /token)
    [ -f "$DATA/token" ] || reply 404 "Not Found" "no volume at $DATA"
    reply 200 OK "$(cat "$DATA/token")" ;;
  /drain | /undrain)
    hook "${path#/}"
    [ -z "${HOOK_DELAY:-}" ] || sleep "$HOOK_DELAY"
    reply 200 OK "${path#/}" ;;
  /health)
    hook health
    [ -z "${HOOK_DELAY:-}" ] || sleep "$HOOK_DELAY"
    [ ! -e "$MARKER" ] || reply 500 "Internal Server Error" "unhealthy"
    reply 200 OK "healthy" ;;
  /health/fail)
    : >"$MARKER" || reply 500 "Internal Server Error" "cannot write $MARKER"
    reply 200 OK "health fails from now on" ;;
  /health/pass)
    rm -f "$MARKER"
    reply 200 OK "health passes from now on" ;;
  /calls) reply 200 OK "$(cat "$CALLS" 2>/dev/null)" ;;
  *) reply 404 "Not Found" "no route $path" ;;
esac
