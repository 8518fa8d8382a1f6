package nodepool_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// req is a requirement for tests.
func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func TestValidate(t *testing.T) {
	in, notIn, gt := corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpGt
	gte, lte := karpv1.NodeSelectorOpGte, karpv1.NodeSelectorOpLte
	for _, tc := range []struct {
		name   string
		labels map[string]string
		reqs   []karpv1.NodeSelectorRequirementWithMinValues
		// reason and field of the expected error; "" for valid.
		reason, field string
	}{
		{name: "empty"},
		{
			name:   "typical",
			labels: map[string]string{"team": "a", karpv1.CapacityTypeLabelKey: "spot", "node-role.kubernetes.io/worker": ""},
			reqs:   []karpv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelArchStable, in, "amd64"), req(awsv1.LabelInstanceCategory, in, "c", "m", "r"), req(awsv1.LabelInstanceGeneration, gt, "4"), req("example.com/tier", notIn, "gold")},
		},
		{
			name: "unparsable requirement", reqs: []karpv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelArchStable, in, "amd64"), req(awsv1.LabelInstanceCPU, gt, "four")},
			reason: nodepool.ReasonRequirementsInvalid, field: "spec.template.spec.requirements[1]",
		},
		{
			name: "inclusive range",
			reqs: []karpv1.NodeSelectorRequirementWithMinValues{req(awsv1.LabelInstanceCPU, gte, "4"), req(awsv1.LabelInstanceCPU, lte, "16")},
		},
		{
			name: "one-value range", labels: map[string]string{"example.com/slot": "4"},
			reqs: []karpv1.NodeSelectorRequirementWithMinValues{req("example.com/slot", gte, "4"), req("example.com/slot", lte, "4")},
		},
		{
			name: "Gte not an integer", reqs: []karpv1.NodeSelectorRequirementWithMinValues{req(awsv1.LabelInstanceCPU, gte, "four")},
			reason: nodepool.ReasonRequirementsInvalid, field: "spec.template.spec.requirements[0]",
		},
		{
			name: "empty inclusive range", reqs: []karpv1.NodeSelectorRequirementWithMinValues{req(awsv1.LabelInstanceCPU, gte, "17"), req(awsv1.LabelInstanceCPU, lte, "16")},
			reason: nodepool.ReasonRequirementsUnsatisfiable, field: "spec.template.spec.requirements",
		},
		{
			name: "label outside an inclusive range", labels: map[string]string{"example.com/slot": "3"},
			reqs:   []karpv1.NodeSelectorRequirementWithMinValues{req("example.com/slot", gte, "4")},
			reason: nodepool.ReasonLabelsConflict, field: "spec.template.metadata.labels[example.com/slot]",
		},
		{
			name: "restricted requirement key", reqs: []karpv1.NodeSelectorRequirementWithMinValues{req("karpenter.sh/custom", in, "x")},
			reason: nodepool.ReasonLabelRestricted, field: "spec.template.spec.requirements[0]",
		},
		{
			name: "dedicated tenancy", labels: map[string]string{awsv1.LabelInstanceTenancy: "dedicated"},
			reqs: []karpv1.NodeSelectorRequirementWithMinValues{req(awsv1.LabelInstanceTenancy, in, "dedicated", "host")},
		},
		{
			name: "tenancy of no known value", reqs: []karpv1.NodeSelectorRequirementWithMinValues{req(awsv1.LabelInstanceTenancy, in, "host")},
			reason: nodepool.ReasonRequirementsUnsatisfiable, field: "spec.template.spec.requirements[0]",
		},
		{
			name: "capacity types fewer than minValues", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: karpv1.CapacityTypeLabelKey, Operator: in, Values: []string{"spot", "cheap"}, MinValues: ptr.To(2)},
			},
			reason: nodepool.ReasonRequirementsUnsatisfiable, field: "spec.template.spec.requirements[0]",
		},
		{
			name: "kubernetes.io requirement key", reqs: []karpv1.NodeSelectorRequirementWithMinValues{req("node-role.kubernetes.io/worker", in, "")},
			reason: nodepool.ReasonLabelRestricted, field: "spec.template.spec.requirements[0]",
		},
		{
			name: "node.kubernetes.io requirement key", reqs: []karpv1.NodeSelectorRequirementWithMinValues{req("example.node.kubernetes.io/pool", in, "x")},
		},
		{
			name: "hostname label", labels: map[string]string{corev1.LabelHostname: "n1"},
			reason: nodepool.ReasonLabelRestricted, field: "spec.template.metadata.labels[kubernetes.io/hostname]",
		},
		{
			name: "karpenter.k8s.aws label", labels: map[string]string{"karpenter.k8s.aws/custom": "x"},
			reason: nodepool.ReasonLabelRestricted, field: "spec.template.metadata.labels[karpenter.k8s.aws/custom]",
		},
		{
			name: "invalid label value", labels: map[string]string{"team": "a b"},
			reason: nodepool.ReasonLabelInvalid, field: "spec.template.metadata.labels[team]",
		},
		{
			name: "label outside requirement", labels: map[string]string{corev1.LabelArchStable: "arm64"}, reqs: []karpv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelArchStable, in, "amd64")},
			reason: nodepool.ReasonLabelsConflict, field: "spec.template.metadata.labels[kubernetes.io/arch]",
		},
		{
			name: "contradicting requirements", reqs: []karpv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelArchStable, in, "amd64"), req(corev1.LabelArchStable, notIn, "amd64")},
			reason: nodepool.ReasonRequirementsUnsatisfiable, field: "spec.template.spec.requirements",
		},
		{
			name: "minValues beyond what is left", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: awsv1.LabelInstanceFamily, Operator: in, Values: []string{"c5", "m5", "r5"}, MinValues: ptr.To(3)},
				req(awsv1.LabelInstanceFamily, notIn, "r5"),
			},
			reason: nodepool.ReasonRequirementsUnsatisfiable, field: "spec.template.spec.requirements",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := &karpv1.NodePool{}
			np.Name = "pool"
			np.Spec.Template.Labels = tc.labels
			np.Spec.Template.Spec.Requirements = tc.reqs
			err := nodepool.Validate(np)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var verr *nodepool.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Validate = %v, want a *ValidationError", err)
			}
			if verr.Reason != tc.reason || verr.Field != tc.field || !strings.HasPrefix(err.Error(), tc.field+": ") {
				t.Errorf("Validate = %s (%s), want reason %s on %s", err, verr.Reason, tc.reason, tc.field)
			}
		})
	}
}

