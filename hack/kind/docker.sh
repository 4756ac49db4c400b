#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# docker.sh gives kind a working Docker engine on this project's machines,
# and takes back what it changed.
#
# kind runs every node as a privileged container, and runs its commands in
# a node with `docker exec --privileged`. On a machine whose capability
# bounding set lacks CAP_SYS_RESOURCE (this project's VMs), runc cannot give
# either the full capability set and fails with "unable to apply caps:
# operation not permitted". The fix is a wrapper runtime that drops
# CAP_SYS_RESOURCE from the OCI spec (create) or process spec (exec) before
# it execs runc, registered as Docker's default runtime. `ensure` applies it
# only when a privileged probe container shows that failure, so on a machine
# that does not need it, Docker's configuration is left alone. Each kind node
# also holds inotify instances, so `ensure` raises the kernel's inotify
# limits to what kind's documentation recommends where they are lower.
#
# Usage:
#   hack/kind/docker.sh ensure    install docker.io if dockerd is missing,
#                                 start dockerd if it is not running, raise the
#                                 inotify limits, apply the capability
#                                 workaround if a privileged probe needs it;
#                                 idempotent
#   hack/kind/docker.sh restore   undo `ensure`: daemon.json and the inotify
#                                 limits back as they were, wrapper removed,
#                                 and dockerd stopped if `ensure` started it
#                                 (else sent SIGHUP to reload its config);
#                                 idempotent. It refuses while containers
#                                 created with the wrapper exist (they would
#                                 not start again): delete the kind clusters
#                                 first, or pass --force.
#   hack/kind/docker.sh status    print what `ensure` installed, started and
#                                 changed, and whether the engine answers
#
# restore leaves the docker.io package and /var/lib/docker in place:
# removing images is the user's call (`apt-get purge docker.io`); status says
# whether fedop installed the package.
#
# Environment:
#   FEDOP_KIND_STATE  where ensure records what it did (default /var/lib/fedop-kind)
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STATE_DIR=${FEDOP_KIND_STATE:-/var/lib/fedop-kind}
DAEMON_JSON=/etc/docker/daemon.json
DOCKERD_LOG=/var/log/fedop-dockerd.log
RUNTIME_NAME='runc-fedop'
WRAPPER=/usr/local/libexec/fedop/$RUNTIME_NAME
PROBE_IMAGE=fedop.local/docker-probe:1

# State files: each records one thing ensure did, so restore undoes exactly
# that and nothing else.
INSTALLED_MARK=$STATE_DIR/installed-docker.io   # we apt-installed docker.io
STARTED_PID=$STATE_DIR/dockerd.pid              # pid of the dockerd we started
DAEMON_JSON_BACKUP=$STATE_DIR/daemon.json.orig  # daemon.json as it was
DAEMON_JSON_ABSENT=$STATE_DIR/daemon.json.absent # there was no daemon.json
SYSCTL_BACKUP=$STATE_DIR/sysctl.orig            # inotify limits as they were

# Every kind node runs systemd, a kubelet and containerd, and each holds
# inotify instances. The kernel's default of 128 instances per user is spent
# by one or two nodes (kube-proxy then fails with "couldn't initialize
# inotify: too many open files"), so ensure raises the limits to what kind's
# documentation recommends, never lowering them.
INOTIFY_MIN=(fs.inotify.max_user_instances=512 fs.inotify.max_user_watches=524288)

dockerd_pid() { pgrep -x dockerd | head -n1; }
engine_answers() { docker info >/dev/null 2>&1; }

# install_packages installs Debian packages without letting their maintainer
# scripts start services: ensure starts dockerd itself, so it knows it did.
install_packages() {
  local policy=/usr/sbin/policy-rc.d own_policy=
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
    own_policy=1
  fi
  log "Installing $* from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  [[ -z $own_policy ]] || rm -f "$policy"
}

start_dockerd() {
  log "Starting dockerd (log: $DOCKERD_LOG)"
  # setsid detaches dockerd from this script's session, so it outlives it.
  # In a non-interactive script the background job is not a process group
  # leader, so setsid execs dockerd in place and $! is dockerd's pid.
  # The subshell first closes every descriptor above 2 that this script
  # inherited: dockerd outlives it, and would hold for ever whatever the
  # caller had open (a `flock` on a lock file made a later flock wait for
  # good). The subshell execs through nohup and setsid, so $! stays
  # dockerd's pid.
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      ((fd > 2)) && eval "exec $fd>&-"
    done
    exec nohup setsid dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null
  ) &
  echo $! >"$STARTED_PID"
  wait_engine
}

