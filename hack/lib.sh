# Shared helpers for fedop's scripts. Source it; it defines functions and
# variables only, and runs nothing.

# ROOT is the repository root; BIN holds what `make tools` builds.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/bin}

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# make_var prints the value of the Makefile's variable $1, so that scripts
# and the Makefile share one definition. make's --eval adds a throwaway
# target that prints it.
make_var() {
  make -s --no-print-directory -C "$ROOT" --eval "_fedop_print_var: ; @echo \$($1)" _fedop_print_var
}

# check runs "$@" and prints "ok   $1" or "FAIL $1" (a check explains a
# failure on lines of its own, indented), counting into the caller's
# variables passed and failed.
check() {
  local what=$1
  shift
  if "$@"; then
    echo "ok   $what"
    passed=$((passed + 1))
  else
    echo "FAIL $what"
    failed=$((failed + 1))
  fi
}

# free_port prints a free TCP port on 127.0.0.1, the first of the 200 from
# $1 up that nothing answers on.
free_port() {
  local p
  for ((p = $1; p < $1 + 200; p++)); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  die "no free port in $1-$(($1 + 199))"
}

# poll runs "$@" (quietly) every half second until it succeeds, or fails
# once $1 seconds have passed.
poll() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}

# stop_pidfile ends the process whose pid file $1 names, waits up to 10s for
# it to exit, and removes the file. It signals nothing unless the process's
# command line starts with $2 (the binary): by the time a script stops its
# process, the pid may belong to another one.
stop_pidfile() {
  local file=$1 binary=$2 pid
  [[ -f $file ]] || return 0
  pid=$(cat "$file")
  if [[ $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") == "$binary "* ]]; then
    kill "$pid" 2>/dev/null
    poll 10 bash -c "! kill -0 $pid" || kill -9 "$pid" 2>/dev/null
  fi
  rm -f "$file"
}

# kubectl_bin prints the kubectl to use: the one `make tools` built, so the
# client is on the same Kubernetes minor line as the servers, or else the one
# on PATH.
kubectl_bin() {
  if [[ -x $BIN/kubectl ]]; then
    echo "$BIN/kubectl"
  elif command -v kubectl >/dev/null 2>&1; then
    command -v kubectl
  else
    die "kubectl not found: run 'make tools' or install kubectl"
  fi
}

# require_bins fails unless every named binary is in $BIN.
require_bins() {
  local b
  for b in "$@"; do
    [[ -x $BIN/$b ]] || die "$BIN/$b is missing: run 'make tools' first"
  done
}

# is_dns_label succeeds when $1 is an RFC 1123 label (what Kubernetes
# accepts as a namespace name and what fedop accepts as a member name).
is_dns_label() {
  [[ ${#1} -le 63 && $1 =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]]
}

# pod_cidr prints the pod CIDR of the cluster at position $1 of a lab or of
# the kind clusters, in the order host, then members as listed (0 is the
# host, 1 the first member, ...): 10.(240+$1).0.0/16. Clusters that never
# share a pod IP can be joined into one flat pod network (kind), and a pod
# IP names its cluster. Both fit in 10.240.0.0/12, so there are at most 16.
pod_cidr() {
  (($1 >= 0 && $1 < 16)) || die "cluster position $1: at most 16 clusters get a pod CIDR in 10.240.0.0/12"
  echo "10.$((240 + $1)).0.0/16"
}

# cluster_position prints the position of name $1 in the list $2... (from
# 0), or fails when it is not there.
cluster_position() {
  local want=$1 i=0 name
  shift
  for name in "$@"; do
    if [[ $name == "$want" ]]; then
      echo "$i"
      return 0
    fi
    i=$((i + 1))
  done
  return 1
}

# wait_crd_established waits up to 60s for CRD $2 in the cluster of
# kubeconfig $1 to be Established. `kubectl wait --for condition=...` fails
# outright on a CRD created a moment ago, whose status.conditions is still
# null, so poll the condition instead.
wait_crd_established() {
  local kc=$1 crd=$2 i
  for ((i = 0; i < 120; i++)); do
    [[ $("$(kubectl_bin)" --kubeconfig "$kc" get crd "$crd" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null) == True ]] && return 0
    sleep 0.5
  done
  die "CRD $crd is not Established after 60s"
}
