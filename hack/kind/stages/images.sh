# Stage images of hack/kind/node-image.sh: the images kubeadm and kind start
# pods from, made locally as nothing can be pulled. Sourced; defines
# functions only.
#
# Each image is `docker import` of a tiny root filesystem: the static binary,
# /tmp, and passwd/group files. The names are exactly those that
# `kubeadm config images list --kubernetes-version <version>` prints, so kubeadm
# finds them preloaded; no registry or image repository setting is needed.

# image_root makes the skeleton every image shares in directory $1.
image_root() {
  local dir=$1
  mkdir -p "$dir"/{etc,tmp,usr/local/bin}
  chmod 1777 "$dir/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
  printf 'hosts: files dns\n' >"$dir/etc/nsswitch.conf"
}

# deb_closure prints the packages that packages $2... need, recursively,
# from the dpkg database of the root filesystem in $1. It takes the first of
# alternatives, and skips what is not installed there (virtual packages).
deb_closure() {
  local root=$1 p d
  shift
  local -A seen=()
  local queue=("$@")
  while ((${#queue[@]})); do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    [[ -z ${seen[$p]:-} ]] || continue
    dpkg-query --admindir="$root/var/lib/dpkg" -W "$p" >/dev/null 2>&1 || continue
    seen[$p]=1
    for d in $(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Pre-Depends},${Depends}' "$p" |
      tr ',' '\n' | sed -E 's/\|.*//; s/\(.*\)//; s/:any//; s/[[:space:]]//g'); do
      queue+=("$d")
    done
  done
  printf '%s\n' "${!seen[@]}" | sort
}

# KUBE_PROXY_DEBS are the packages kube-proxy runs in its image: iptables
# (legacy and nft, with Debian's default alternatives) for its iptables mode,
# nftables for its nftables mode, conntrack for clearing stale entries.
# Essential packages that they name but never run (dpkg, debconf, perl, the
# shell) stay out: KUBE_PROXY_SKIP.
KUBE_PROXY_DEBS=(iptables nftables conntrack)
KUBE_PROXY_SKIP='^(dpkg|debconf|perl-base|init-system-helpers|dash|bash|coreutils|tar|base-files|debianutils|sensible-utils|usrmerge)$'

# kube_proxy_root copies the files of KUBE_PROXY_DEBS and the libraries they
# need from the node root filesystem $1 into image root $2. Paths are taken
# through Debian's merged /usr (/lib -> usr/lib ...), so the image holds each
# file once, under usr/, plus the same top-level links.
kube_proxy_root() {
  local rootfs=$1 dir=$2 list
  list=$(mktemp)
  local pkgs
  pkgs=$(deb_closure "$rootfs" "${KUBE_PROXY_DEBS[@]}" | grep -Ev "$KUBE_PROXY_SKIP")
  # shellcheck disable=SC2086 # one package per word
  dpkg-query --admindir="$rootfs/var/lib/dpkg" -L $pkgs |
    sed -E 's#^/(bin|sbin|lib|lib64)/#/usr/\1/#' | sort -u |
    while read -r f; do
      if [[ -n $f && ( -f $rootfs$f || -L $rootfs$f ) && ! -d $rootfs$f ]]; then
        echo "${f#/}"
      fi
    done >"$list"
  # update-alternatives' links (iptables -> /etc/alternatives/iptables ->
  # iptables-nft) are made by maintainer scripts, not listed by dpkg.
  (cd "$rootfs" && find usr/sbin etc/alternatives -maxdepth 1 -type l \( -name 'ip*tables*' -o -name 'ebtables*' -o -name 'arptables*' \)) >>"$list"
  (cd "$rootfs" && for l in bin sbin lib lib64; do [[ -L $l ]] && echo "$l"; done) >>"$list"
  tar -C "$rootfs" --no-recursion -cf - -T "$list" | tar -C "$dir" -xf -
  rm -f "$list"
}

# build_images makes every image kubeadm lists for Kubernetes version $1 and
# saves them into archive $2. $3 holds the Kubernetes binaries and etcd, $4
# coredns, $5 fedop's tools (pause), $6 the node root filesystem.
build_images() {
  local version=$1 out=$2 kube=$3 coredns=$4 tools=$5 rootfs=$6
  local tmp=$KIND_WORK/tmp/images refs=() ref name dir changes
  rm -rf "$tmp" && mkdir -p "$tmp"
  mapfile -t refs < <("$kube/kubeadm" config images list --kubernetes-version "$version")
  ((${#refs[@]} > 0)) || die "kubeadm listed no images"
  for ref in "${refs[@]}"; do
    name=${ref##*/}
    name=${name%%:*}
    dir=$tmp/$name
    image_root "$dir"
    changes=(--change 'ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin')
    case $name in
      kube-apiserver | kube-controller-manager | kube-scheduler)
        cp "$kube/$name" "$dir/usr/local/bin/" ;;
      kube-proxy)
        cp "$kube/kube-proxy" "$dir/usr/local/bin/"
        kube_proxy_root "$rootfs" "$dir" ;;
      etcd)
        cp "$kube/etcd" "$dir/usr/local/bin/" ;;
      coredns)
        # kubeadm's CoreDNS Deployment gives args only, so the image needs
        # the entrypoint; upstream's image keeps the binary at /coredns.
        cp "$coredns/coredns" "$dir/coredns"
        changes+=(--change 'ENTRYPOINT ["/coredns"]') ;;
      pause)
        cp "$tools/pause" "$dir/pause"
        changes+=(--change 'ENTRYPOINT ["/pause"]') ;;
      *) die "no recipe for image $ref that kubeadm lists" ;;
    esac
    log "Image $ref"
    tar -C "$dir" --numeric-owner --owner=0 --group=0 -c . | docker import "${changes[@]}" - "$ref" >/dev/null
  done
  # A kube-proxy whose iptables cannot load its libraries fails only once a
  # cluster runs, so check here that the image's tools run.
  local proxy tool
  proxy=$(printf '%s\n' "${refs[@]}" | grep '/kube-proxy:')
  for tool in iptables ip6tables iptables-legacy nft conntrack; do
    docker run --rm --entrypoint "/usr/sbin/$tool" "$proxy" --version >/dev/null ||
      die "$tool does not run in $proxy"
  done
  docker save -o "$out.tmp" "${refs[@]}"
  mv "$out.tmp" "$out"
  # The archive is what the node loads; the images themselves would only sit
  # in Docker under names that look pulled from registry.k8s.io.
  docker rmi "${refs[@]}" >/dev/null
  rm -rf "$tmp"
}
