// Package catalog owns the EC2 instance-type facts shipped with the binary: what each instance
// type is (family, size, vCPUs, memory, architecture, GPUs and accelerators, network limits,
// local storage) and what it costs on demand in us-east-1, plus the model of spot prices the
// data lacks.
//
// The facts are an embedded, gzip'd CSV regenerated from the shared data file by
// hack/catalog (go run ./hack/catalog /work/shared/data/ec2-instance-types.json). Load parses
// it once. Only instance types whose vCPU count, memory and architecture are known are in the
// catalog; those without a known on-demand price are kept with OnDemandPrice 0 and get no
// price from Prices (so no offerings) unless a caller prices them.
//
// Spot prices are modelled, deterministically, so that simulations are reproducible: see
// SpotDiscount. Callers that know better prices override them (cloudprovider.WithPriceOverrides).
//
// The package knows nothing of Kubernetes resources; pkg/cloudprovider turns entries into
// instance types with capacity, overhead and offerings.
package catalog
