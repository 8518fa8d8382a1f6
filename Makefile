# The project's entry points. `make test` is what CI runs (see .ci/run and the README).
SHELL := /usr/bin/env bash
export GOTOOLCHAIN ?= local

K8S_ASSETS ?= $(CURDIR)/bin/k8s
GO_TEST_FLAGS ?=

.PHONY: all build test test-unit e2e differential conformance verify generate bench fuzz k8s-binaries k8s-full helm clean

# The conformance and differential suites are modules of their own (test/conformance,
# test/differential): they import or build Karpenter v1.15.0, which needs a newer Go than the
# product; only their commands use that toolchain.
CONFORMANCE_TOOLCHAIN ?= go1.26.9
CONFORMANCE_CASES ?= 2000

all: build

## build: the karpenter binary in bin/
build:
	go build -o bin/karpenter ./cmd/karpenter

## generate: deepcopy functions and CRD manifests from the API types (controller-gen), copied into the chart,
## and the shape of the upstream kubelet configuration spec.kubelet is checked against (hack/kubeletschema)
generate:
	go run ./hack/kubeletschema pkg/apis/aws/v1/zz_generated.kubeletschema.go
	go tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./pkg/apis/...
	go tool controller-gen crd paths=./pkg/apis/... output:crd:artifacts:config=config/crd
	go run ./hack/crdpatch config/crd
	rm -f charts/karpenter/crds/*.yaml
	cp config/crd/*.yaml charts/karpenter/crds/

## k8s-binaries: etcd, kube-apiserver and kubectl for the tests, built from the Go module proxy
k8s-binaries:
	hack/build-k8s.sh $(K8S_ASSETS)

## k8s-full: k8s-binaries plus kube-scheduler and kube-controller-manager, for the end-to-end suite
k8s-full:
	hack/build-k8s.sh --full $(K8S_ASSETS)

## helm: the Helm CLI the chart's tests run, installed from the Go module proxy into bin/
helm:
	hack/build-helm.sh

## test: every test, against a real kube-apiserver + etcd (built first when missing)
test: k8s-binaries helm
	KUBEBUILDER_ASSETS=$(K8S_ASSETS) go test -timeout 20m $(GO_TEST_FLAGS) ./...

## fuzz: every fuzz test for a bounded time, FUZZ_BUDGET seconds shared among them (at least
## FUZZ_MIN_TIME each); their seed corpora in testdata/fuzz/ also run in make test (hack/fuzz.sh)
fuzz:
	hack/fuzz.sh

## e2e: the end-to-end suite on a whole control plane (etcd, kube-apiserver, kube-scheduler,
## kube-controller-manager) with the karpenter binary run as separate processes, then the
## differential suite's short form
e2e: k8s-full helm
	KUBEBUILDER_ASSETS=$(K8S_ASSETS) go test -tags e2e -count=1 -timeout 30m $(GO_TEST_FLAGS) -v ./test/e2e/
	cd test/differential && GOTOOLCHAIN=$(CONFORMANCE_TOOLCHAIN) KUBEBUILDER_ASSETS=$(K8S_ASSETS) go test -short -count=1 -timeout 30m $(GO_TEST_FLAGS) -v ./...

## differential: every workload of the differential suite, under Karpenter v1.15.0's own
## controller (its KWOK provider) and ours, each on a fresh control plane (test/differential/README.md)
differential: k8s-full
	cd test/differential && GOTOOLCHAIN=$(CONFORMANCE_TOOLCHAIN) KUBEBUILDER_ASSETS=$(K8S_ASSETS) go test -count=1 -timeout 90m $(GO_TEST_FLAGS) -v ./...

## conformance: our scheduler beside Karpenter v1.15.0's on CONFORMANCE_CASES generated cases
## (see test/conformance/README.md)
conformance:
	cd test/conformance && GOTOOLCHAIN=$(CONFORMANCE_TOOLCHAIN) CONFORMANCE_CASES=$(CONFORMANCE_CASES) go test -count=1 -timeout 20m $(GO_TEST_FLAGS) ./...

## verify: formatting, vet, tidy go.mod, imports pointing down the layers (hack/layers), and
## generated files up to date
verify:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	go vet ./...
	go vet -tags e2e ./test/e2e/
	go mod tidy -diff
	go test -count=1 ./hack/layers/
	cd test/conformance && GOTOOLCHAIN=$(CONFORMANCE_TOOLCHAIN) go vet ./... && GOTOOLCHAIN=$(CONFORMANCE_TOOLCHAIN) go mod tidy -diff
	cd test/differential && GOTOOLCHAIN=$(CONFORMANCE_TOOLCHAIN) go vet ./... && GOTOOLCHAIN=$(CONFORMANCE_TOOLCHAIN) go mod tidy -diff
	$(MAKE) generate
	@git diff --quiet -- pkg/apis config/crd charts/karpenter/crds && test -z "$$(git ls-files --others --exclude-standard -- config/crd charts/karpenter/crds)" || { git --no-pager diff --stat -- pkg/apis config/crd charts/karpenter/crds; git ls-files --others --exclude-standard -- config/crd charts/karpenter/crds; echo "generated files are stale: run make generate and commit"; exit 1; }

## bench: the benchmarks
bench:
	go test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin
