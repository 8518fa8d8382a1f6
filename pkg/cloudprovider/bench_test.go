package cloudprovider_test

import (
	"testing"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

var benchZones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// BenchmarkInstanceTypes builds every catalog instance type with offerings in three zones.
func BenchmarkInstanceTypes(b *testing.B) {
	entries, err := catalog.Load()
	if err != nil {
		b.Fatal(err)
	}
	opts := cloudprovider.InstanceTypeOptions{Zones: benchZones}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		its, err := cloudprovider.NewInstanceTypes(entries, opts)
		if err != nil || len(its) != len(entries) {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(entries)), "types/op")
}

// BenchmarkAllocatable measures Allocatable: memoized (the scheduler's hot path), the compact
// AllocatableResources, and the first call on a fresh instance type.
func BenchmarkAllocatable(b *testing.B) {
	its, err := cloudprovider.DefaultInstanceTypes(cloudprovider.InstanceTypeOptions{Zones: benchZones})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("memoized", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_ = its[i%len(its)].Allocatable()
			i++
		}
	})
	b.Run("resources", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_ = its[i%len(its)].AllocatableResources()
			i++
		}
	})
	b.Run("first-call", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			src := its[i%len(its)]
			it := &cloudprovider.InstanceType{Name: src.Name, Capacity: src.Capacity, Overhead: src.Overhead}
			_ = it.Allocatable()
			i++
		}
	})
}

// BenchmarkCheapestCompatible is the scheduler's per-type price lookup.
func BenchmarkCheapestCompatible(b *testing.B) {
	its, err := cloudprovider.DefaultInstanceTypes(cloudprovider.InstanceTypeOptions{Zones: benchZones})
	if err != nil {
		b.Fatal(err)
	}
	zones := []string{"us-east-1a", "us-east-1b"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, _ = its[i%len(its)].Offerings.CheapestWhere(func(o cloudprovider.Offering) bool {
			return o.Available && (o.Zone == zones[0] || o.Zone == zones[1])
		})
		i++
	}
}
