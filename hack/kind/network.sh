#!/usr/bin/env bash
# network.sh joins fedop's kind clusters into one flat pod network: a pod
# in any cluster reaches a pod in any other at its pod IP, and the other
# pod sees the caller's own pod IP. hack/kind/up.sh runs it after creating
# the clusters; it can be run again alone (it is idempotent), for example
# after a node container was restarted, which loses what it added.
#
# How:
#   - Pod subnets do not overlap: up.sh gives the n-th cluster (host 0, then
#     the members in KIND_MEMBERS order) podSubnet 10.(240+n).0.0/16 and
#     serviceSubnet 10.(96+n).0.0/16 (hack/lib.sh pod_cidr,
#     hack/kind/lib.sh service_cidr): host 10.240, k8s-a 10.241, k8s-b
#     10.242, k8s-c 10.243. Each node's pod CIDR is a /24 of its cluster's.
#   - Routes: every node container sits on Docker's "kind" network, so each
#     node gets `ip route replace <pod CIDR of node M> via <IP of node M>`
#     for every other node M, of every cluster (routes between the nodes of
#     one multi-node cluster come with it). They are added with route
#     protocol 77, so that a rerun can flush exactly its own routes.
#   - No masquerading between pod CIDRs: the node image's CNI (ptp with
#     "ipMasq": true, hack/kind/node/etc/containerd/cni.template) SNATs
#     everything a pod sends outside its node's pod CIDR to the node's IP.
#     That stays for traffic that leaves the pod network (the manager
#     reaching a member's API server at its node address, DNS to Docker),
#     but traffic from this node's pod CIDR to another node's pod CIDR
#     ACCEPTs in chain FEDOP-FLAT-POD-NETWORK, jumped to first from the nat
#     table's POSTROUTING, before kube-proxy's and the CNI's rules. A packet
#     kube-proxy marked for masquerading (a pod reaching itself through a
#     Service) stays within its own node's CIDR, which the chain leaves
#     alone.
#
# Only kind clusters of this project (KIND_PREFIX, KIND_HOST, KIND_MEMBERS)
# that exist are joined. With FEDOP_KIND_IMAGE (kind's own node image,
# whose kindnet CNI masquerades with nftables) the routes still work, but
# kindnet may still masquerade: that combination is untested.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KUBECTL=$(kubectl_bin)
CHAIN=FEDOP-FLAT-POD-NETWORK
RT_PROTO=77

nodes=() ips=() cidrs=()
clusters=$(existing_clusters) || die "cannot list the kind clusters"
for cluster in $clusters; do
  name=${cluster#"$KIND_PREFIX"}
  kc=$(kind_kubeconfig "$name")
  for node in $("$KIND" get nodes --name "$cluster"); do
    ip=$(docker inspect -f '{{with index .NetworkSettings.Networks "kind"}}{{.IPAddress}}{{end}}' "$node")
    cidr=$("$KUBECTL" --kubeconfig "$kc" get node "$node" -o jsonpath='{.spec.podCIDR}')
    [[ -n $ip && -n $cidr ]] || die "node $node: no IPv4 address on the kind network ('$ip') or no pod CIDR ('$cidr')"
    for ((i = 0; i < ${#nodes[@]}; i++)); do
      [[ ${cidrs[$i]} != "$cidr" ]] ||
        die "nodes ${nodes[$i]} and $node share pod CIDR $cidr (clusters made before each got its own subnets): run 'make kind-down kind-up'"
    done
    nodes+=("$node") ips+=("$ip") cidrs+=("$cidr")
  done
done
((${#nodes[@]} > 1)) || { log "Flat pod network: fewer than two nodes, nothing to join"; exit 0; }

for ((n = 0; n < ${#nodes[@]}; n++)); do
  # One shell per node: flush what an earlier run added, then add the
  # routes and the chain's rules for the nodes there are now.
  script="set -e
ip route flush proto $RT_PROTO
iptables -t nat -N $CHAIN 2>/dev/null || iptables -t nat -F $CHAIN
iptables -t nat -C POSTROUTING -j $CHAIN 2>/dev/null || iptables -t nat -I POSTROUTING 1 -j $CHAIN"
  for ((m = 0; m < ${#nodes[@]}; m++)); do
    ((m != n)) || continue
    script+="
ip route replace ${cidrs[$m]} via ${ips[$m]} proto $RT_PROTO
iptables -t nat -A $CHAIN -s ${cidrs[$n]} -d ${cidrs[$m]} -j ACCEPT"
  done
  docker exec "${nodes[$n]}" sh -c "$script" || die "setting up the flat pod network on ${nodes[$n]} failed"
done
log "Flat pod network: $(for ((n = 0; n < ${#nodes[@]}; n++)); do printf '%s=%s ' "${nodes[$n]}" "${cidrs[$n]}"; done)"