wait_engine() {
  local i
  for ((i = 0; i < 120; i++)); do
    engine_answers && return 0
    sleep 0.5
  done
  die "dockerd does not answer after 60s; see $DOCKERD_LOG"
}

# reload_dockerd makes dockerd re-read daemon.json; runtimes and
# default-runtime are among the settings it reloads on SIGHUP.
reload_dockerd() {
  local pid
  pid=$(dockerd_pid) || true
  [[ -n $pid ]] || return 0
  log "Reloading dockerd ($pid) with SIGHUP"
  kill -HUP "$pid"
  sleep 1
  wait_engine
}

# probe_privileged runs a privileged container from a scratch image holding
# one static binary (the host's ldconfig, static in every glibc Debian) and
# prints docker's error output, empty when it ran. The image is made locally,
# as nothing can be pulled.
probe_privileged() {
  if ! docker image inspect "$PROBE_IMAGE" >/dev/null 2>&1; then
    local dir
    dir=$(mktemp -d)
    cp /sbin/ldconfig "$dir/probe"
    tar -C "$dir" -c probe | docker import - "$PROBE_IMAGE" >/dev/null
    rm -rf "$dir"
  fi
  # shellcheck disable=SC2069 # stderr to the caller, stdout dropped: intended
  docker run --rm --privileged "$PROBE_IMAGE" /probe --version 2>&1 >/dev/null || true
}

# write_wrapper writes the runtime wrapper. It is a POSIX shell script over
# jq (a Debian package) so that it needs no build step; runc and jq are
# named by absolute path because the shim runs it with a minimal PATH.
write_wrapper() {
  local runc jq tmp
  runc=$(command -v runc) || die "runc not found (it comes with docker.io)"
  jq=$(command -v jq) || die "jq not found"
  mkdir -p "$(dirname "$WRAPPER")"
  tmp=$(mktemp)
  cat >"$tmp" <<EOF
#!/bin/sh
# $RUNTIME_NAME: written by fedop's hack/kind/docker.sh. Docker's default runtime
# on this machine: the capability bounding set lacks CAP_SYS_RESOURCE, so runc
# fails to give it to a privileged container or exec. Drop CAP_SYS_RESOURCE
# from the capability lists runc is handed, then run runc:
#   create/run: the OCI spec, config.json in the bundle (--bundle, -b, or the
#               working directory), at .process.capabilities;
#   exec:       the process spec file (--process, -p), at .capabilities.
set -eu
bundle=. process='' prev='' cmd=''
for a in "\$@"; do
  case \$prev in
    --bundle|-b) bundle=\$a ;;
    --process|-p) process=\$a ;;
  esac
  case \$a in
    --bundle=*) bundle=\${a#--bundle=} ;;
    --process=*) process=\${a#--process=} ;;
    create|run|exec) [ -n "\$cmd" ] || cmd=\$a ;;
  esac
  prev=\$a
done
# drop FILE PATH: rewrite the JSON file FILE without CAP_SYS_RESOURCE in the
# capability lists of the object at PATH (a jq path).
drop() {
  $jq -c "if \$2 == null then . else \$2 |= with_entries(if .value then .value |= map(select(. != \"CAP_SYS_RESOURCE\")) else . end) end" "\$1" >"\$1.fedop"
  mv "\$1.fedop" "\$1"
}
case \$cmd in
  create|run) [ ! -f "\$bundle/config.json" ] || drop "\$bundle/config.json" .process.capabilities ;;
  exec) [ -z "\$process" ] || [ ! -f "\$process" ] || drop "\$process" .capabilities ;;
esac
exec $runc "\$@"
EOF
  chmod 0755 "$tmp"
  if cmp -s "$tmp" "$WRAPPER"; then
    rm -f "$tmp"
  else
    mv "$tmp" "$WRAPPER"
    log "Wrote the runtime wrapper $WRAPPER"
  fi
}