func TestClaimRequirements(t *testing.T) {
	np := &karpv1.NodePool{}
	np.Name = "pool"
	np.Spec.Template.Labels = map[string]string{"team": "a", "node-role.kubernetes.io/worker": ""}
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")}

	full, err := scheduling.NodePoolRequirements(np, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := full.Keys(), []string{karpv1.NodePoolLabelKey, corev1.LabelArchStable, "node-role.kubernetes.io/worker", "team"}; !slices.Equal(got, want) {
		t.Errorf("Requirements keys = %v, want %v", got, want)
	}
	claim, err := nodepool.ClaimRequirements(np)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := claim.Keys(), []string{karpv1.NodePoolLabelKey, corev1.LabelArchStable, "team"}; !slices.Equal(got, want) {
		t.Errorf("ClaimRequirements keys = %v, want %v (no kubernetes.io label)", got, want)
	}
}

func TestDesiredReplicas(t *testing.T) {
	for _, tc := range []struct {
		replicas *int64
		limit    string
		want     int64
	}{
		{replicas: nil, want: 0},
		{replicas: ptr.To[int64](3), want: 3},
		{replicas: ptr.To[int64](3), limit: "2", want: 2},
		{replicas: ptr.To[int64](3), limit: "5", want: 3},
		{replicas: ptr.To[int64](0), want: 0},
	} {
		np := &karpv1.NodePool{}
		np.Spec.Replicas = tc.replicas
		if tc.limit != "" {
			np.Spec.Limits = karpv1.Limits{nodepool.ResourceNodes: resource.MustParse(tc.limit)}
		}
		if got := nodepool.DesiredReplicas(np); got != tc.want {
			t.Errorf("DesiredReplicas(replicas %v, limit %q) = %d, want %d", tc.replicas, tc.limit, got, tc.want)
		}
	}
}

func TestNewNodeClaimDropsRequirementsTheSchemaRefuses(t *testing.T) {
	np := &karpv1.NodePool{}
	np.Name = "nodes"
	np.Spec.Template.Labels = map[string]string{"node-role.kubernetes.io/node": "", "team": "a"}
	reqs, err := scheduling.NodePoolRequirements(np, nil)
	if err != nil {
		t.Fatal(err)
	}
	claim := nodepool.NewNodeClaim(np, reqs.NodeSelectorRequirements(), nil)
	keys := map[string]bool{}
	for _, r := range claim.Spec.Requirements {
		keys[r.Key] = true
	}
	if keys["node-role.kubernetes.io/node"] || !keys["team"] || !keys[karpv1.NodePoolLabelKey] {
		t.Errorf("requirement keys %v: node-role.kubernetes.io/node must go, team and karpenter.sh/nodepool stay", keys)
	}
	if _, ok := claim.Labels["node-role.kubernetes.io/node"]; !ok {
		t.Errorf("the label must still reach the claim: %v", claim.Labels)
	}
}

// A custom key's requirement, narrowed by the pods to one value, labels the claim (and so its
// node) with that value, as Karpenter's NodeClaim template does; Exists and NotIn give an
// integer; well-known keys and DoesNotExist give none.
func TestNewNodeClaimResolvesCustomLabels(t *testing.T) {
	np := &karpv1.NodePool{}
	np.Name = "default"
	np.Spec.Template.Labels = map[string]string{"team": "a"}
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: "example.com/tier", Operator: corev1.NodeSelectorOpIn, Values: []string{"gold", "silver"}},
		{Key: "example.com/owner", Operator: corev1.NodeSelectorOpExists},
		{Key: "example.com/shard", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"0", "1"}},
		{Key: "example.com/legacy", Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a", "us-east-1b"}},
	}
	reqs, err := scheduling.NodePoolRequirements(np, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The pods chose silver.
	reqs = reqs.With(scheduling.MustRequirement("example.com/tier", corev1.NodeSelectorOpIn, "silver"))
	claim := nodepool.NewNodeClaim(np, reqs.NodeSelectorRequirements(), nil)
	want := map[string]string{
		"team": "a", karpv1.NodePoolLabelKey: "default",
		"example.com/tier": "silver", "example.com/owner": "0", "example.com/shard": "2",
	}
	if !maps.Equal(claim.Labels, want) {
		t.Errorf("labels = %v, want %v", claim.Labels, want)
	}
}
