# Stage rootfs of hack/kind/node-image.sh: the node's base root filesystem,
# made by debootstrap from Debian's packages. Sourced; defines functions and
# variables only. This file's hash is part of the stage's cache key, so an
# edit here rebuilds the root filesystem and everything after it.

ROOTFS_SUITE=bookworm
ROOTFS_MIRROR=${FEDOP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# What kind's base image installs (images/base/Dockerfile in the kind module),
# less what only rootless or storage tests need (fuse-overlayfs, nfs-common,
# open-iscsi), plus Debian's CNI plugins, which kind builds from source.
# libseccomp2 is runc's (it is built with seccomp); pigz speeds up image
# unpacking in containerd.
ROOTFS_PACKAGES=(
  systemd
  conntrack iptables nftables iproute2 ethtool util-linux mount kmod
  libseccomp2 pigz
  e2fsprogs
  bash ca-certificates curl jq procps
  containernetworking-plugins
)

# build_rootfs debootstraps into directory $1 (which must not exist) and
# trims what a node never reads: apt's caches, documentation, man pages.
build_rootfs() {
  local dir=$1 tmp=$1.tmp
  command -v debootstrap >/dev/null || die "debootstrap is missing (apt-get install debootstrap)"
  rm -rf "$tmp"
  log "debootstrap $ROOTFS_SUITE from $ROOTFS_MIRROR (${#ROOTFS_PACKAGES[@]} extra packages)"
  debootstrap --variant=minbase \
    --include="$(IFS=,; echo "${ROOTFS_PACKAGES[*]}")" \
    "$ROOTFS_SUITE" "$tmp" "$ROOTFS_MIRROR"
  rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/* \
    "$tmp"/usr/share/doc/* "$tmp"/usr/share/man/* "$tmp"/usr/share/info/* \
    "$tmp"/var/log/*.log "$tmp"/var/log/apt/* "$tmp"/debootstrap
  mv "$tmp" "$dir"
}

# import_rootfs makes docker image $2 from the root filesystem in $1. PATH is
# set because an imported image has no environment at all.
import_rootfs() {
  local dir=$1 image=$2
  tar -C "$dir" --numeric-owner --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -c . |
    docker import \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      - "$image" >/dev/null
}
