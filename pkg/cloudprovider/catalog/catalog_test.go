package catalog_test

import (
	"bytes"
	"compress/gzip"
	"math"
	"strings"
	"testing"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

func TestLoad(t *testing.T) {
	entries, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1370 {
		t.Errorf("catalog has %d instance types, want 1370", len(entries))
	}
	priced := 0
	for i, e := range entries {
		if i > 0 && entries[i-1].Name >= e.Name {
			t.Fatalf("not sorted at %s", e.Name)
		}
		if e.Name != e.Family+"."+e.Size {
			t.Errorf("%s: family %q size %q", e.Name, e.Family, e.Size)
		}
		if e.VCPU <= 0 || e.MemoryMiB <= 0 || (e.Arch != "amd64" && e.Arch != "arm64") {
			t.Errorf("%s: incomplete entry %+v", e.Name, e)
		}
		if e.MaxPods <= 0 {
			t.Errorf("%s: no max pods", e.Name)
		}
		if e.ENIs > 0 && e.MaxPods != e.ENIs*(e.IPv4PerENI-1)+2 {
			t.Errorf("%s: max pods %d ≠ %d × (%d − 1) + 2", e.Name, e.MaxPods, e.ENIs, e.IPv4PerENI)
		}
		if e.GPUCount > 0 && (e.GPUName == "" || e.GPUManufacturer == "") {
			t.Errorf("%s: GPUs without name or manufacturer", e.Name)
		}
		if e.HasPrice() {
			priced++
		}
	}
	if priced < 1350 {
		t.Errorf("only %d priced instance types", priced)
	}
	// Load hands out copies.
	entries[0].Name = "changed"
	again, _ := catalog.Load()
	if again[0].Name == "changed" {
		t.Error("Load shares its slice with callers")
	}
}

func TestLookup(t *testing.T) {
	e, ok := catalog.Lookup("m5.large")
	if !ok {
		t.Fatal("m5.large not found")
	}
	want := catalog.Entry{
		Name: "m5.large", Family: "m5", Category: "m", Generation: 5, Size: "large", VCPU: 2, MemoryMiB: 8192,
		Arch: "amd64", CPUManufacturer: "intel", CPUClockMHz: 3100, Hypervisor: "nitro",
		NetworkBandwidthMbps: 750, EBSBandwidthMbps: 4750, ENIs: 3, IPv4PerENI: 10, MaxPods: 29, PodENIs: 9,
		OnDemandPrice: 0.096,
	}
	if e != want {
		t.Errorf("m5.large = %+v\nwant %+v", e, want)
	}
	if _, ok := catalog.Lookup("m5.huge"); ok {
		t.Error("found m5.huge")
	}
	if e, _ := catalog.Lookup("hpc7a.12xlarge"); e.ENIs != 0 || e.MaxPods != 100 {
		t.Errorf("hpc7a.12xlarge (pods from the docs) = %+v", e)
	}
	if e, _ := catalog.Lookup("c6in.32xlarge"); e.ENIs != 8 {
		t.Errorf("c6in.32xlarge default-card ENIs = %d, want 8", e.ENIs)
	}
}

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return b.Bytes()
}

func TestParse(t *testing.T) {
	const header = "name,family,size,vcpu,memory_mib,arch,burstable,od_price\n"
	for _, tc := range []struct {
		name, data, wantErr string
	}{
		{"ok, column order free", "# comment\n" + header + "t3.micro,t3,micro,2,1024,amd64,1,0.0104\n", ""},
		{"not gzip", "", "opening catalog"},
		{"missing column", "name,family\nx,y\n", `no column "size"`},
		{"bad number", header + "t3.micro,t3,micro,two,1024,amd64,,\n", "column vcpu"},
		{"bad bool", header + "t3.micro,t3,micro,2,1024,amd64,yes,\n", "not a boolean"},
		{"incomplete", header + "t3.micro,t3,micro,2,,amd64,,\n", "required"},
		{"duplicate", header + "t3.micro,t3,micro,2,1024,amd64,,\nt3.micro,t3,micro,2,1024,amd64,,\n", "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := gz(tc.data)
			if tc.name == "not gzip" {
				data = []byte("plain")
			}
			entries, err := catalog.Parse(bytes.NewReader(data))
			if tc.wantErr == "" {
				if err != nil || len(entries) != 1 || !entries[0].Burstable || entries[0].OnDemandPrice != 0.0104 {
					t.Fatalf("Parse = %+v, %v", entries, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestSpotModel(t *testing.T) {
	entries, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	zones := []string{"", "us-east-1a", "us-east-1b", "us-east-1c", "us-west-2a"}
	discounts := map[float64]bool{}
	for _, e := range entries {
		for _, z := range zones {
			d := catalog.SpotDiscount(e.Family, z)
			if d < catalog.MinSpotDiscount || d > catalog.MaxSpotDiscount {
				t.Fatalf("SpotDiscount(%s, %s) = %v out of range", e.Family, z, d)
			}
			if base := catalog.SpotDiscount(e.Family, ""); math.Abs(d-base) > 0.02+1e-12 {
				t.Fatalf("zone %s moves %s's discount by more than 2 points", z, e.Family)
			}
			discounts[d] = true
		}
	}
	if len(discounts) < 100 {
		t.Errorf("only %d distinct discounts; the model should spread families", len(discounts))
	}
	// The model is part of reproducible simulations: pin a few values.
	golden := map[[2]string]float64{
		{"m5", ""}:            0.7126,
		{"m5", "us-east-1a"}:  0.7321,
		{"c5", "us-east-1b"}:  0.5959,
		{"r6g", "us-east-1c"}: 0.5903,
	}
	for k, want := range golden {
		if got := catalog.SpotDiscount(k[0], k[1]); got != want {
			t.Errorf("SpotDiscount(%s, %s) = %v, want %v (changing the spot model changes every simulation)", k[0], k[1], got, want)
		}
	}
}

func TestPrices(t *testing.T) {
	p, err := catalog.DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := p.Price("m5.large", "us-east-1a", "on-demand"); !ok || got != 0.096 {
		t.Errorf("on-demand = %v, %v", got, ok)
	}
	spot, ok := p.Price("m5.large", "us-east-1a", "spot")
	if want := catalog.SpotPrice(0.096, "m5", "us-east-1a"); !ok || spot != want {
		t.Errorf("spot = %v, want %v", spot, want)
	}
	// Sizes of a family share the discount, so spot keeps their order and ratio.
	big, _ := p.Price("m5.xlarge", "us-east-1a", "spot")
	if math.Abs(big/spot-2) > 1e-9 {
		t.Errorf("m5.xlarge/m5.large spot ratio = %v, want 2", big/spot)
	}
	for _, tc := range [][3]string{{"m5.large", "us-east-1a", "reserved"}, {"nope.large", "us-east-1a", "spot"}, {"dl2q.24xlarge", "us-east-1a", "on-demand"}} {
		if _, ok := p.Price(tc[0], tc[1], tc[2]); ok {
			t.Errorf("Price%v priced", tc)
		}
	}
}
