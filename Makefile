# fedop's Makefile. `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ROOT := $(CURDIR)
BIN := $(ROOT)/bin
LAB_DIR ?= $(ROOT)/.lab
MEMBERS ?= k8s-a k8s-b
export LAB_DIR MEMBERS

## The image `make docker-build`, `deploy` and `build-installer` use.
IMG ?= fedop-manager:latest
CONTAINER_TOOL ?= docker

## Version stamping: `fedop-manager --version` prints these, and the manager
## logs them at start (internal/version). VERSION is `git describe`
## (a tag, or the short commit), with -dirty for uncommitted changes.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION_PKG := github.com/fedop-io/fedop/internal/version
MANAGER_LDFLAGS := -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT)

## Tools: every binary below is pinned by hack/tools/go.mod and built from
## Go modules, so nothing is downloaded but modules.
# The binaries depend on go.mod alone: it decides every version, and go.sum
# only records hashes (tidying it must not rebuild the control plane).
TOOLS_MOD := hack/tools/go.mod
tool_version = $(shell awk '$$1 == "$(1)" { print $$2 }' hack/tools/go.mod)
KUBE_VERSION := $(call tool_version,k8s.io/kubernetes)
KUBE_MINOR := $(word 2,$(subst ., ,$(KUBE_VERSION)))
KWOK_VERSION := $(call tool_version,sigs.k8s.io/kwok)

# A plain `go build` of k8s.io/kubernetes reports v0.0.0-master+$Format:%H$,
# which kubectl cannot parse; stamp the versions the release scripts would.
KUBE_LDFLAGS := -s -w \
	-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(KUBE_MINOR) \
	-X k8s.io/component-base/version.gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/client-go/pkg/version.gitMajor=1 \
	-X k8s.io/client-go/pkg/version.gitMinor=$(KUBE_MINOR) \
	-X k8s.io/client-go/pkg/version.gitTreeState=clean
KWOK_LDFLAGS := -s -w \
	-X sigs.k8s.io/kwok/pkg/consts.Version=$(KWOK_VERSION) \
	-X sigs.k8s.io/kwok/pkg/consts.KubeVersion=$(KUBE_VERSION)

# The binaries depend on a stamp named after the ldflags' hash, so changing
# a version stamp rebuilds them even though go.mod did not change.
TOOLS_STAMP := $(BIN)/.ldflags-$(shell echo '$(KUBE_LDFLAGS) $(KWOK_LDFLAGS)' | sha256sum | cut -c1-12)

KUBE_TOOLS := kube-apiserver kube-controller-manager kube-scheduler kubectl
KWOK_TOOLS := kwok kwokctl
TOOLS := $(addprefix $(BIN)/,$(KUBE_TOOLS) $(KWOK_TOOLS) etcd controller-gen kind)

# go_build builds package $(2) of the tools module into $(1) with ldflags $(3).
define go_build
	@echo "Building $(notdir $(1)) from $(2) (the first build takes minutes)"
	@cd hack/tools && go build -ldflags "$(3)" -o $(1) $(2)
endef

.PHONY: tools
tools: $(TOOLS) ## Build the pinned control plane, etcd, kwok, controller-gen and kind into bin/.

$(TOOLS_STAMP):
	@mkdir -p $(BIN) && rm -f $(BIN)/.ldflags-* && touch $@

$(addprefix $(BIN)/,$(KUBE_TOOLS)): $(BIN)/%: $(TOOLS_MOD) $(TOOLS_STAMP)
	$(call go_build,$@,k8s.io/kubernetes/cmd/$*,$(KUBE_LDFLAGS))

$(addprefix $(BIN)/,$(KWOK_TOOLS)): $(BIN)/%: $(TOOLS_MOD) $(TOOLS_STAMP)
	$(call go_build,$@,sigs.k8s.io/kwok/cmd/$*,$(KWOK_LDFLAGS))

$(BIN)/etcd: $(TOOLS_MOD)
	$(call go_build,$@,go.etcd.io/etcd/server/v3,-s -w)

$(BIN)/controller-gen: $(TOOLS_MOD)
	$(call go_build,$@,sigs.k8s.io/controller-tools/cmd/controller-gen,-s -w)

$(BIN)/kind: $(TOOLS_MOD)
	$(call go_build,$@,sigs.k8s.io/kind,-s -w)

