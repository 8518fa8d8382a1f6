package conformance

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

var (
	casesFlag = flag.Int("cases", 0, "number of generated cases (default $CONFORMANCE_CASES, else 300)")
	seedFlag  = flag.Int64("seed", 0, "run only this seed, printing both outcomes")
	firstSeed = flag.Int64("first-seed", 1, "seed of the first generated case")
	noShrink  = flag.Bool("no-shrink", false, "print failing cases as generated, without shrinking them")
	caseFile  = flag.String("case", "", "run only the case in this YAML file (a printed reproduction), printing both outcomes")
)

func init() { log.SetLogger(logr.Discard()) }

func caseCount() int {
	if *casesFlag > 0 {
		return *casesFlag
	}
	if n, err := strconv.Atoi(os.Getenv("CONFORMANCE_CASES")); err == nil && n > 0 {
		return n
	}
	return 300
}

// TestConformance runs both schedulers on generated cases and fails on any violation no listed
// divergence excuses, printing the seed and a shrunk reproduction.
func TestConformance(t *testing.T) {
	ctx := context.Background()
	seeds := []int64{*seedFlag}
	if *seedFlag == 0 {
		seeds = seeds[:0]
		for i := 0; i < caseCount(); i++ {
			seeds = append(seeds, *firstSeed+int64(i))
		}
	}
	start := time.Now()
	excused := map[string]int{}
	excusedSeeds := map[string][]int64{}
	failures := 0
	pods, claimsOurs, claimsTheirs := 0, 0, 0
	costOurs, costTheirs := 0.0, 0.0
	if *caseFile != "" {
		seeds = []int64{0}
	}
	for _, seed := range seeds {
		c := Generate(seed)
		if *caseFile != "" {
			data, err := os.ReadFile(*caseFile)
			if err != nil {
				t.Fatal(err)
			}
			if c, err = LoadYAML(data); err != nil {
				t.Fatalf("reading %s: %v", *caseFile, err)
			}
		}
		r, err := Run(ctx, c)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		pods += len(c.Pods)
		claimsOurs += len(r.Ours.Claims)
		claimsTheirs += len(r.Karpenter.Claims)
		costOurs += Cost(c, r.Ours)
		costTheirs += Cost(c, r.Karpenter)
		for name, vs := range r.Excused {
			excused[name] += len(vs)
			excusedSeeds[name] = append(excusedSeeds[name], seed)
		}
		if *seedFlag != 0 || *caseFile != "" {
			t.Logf("ours: %s", describe(r.Ours))
			t.Logf("karpenter: %s", describe(r.Karpenter))
			for name, vs := range r.Excused {
				for _, v := range vs {
					t.Logf("excused by %s: %s", name, v)
				}
			}
			if *seedFlag != 0 {
				// The case as generated, to read or to edit and run again with -case.
				path := filepath.Join(os.TempDir(), fmt.Sprintf("conformance-%d-case.yaml", seed))
				if err := os.WriteFile(path, []byte(YAML(c)), 0o644); err != nil {
					t.Log(err)
				} else {
					t.Logf("the case: %s", path)
				}
			}
		}
		if !r.Failed() {
			continue
		}
		failures++
		for _, v := range r.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		if failures <= 3 {
			repro := c
			if !*noShrink {
				repro = Shrink(ctx, c, r.Violations[0].Rule, r.Violations[0].Scheduler)
			}
			path := filepath.Join(os.TempDir(), fmt.Sprintf("conformance-%d.yaml", seed))
			if err := os.WriteFile(path, []byte(YAML(repro)), 0o644); err != nil {
				t.Log(err)
			}
			t.Logf("seed %d reproduction (go test -run TestConformance -seed %d; shrunk: -case %s):\n%s", seed, seed, path, YAML(repro))
		}
	}
	names := make([]string, 0, len(excused))
	for name := range excused {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		seeds := excusedSeeds[name]
		t.Logf("divergence %s excused %d violations in %d cases (seeds %v)", name, excused[name], len(seeds), seeds[:min(len(seeds), 40)])
	}
	t.Logf("%d cases (%d pods) in %s: %d failed; claims ours %d karpenter %d; cost ours $%.2f/h karpenter $%.2f/h",
		len(seeds), pods, time.Since(start).Round(time.Millisecond), failures, claimsOurs, claimsTheirs, costOurs, costTheirs)
}