# register_wrapper makes the wrapper Docker's default runtime, keeping any
# other setting of daemon.json. It backs daemon.json up once (or records that
# there was none), and succeeds when it changed the file.
register_wrapper() {
  mkdir -p "$(dirname "$DAEMON_JSON")"
  if [[ ! -e $DAEMON_JSON_BACKUP && ! -e $DAEMON_JSON_ABSENT ]]; then
    if [[ -e $DAEMON_JSON ]]; then
      cp -p "$DAEMON_JSON" "$DAEMON_JSON_BACKUP"
    else
      touch "$DAEMON_JSON_ABSENT"
    fi
  fi
  local current='{}' want
  [[ -e $DAEMON_JSON ]] && current=$(cat "$DAEMON_JSON")
  want=$(jq --arg name "$RUNTIME_NAME" --arg path "$WRAPPER" \
    '.runtimes[$name] = {path: $path} | .["default-runtime"] = $name' <<<"$current") ||
    die "$DAEMON_JSON is not valid JSON"
  if [[ -e $DAEMON_JSON ]] && jq -e --argjson want "$want" '. == $want' "$DAEMON_JSON" >/dev/null; then
    return 1
  fi
  printf '%s\n' "$want" >"$DAEMON_JSON.fedop" && mv "$DAEMON_JSON.fedop" "$DAEMON_JSON"
  log "Registered $RUNTIME_NAME as the default runtime in $DAEMON_JSON"
}