# golangci-lint has a module of its own (hack/tools/lint/go.mod says why);
# `make tools` does not build it, `make lint` does.
LINT_MOD := hack/tools/lint/go.mod
GOLANGCI_LINT := $(BIN)/golangci-lint

$(GOLANGCI_LINT): $(LINT_MOD)
	@echo "Building golangci-lint with kube-api-linter (the first build takes minutes)"
	@cd hack/tools/lint && go build -ldflags "-s -w" -o $@ sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter

##@ Lab

.PHONY: lab-up
lab-up: tools ## Start the host and member clusters ($(MEMBERS)) and register the members.
	hack/lab.sh up

.PHONY: demo
demo: ## The main job from a fresh clone: lab, CRD, fedop-manager, the sample, a one-pod-at-a-time upgrade.
	hack/demo.sh

.PHONY: e2e
e2e: tools ## End-to-end suite (e2e/, 21 scenarios with faults; those that need real pods skip) on a lab of its own in .lab/e2e, taken down after.
	hack/e2e-lab.sh

.PHONY: bench
bench: tools ## Benchmarks (issue 5, Discovery, Freshness) on a lab of its own in .lab/bench, taken down after: prints the table, writes docs/benchmarks.md.
	hack/bench.sh

.PHONY: lab-down
lab-down: ## Delete the lab's clusters; no process is left.
	hack/lab.sh down

.PHONY: lab-status
lab-status: ## List the lab's clusters and whether they answer.
	hack/lab.sh status

##@ kind

# FEDOP_KIND_IMAGE names a kind node image to use instead of building one
# (on a machine with internet access, kind's own image is the ordinary
# choice); with it set, kind-image builds nothing.
.PHONY: kind-image
kind-image: ## Build the offline kind node image (fedop.local/kind-node:<Kubernetes version>) from Debian packages and Go modules; seconds when nothing changed.
	hack/kind/node-image.sh

.PHONY: kind-up
kind-up: $(BIN)/kind $(BIN)/kubectl ## Docker set up for kind, clusters fedop-host and members (KIND_MEMBERS, default k8s-a k8s-b) on one flat pod network, storage, fedop deployed in the host, members registered.
	hack/kind/up.sh

.PHONY: kind-check
kind-check: $(BIN)/kubectl ## Check the kind clusters: pod IPs reachable across clusters, claims binding, the workload's hooks through pods/proxy.
	hack/kind/check.sh

.PHONY: e2e-kind
e2e-kind: ## The e2e suite against the kind clusters: in-cluster manager, real kubelets, docker pause for member faults.
	hack/kind/e2e.sh

.PHONY: etcd-images
etcd-images: ## Build fedop.local/etcd:<version> (one per hack/etcd/v*) and fedop.local/etcdcheck, and load them into the kind members.
	hack/kind/etcd-images.sh

.PHONY: e2e-etcd
e2e-etcd: ## On the kind clusters (make kind-up KIND_MEMBERS="k8s-a k8s-b k8s-c"): a five-member etcd upgraded under faults, checked for lost writes and linearizability.
	hack/kind/e2e-etcd.sh

.PHONY: demo-hooks
demo-hooks: $(BIN)/kubectl ## On the kind clusters (make kind-up): the sample with drain and health hooks, an upgrade shown stage by stage.
	hack/kind/demo-hooks.sh

.PHONY: kind-down
kind-down: ## Delete the kind clusters and network, and restore the Docker configuration kind-up changed.
	hack/kind/down.sh

##@ Development

CONTROLLER_GEN := $(BIN)/controller-gen
KUBECTL := $(BIN)/kubectl

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD and RBAC manifests under config/.
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=fedop-manager paths=./... output:rbac:artifacts:config=config/rbac

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deep-copy code for the API types.
	$(CONTROLLER_GEN) object paths=./api/...

# Every Go module whose go.mod and go.sum `make verify` checks are tidy.
GO_MODULES := . hack/tools hack/tools/lint hack/dashboard

.PHONY: verify
verify: manifests generate ## Fail when generated files are stale, code is not gofmt'ed, a go.mod is not tidy, or README's manager flags table and --help name different flags.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting (make fmt)"; exit 1; }
	@test -z "$$(git status --porcelain -- config api)" || { git status --short -- config api; git diff -- config api; echo "generated files are stale: run 'make manifests generate' and commit"; exit 1; }
	@for m in $(GO_MODULES); do (cd $$m && go mod tidy -diff) || { echo "$$m/go.mod is not tidy: run 'cd $$m && go mod tidy' and commit"; exit 1; }; done
	@hack/verify-flags.sh

