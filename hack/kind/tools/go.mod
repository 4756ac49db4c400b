// Module tools holds the small programs fedop writes for its offline kind
// node image (hack/kind/node-image.sh): a crictl stand-in and a pause
// binary. It is a module of its own, apart from fedop's and from
// hack/tools, so that neither dependency graph sees k8s.io/cri-api's.
// The upstream programs the image also needs (containerd, runc, CoreDNS) are
// pinned in modules of their own in the folders below this one.
module github.com/fedop-io/fedop/hack/kind/tools

go 1.26.0

require (
	google.golang.org/grpc v1.79.3
	google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af
	k8s.io/cri-api v0.36.3
)

require (
	golang.org/x/net v0.49.0 // indirect
	golang.org/x/sys v0.40.0 // indirect
	golang.org/x/text v0.33.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260128011058-8636f8732409 // indirect
)
