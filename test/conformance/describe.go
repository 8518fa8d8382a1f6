package conformance

import (
	"fmt"
	"sort"
	"strings"
)

// describe prints an outcome on one line per decision.
func describe(o *Outcome) string {
	var b strings.Builder
	keys := make([]string, 0, len(o.Existing))
	for k := range o.Existing {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %s -> existing %s", k, o.Existing[k])
	}
	for _, c := range o.Claims {
		fmt.Fprintf(&b, "\n  claim %s (%s) types %v pods %v labels %v reqs %v", c.Name, c.NodePool, c.InstanceTypes, c.Pods, c.Labels, c.Requirements)
	}
	keys = keys[:0]
	for k := range o.Errors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %s refused: %s", k, o.Errors[k])
	}
	return b.String()
}