.PHONY: verify-installer
verify-installer: tools ## Render dist/install.yaml, apply it to a lab host of its own, and run the manager it describes with its RBAC; checks secure metrics.
	hack/verify-installer.sh

.PHONY: verify-dashboard
verify-dashboard: tools ## Run every query of config/grafana/dashboard.json in Debian's Prometheus scraping a lab's manager over HTTPS, then draw it into docs/dashboard.png (not in CI).
	hack/verify-dashboard.sh

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (.golangci.yml), kube-api-linter on api/.
	$(GOLANGCI_LINT) run

.PHONY: lint-fix
lint-fix: $(GOLANGCI_LINT) ## Run golangci-lint and apply the fixes it can.
	$(GOLANGCI_LINT) run --fix

.PHONY: build
build: ## Build bin/fedop-manager and the kubectl plugin bin/kubectl-fedop, stamped with VERSION and COMMIT.
	go build -ldflags "$(MANAGER_LDFLAGS)" -o $(BIN)/fedop-manager ./cmd/fedop-manager
	go build -ldflags "$(MANAGER_LDFLAGS)" -o $(BIN)/kubectl-fedop ./cmd/kubectl-fedop

.PHONY: install
install: $(KUBECTL) ## Install the CRD into the cluster in KUBECONFIG (the lab host: KUBECONFIG=.lab/host.kubeconfig).
	$(KUBECTL) apply --server-side -k config/crd
	source hack/lib.sh && wait_crd_established "$${KUBECONFIG:-$$HOME/.kube/config}" federationclusters.fedop.io

.PHONY: uninstall
uninstall: $(KUBECTL) ## Remove the CRD (and every FederationCluster) from the cluster in KUBECONFIG.
	$(KUBECTL) delete -k config/crd --ignore-not-found

.PHONY: run
run: ## Run fedop-manager locally against the cluster in KUBECONFIG.
	go run -ldflags "$(MANAGER_LDFLAGS)" ./cmd/fedop-manager $(ARGS)

##@ Deployment

.PHONY: docker-build
docker-build: ## Build the manager image IMG from the root Dockerfile (needs a registry to pull the Go and distroless bases).
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the manager image IMG.
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: build-installer
build-installer: $(KUBECTL) ## Write dist/install.yaml for IMG: CRD, namespace, RBAC, Deployment, metrics Service.
	@mkdir -p dist
	hack/manifests.sh $(IMG) >dist/install.yaml.tmp
	@mv dist/install.yaml.tmp dist/install.yaml
	@echo "Wrote dist/install.yaml for $(IMG); install with: kubectl apply --server-side -f dist/install.yaml"

.PHONY: deploy
deploy: $(KUBECTL) ## Deploy fedop with image IMG to the cluster in KUBECONFIG (config/default).
	hack/manifests.sh $(IMG) | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: $(KUBECTL) ## Remove fedop from the cluster in KUBECONFIG: every FederationCluster (and its pods in the members) first, then the rest.
	hack/undeploy.sh $(IMG)

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -l -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

##@ Test

# test-unit runs the tests that start no API server and no lab, in
# seconds. Left out, and run by `make test`: internal/testenv; federation/,
# whose TestMain starts API servers for the whole package; member's
# TestRegistry; kubectl-fedop's TestJoinOnRealClusters; e2e/ (build tag e2e).
UNIT_PACKAGES = $(shell go list ./... | grep -v -e '/internal/testenv$$' -e '/federation$$' -e '/e2e$$')
UNIT_SKIP := ^(TestRegistry|TestJoinOnRealClusters)$$

.PHONY: test-unit
test-unit: ## Unit tests only (no API servers, no lab): seconds, for the edit-test loop.
	go test -count=1 -skip '$(UNIT_SKIP)' $(UNIT_PACKAGES)

.PHONY: test
test: tools vet ## Unit and integration tests (real API servers from bin/), the lab smoke test, then the e2e suite on a lab.
	KUBEBUILDER_ASSETS=$(BIN) go test -race -count=1 ./...
	cd hack/dashboard && go test -count=1 ./...
	hack/lab-smoke.sh
	hack/e2e-lab.sh

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
