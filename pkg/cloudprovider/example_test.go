package cloudprovider_test

import (
	"fmt"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

// Build the catalog's instance types for two zones, with one spot price overridden, and pick
// the cheapest available offering of m5.large.
func ExampleNewInstanceTypes() {
	entries, _ := catalog.Load()
	base, _ := catalog.DefaultPrices()
	prices, _ := cloudprovider.WithPriceOverrides(base, cloudprovider.PriceOverride{
		InstanceType: "m5.large", Zone: "us-east-1b", CapacityType: karpv1.CapacityTypeSpot, Price: 0.02,
	})
	its, _ := cloudprovider.NewInstanceTypes(entries, cloudprovider.InstanceTypeOptions{
		Zones:  []string{"us-east-1a", "us-east-1b"},
		Prices: prices,
	})
	for _, it := range its {
		if it.Name != "m5.large" {
			continue
		}
		alloc := it.AllocatableResources()
		fmt.Printf("%s: %dm cpu, %dMi memory, %d pods allocatable\n", it.Name, alloc.MilliCPU, alloc.Memory>>20, alloc.Pods)
		o, _ := it.Offerings.Available().Cheapest()
		fmt.Printf("cheapest: %s %s $%.3f/h\n", o.Zone, o.CapacityType, o.Price)
	}
	// Output:
	// m5.large: 1930m cpu, 6903Mi memory, 29 pods allocatable
	// cheapest: us-east-1b spot $0.020/h
}
