# Stage node of hack/kind/node-image.sh: the node image itself, from the
# root filesystem image, kind's base files, the built binaries, fedop's node
# files (hack/kind/node/) and the preloaded images. Sourced; defines
# functions only.

# kind_base_files prints the directory of kind's base image files in the Go
# module cache, for the kind version hack/tools pins (the kind that creates
# the clusters), downloading the module if it is not there yet.
kind_base_files() {
  local dir
  dir=$(cd "$ROOT/hack/tools" && go mod download -json sigs.k8s.io/kind | jq -r .Dir)
  [[ -d $dir/images/base/files ]] || die "kind's base files are not in $dir/images/base/files"
  echo "$dir/images/base/files"
}

# node_context lays out the files the node image adds to the root filesystem
# in directory $1/rootfs, at their paths in the node.
node_context() {
  local ctx=$1 kindfiles=$2 kube=$3 containerd=$4 runc=$5 tools=$6 version=$7 pause=$8
  local r=$ctx/rootfs
  rm -rf "$ctx" && mkdir -p "$r"/{etc/systemd/system/kubelet.service.d,usr/bin,usr/local/bin,usr/local/sbin}

  # kind's files, as kind's base Dockerfile copies them. The fuse-overlayfs
  # unit is left out with the snapshotter it runs.
  cp -r "$kindfiles/kind" "$kindfiles/LICENSES" "$r/"
  cp "$kindfiles"/usr/local/bin/* "$r/usr/local/bin/"
  cp -r "$kindfiles"/etc/{containerd,default,sysctl.d} "$kindfiles/etc/crictl.yaml" "$r/etc/"
  cp "$kindfiles"/etc/systemd/system/{containerd.service,kubelet.service,kubelet.slice,undo-mount-hacks.service} "$r/etc/systemd/system/"
  cp "$kindfiles"/etc/systemd/system/kubelet.service.d/* "$r/etc/systemd/system/kubelet.service.d/"
  # The module cache is read-only; the node wants 0644 files, 0755 dirs.
  chmod -R u+w "$r"
  find "$r" -type d -exec chmod 0755 {} +
  find "$r" -type f -exec chmod 0644 {} +

  # fedop's files win over kind's where both exist (containerd's config,
  # /etc/default/kubelet).
  cp -r "$KIND_DIR/node/." "$r/"
  sed -i "s|@PAUSE_IMAGE@|$pause|" "$r/etc/containerd/config.toml"
  printf '%s' "$version" >"$r/kind/version"

  cp "$kube"/{kubelet,kubeadm,kubectl} "$r/usr/bin/"
  cp "$containerd"/{containerd,ctr,containerd-shim-runc-v2} "$tools/crictl" "$r/usr/local/bin/"
  cp "$runc/runc" "$r/usr/local/sbin/"
  chmod 0755 "$r"/usr/bin/* "$r"/usr/local/bin/* "$r"/usr/local/sbin/* "$r"/kind/bin/*

  # What kind's base Dockerfile runs after installing its packages: systemd
  # units a container must not start go, journald stops reading kmsg, and
  # only kubelet, containerd and kind's mount fix-up are enabled.
  cat >"$ctx/Dockerfile" <<'EOF'
ARG BASE
FROM $BASE
COPY rootfs/ /
RUN set -eu; \
    find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete; \
    rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
      /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
      /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*; \
    echo "ReadKMsg=no" >> /etc/systemd/journald.conf; \
    ln -sf /usr/lib/systemd/systemd /sbin/init; \
    systemctl enable kubelet.service containerd.service undo-mount-hacks.service; \
    systemctl mask systemd-binfmt.service; \
    mkdir -p /etc/kubernetes/manifests /opt/cni/bin; \
    ln -sf /usr/lib/cni/* /opt/cni/bin/; \
    ctr oci spec \
      | jq '.hooks.createContainer += [{"path": "/kind/bin/mount-product-files.sh"}] | del(.process.rlimits)' \
      > /etc/containerd/cri-base.json; \
    containerd --version; runc --version; kubelet --version; crictl --help 2>&1 | head -n 1 || true
EOF
}

# preload_images starts containerd in a container of image $1, imports the
# image archive $2 into its k8s.io namespace (pinned, so the kubelet's image
# garbage collection keeps them; not unpacked, as an unprivileged build
# container cannot mount overlays: containerd unpacks on first use), and
# commits the container as image $3 with the node's entrypoint. It is what
# `kind build node-image` does with images it pulls.
preload_images() {
  local base=$1 archive=$2 image=$3 cid
  cid=$(docker run -d --entrypoint sleep "$base" infinity)
  # node-image.sh removes the container on exit, also when a step fails.
  BUILD_CONTAINER=$cid
  # One shell runs containerd, the import and the shutdown, so that it can
  # wait for containerd to exit: the container's init (sleep) reaps nothing.
  # A background job's stdin is /dev/null, so the archive on stdin goes to
  # ctr only.
  docker exec -i "$cid" bash -c 'set -e
    containerd >/tmp/containerd.log 2>&1 &
    pid=$!
    for i in $(seq 100); do ctr version >/dev/null 2>&1 && break; sleep 0.1; done
    ctr version >/dev/null 2>&1 || { cat /tmp/containerd.log; exit 1; }
    ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned \
      --all-platforms --no-unpack - >/dev/null 2>/tmp/import.log || { cat /tmp/import.log; exit 1; }
    ctr --namespace=k8s.io images list -q 2>/dev/null | grep -v "^sha256:" | sed "s/^/  preloaded /" >&2
    kill "$pid"
    wait "$pid" || true
    rm -rf /tmp/containerd.log /tmp/import.log /run/containerd' <"$archive" ||
    die "preloading the images into the node's containerd failed"
  docker commit \
    --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
    --change 'CMD []' \
    --change 'ENV container=docker' \
    "$cid" "$image" >/dev/null
  docker rm -f "$cid" >/dev/null
  BUILD_CONTAINER=
}

# finish_image adds what docker import and commit cannot set (STOPSIGNAL:
# systemd exits on SIGRTMIN+3) and the inputs label, building image $3 from
# $1 with inputs hash $2.
finish_image() {
  local from=$1 hash=$2 image=$3 ctx
  ctx=$(mktemp -d)
  printf 'FROM %s\nSTOPSIGNAL SIGRTMIN+3\nLABEL %s=%s\n' "$from" "$KIND_INPUTS_LABEL" "$hash" >"$ctx/Dockerfile"
  docker_build -t "$image" "$ctx"
  rm -rf "$ctx"
}

# docker_build runs `docker build "$@"` with Docker's classic builder, quietly
# unless it fails. Debian's docker.io has no buildx, which a newer docker CLI
# wants for BuildKit; the classic builder needs none, and its deprecation
# notice is noise here.
docker_build() {
  local out
  out=$(DOCKER_BUILDKIT=0 docker build -q "$@" 2>&1) || { printf '%s\n' "$out" >&2; return 1; }
}
