package validation_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// TestNodeClaimBoundsAccepted: the integer bounds the scheduler writes into a NodeClaim's spec,
// from a NodePool's Gt, Lt, Gte and Lte narrowed by a pod's affinity (whose Gt and Lt may take
// negative values the CRD refuses), are accepted offline and by the API server.
func TestNodeClaimBoundsAccepted(t *testing.T) {
	const cpu = "karpenter.k8s.aws/instance-cpu"
	req := scheduling.MustRequirement
	gt, lt, gte, lte := corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, karpv1.NodeSelectorOpGte, karpv1.NodeSelectorOpLte
	base := loadAPIsCases(t).bases["NodeClaim"]
	for _, tc := range []struct {
		name string
		reqs scheduling.Requirements
		want string
	}{
		{"nodepool range", scheduling.NewRequirements(req(cpu, gte, "4"), req(cpu, lte, "16")), "Gte 4, Lte 16"},
		{"narrowed by a pod's Gt", scheduling.NewRequirements(req(cpu, gte, "4"), req(cpu, lte, "16"), req(cpu, gt, "7")), "Gt 7, Lte 16"},
		{"narrowed by a pod's Lt", scheduling.NewRequirements(req(cpu, gte, "4"), req(cpu, lt, "8")), "Gte 4, Lt 8"},
		{"zero", scheduling.NewRequirements(req(cpu, gte, "0"), req(cpu, lte, "0")), "Gte 0, Lte 0"},
		{"a pod's Gt -1", scheduling.NewRequirements(req(cpu, gt, "-1")), "Gte 0"},
		{"a pod's Gt -5 and Lt 3", scheduling.NewRequirements(req(cpu, gt, "-5"), req(cpu, lt, "3")), "Gte 0, Lt 3"},
		{"a pod's Lt 0", scheduling.NewRequirements(req(cpu, lt, "0")), "Lt 0"},
		{"a pod's Lt -3", scheduling.NewRequirements(req(cpu, lt, "-3")), "Exists, DoesNotExist"},
		{"range with an exclusion", scheduling.NewRequirements(req(cpu, gte, "4"), req(cpu, lte, "16"), req(cpu, corev1.NodeSelectorOpNotIn, "8")), "Gte 4, Lte 16, NotIn 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			written := tc.reqs.NodeSelectorRequirements()
			var got []string
			for _, s := range written {
				got = append(got, strings.TrimSpace(fmt.Sprintf("%s %s", s.Operator, strings.Join(s.Values, " "))))
			}
			if strings.Join(got, ", ") != tc.want {
				t.Errorf("written as %s, want %s", strings.Join(got, ", "), tc.want)
			}
			data, err := json.Marshal(written)
			if err != nil {
				t.Fatal(err)
			}
			u := patched(t, base, `{metadata: {name: bounds}, spec: {requirements: `+string(data)+`}}`)
			offline := validator.Validate(u)
			_, err = serverCreate(u)
			requireAgree(t, err, offline, u)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}
