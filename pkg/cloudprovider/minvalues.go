package cloudprovider

import (
	"sort"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// UnmetMinValues returns, sorted, the keys of the requirements whose minValues the instance
// types do not meet: fewer distinct values of the key among their labels than the minimum.
// It is nil when every minValues is met (or none is set). This is the one minValues check:
// the scheduler runs it on the types that fit a claim, consolidation on the cheaper types a
// replacement keeps.
func UnmetMinValues(reqs scheduling.Requirements, its []*InstanceType) []string {
	var short []string
	for _, r := range reqs.All() {
		if r.MinValues == nil {
			continue
		}
		if distinctValues(r.Key, its, *r.MinValues) < *r.MinValues {
			short = append(short, r.Key)
		}
	}
	sort.Strings(short)
	return short
}

// RelaxMinValues lowers each minValues of the requirements that the instance types do not meet
// to the number of distinct values they have, as Karpenter's BestEffort minValues policy does,
// and reports whether it lowered any.
func RelaxMinValues(reqs scheduling.Requirements, its []*InstanceType) (scheduling.Requirements, bool) {
	relaxed := false
	for _, r := range reqs.All() {
		if r.MinValues == nil {
			continue
		}
		if n := distinctValues(r.Key, its, *r.MinValues); n < *r.MinValues {
			reqs = reqs.WithMinValues(r.Key, n)
			relaxed = true
		}
	}
	return reqs, relaxed
}

// MinValuesPrefix is how many of the instance types, in order, it takes for UnmetMinValues to
// be empty: the shortest list a NodeClaim may be cut to and keep its minValues (all of them
// when they never meet it, 0 when reqs set no minValues).
func MinValuesPrefix(reqs scheduling.Requirements, its []*InstanceType) int {
	need := 0
	for _, r := range reqs.All() {
		if r.MinValues == nil {
			continue
		}
		n := len(its)
		values := map[string]bool{}
		for i, it := range its {
			if v, ok := it.Labels[r.Key]; ok {
				values[v] = true
			}
			if len(values) >= *r.MinValues {
				n = i + 1
				break
			}
		}
		need = max(need, n)
	}
	return need
}

// distinctValues counts the distinct values of the label key among the instance types, up
// to limit (it stops counting there).
func distinctValues(key string, its []*InstanceType, limit int) int {
	seen := map[string]bool{}
	for _, it := range its {
		if v, ok := it.Labels[key]; ok {
			seen[v] = true
			if len(seen) >= limit {
				break
			}
		}
	}
	return len(seen)
}