# raise_inotify_limits raises each INOTIFY_MIN limit that is lower, keeping
# the original values once for restore.
raise_inotify_limits() {
  local kv key min cur
  for kv in "${INOTIFY_MIN[@]}"; do
    key=${kv%%=*} min=${kv#*=}
    cur=$(sysctl -n "$key")
    ((cur < min)) || continue
    grep -q "^$key=" "$SYSCTL_BACKUP" 2>/dev/null || echo "$key=$cur" >>"$SYSCTL_BACKUP"
    sysctl -q -w "$key=$min"
    log "Raised $key from $cur to $min"
  done
}

cmd_ensure() {
  require_root
  mkdir -p "$STATE_DIR"
  raise_inotify_limits
  local missing=() docker_missing=
  if ! command -v dockerd >/dev/null; then
    missing+=(docker.io)
    docker_missing=1
  fi
  command -v jq >/dev/null || missing+=(jq)
  ((${#missing[@]} == 0)) || install_packages "${missing[@]}"
  [[ -z $docker_missing ]] || touch "$INSTALLED_MARK"

  if [[ -z $(dockerd_pid) ]]; then
    start_dockerd
  else
    wait_engine
  fi

  # Once registered, the wrapper is kept current (a newer fedop may have
  # changed it) without probing whether it is still needed.
  if [[ -e $DAEMON_JSON ]] && [[ $(jq -r '.["default-runtime"] // ""' "$DAEMON_JSON") == "$RUNTIME_NAME" ]]; then
    write_wrapper
    ! register_wrapper || reload_dockerd
  fi
  local err
  err=$(probe_privileged)
  if [[ -z $err ]]; then
    log "Docker runs privileged containers"
    return 0
  fi
  [[ $err == *"unable to apply caps"* ]] || die "a privileged probe container failed: $err"

  log "Privileged containers fail here (\"unable to apply caps\"): adding the $RUNTIME_NAME runtime"
  write_wrapper
  if register_wrapper; then
    reload_dockerd
  fi
  err=$(probe_privileged)
  [[ -z $err ]] || die "a privileged probe container still fails with $RUNTIME_NAME: $err"
  log "Docker runs privileged containers (with $RUNTIME_NAME)"
}

# wrapped_containers lists the containers that were created with the wrapper
# runtime; Docker records the runtime per container, so they would not start
# again once the wrapper is gone.
wrapped_containers() {
  local ids
  ids=$(docker ps -aq 2>/dev/null) || return 0
  [[ -n $ids ]] || return 0
  # shellcheck disable=SC2086 # word splitting of the id list is wanted
  docker inspect -f '{{.Name}} {{.HostConfig.Runtime}}' $ids |
    awk -v rt="$RUNTIME_NAME" '$2 == rt { sub("^/", "", $1); print $1 }'
}

cmd_restore() {
  require_root
  local force=${1:-}
  if engine_answers; then
    local wrapped
    wrapped=$(wrapped_containers)
    if [[ -n $wrapped && $force != --force ]]; then
      die "these containers use $RUNTIME_NAME and would not start again: ${wrapped//$'\n'/ }; delete them (bin/kind delete cluster --name ...) or pass --force"
    fi
  fi

  local changed=
  if [[ -e $DAEMON_JSON_BACKUP ]]; then
    cp -p "$DAEMON_JSON_BACKUP" "$DAEMON_JSON" && rm -f "$DAEMON_JSON_BACKUP"
    changed=1
    log "Put $DAEMON_JSON back as it was"
  elif [[ -e $DAEMON_JSON_ABSENT ]]; then
    rm -f "$DAEMON_JSON" "$DAEMON_JSON_ABSENT"
    changed=1
    log "Removed $DAEMON_JSON (there was none before)"
  fi

  # Stop dockerd only if ensure started it and it is still that process:
  # a dockerd someone else started keeps running, with its own config back.
  local ours='' pid
  pid=$(dockerd_pid) || true
  if [[ -e $STARTED_PID ]]; then
    [[ -n $pid && $(cat "$STARTED_PID") == "$pid" ]] && ours=1
    rm -f "$STARTED_PID"
  fi
  if [[ -n $ours ]]; then
    log "Stopping dockerd ($pid), which ensure started"
    kill -TERM "$pid"
    local i
    for ((i = 0; i < 60; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -0 "$pid" 2>/dev/null && die "dockerd ($pid) did not stop within 30s"
  elif [[ -n $changed ]]; then
    reload_dockerd
  fi

  if [[ -e $SYSCTL_BACKUP ]]; then
    local kv
    while read -r kv; do
      sysctl -q -w "$kv" && log "Put ${kv%%=*} back to ${kv#*=}"
    done <"$SYSCTL_BACKUP"
    rm -f "$SYSCTL_BACKUP"
  fi

  if [[ -e $WRAPPER ]]; then
    rm -f "$WRAPPER"
    rmdir "$(dirname "$WRAPPER")" 2>/dev/null || true
    log "Removed $WRAPPER"
  fi
  log "Restored"
}

cmd_status() {
  local pid
  yes_no() { [[ -e $1 ]] && echo yes || echo no; }
  if command -v dockerd >/dev/null; then
    echo "dockerd:          $(command -v dockerd) (installed by fedop: $(yes_no "$INSTALLED_MARK"))"
  else
    echo "dockerd:          not installed"
  fi
  pid=$(dockerd_pid) || true
  if [[ -n $pid ]]; then
    local ours=no
    [[ -e $STARTED_PID && $(cat "$STARTED_PID") == "$pid" ]] && ours=yes
    echo "running:          pid $pid (started by fedop: $ours)"
  else
    echo "running:          no"
  fi
  if engine_answers; then
    echo "engine:           answers (server $(docker version -f '{{.Server.Version}}' 2>/dev/null))"
  else
    echo "engine:           does not answer"
  fi
  local rt=none
  [[ -e $DAEMON_JSON ]] && rt=$(jq -r '.["default-runtime"] // "runc (not set)"' "$DAEMON_JSON" 2>/dev/null || echo "unreadable")
  echo "default runtime:  $rt ($DAEMON_JSON)"
  echo "wrapper:          $([[ -x $WRAPPER ]] && echo "$WRAPPER" || echo absent)"
  echo "inotify limits:   $(sysctl -n fs.inotify.max_user_instances) instances, $(sysctl -n fs.inotify.max_user_watches) watches$([[ -e $SYSCTL_BACKUP ]] && echo " (raised by fedop; was: $(paste -sd' ' "$SYSCTL_BACKUP"))")"
  if [[ -e $DAEMON_JSON_BACKUP ]]; then
    echo "backup:           $DAEMON_JSON_BACKUP"
  elif [[ -e $DAEMON_JSON_ABSENT ]]; then
    echo "backup:           none needed: there was no daemon.json"
  else
    echo "backup:           none: daemon.json untouched"
  fi
}

case ${1:-} in
  ensure) cmd_ensure ;;
  restore) cmd_restore "${2:-}" ;;
  status) cmd_status ;;
  *) die "usage: $0 {ensure|restore [--force]|status}" ;;
esac
