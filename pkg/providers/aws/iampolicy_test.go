package aws

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

// stringList is an IAM policy value that may be one string or a list of them.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = stringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*l = many
	return nil
}

// iamPolicy is an identity policy: Allow statements with actions, resources and conditions.
type iamPolicy struct {
	Statement []struct {
		Sid       string
		Effect    string
		Action    stringList
		Resource  stringList
		Condition map[string]map[string]stringList
	}
}

// loadPolicy reads a policy file with its ${…} placeholders substituted.
func loadPolicy(t *testing.T, file string, vars map[string]string) iamPolicy {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for k, v := range vars {
		text = strings.ReplaceAll(text, "${"+k+"}", v)
	}
	if i := strings.Index(text, "${"); i >= 0 {
		t.Fatalf("%s: placeholder %s left unsubstituted", file, text[i:min(len(text), i+30)])
	}
	var p iamPolicy
	if err := json.Unmarshal([]byte(text), &p); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return p
}

// globMatch matches IAM's wildcards: * any run of characters, ? one character.
func globMatch(pattern, s string) bool {
	// path.Match treats / specially; IAM does not, so match byte by byte.
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if globMatch(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && globMatch(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && globMatch(pattern[1:], s[1:])
}

// conditionValues are the values of a condition key for a request, and whether it has the key.
func conditionValues(az fake.Authorization, key string) ([]string, bool) {
	lower := strings.ToLower(key)
	switch {
	case strings.HasPrefix(lower, "aws:requesttag/"):
		v, ok := az.RequestTags[key[len("aws:RequestTag/"):]]
		return []string{v}, ok
	case strings.HasPrefix(lower, "aws:resourcetag/"):
		v, ok := az.ResourceTags[key[len("aws:ResourceTag/"):]]
		return []string{v}, ok
	}
	for k, v := range az.Context {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

// conditionHolds evaluates one condition operator on one key, as IAM does for the operators
// the two policies use; an operator it does not know fails the test rather than pass.
func conditionHolds(t *testing.T, operator, key string, want []string, az fake.Authorization) bool {
	got, present := conditionValues(az, key)
	anyMatch := func(v string, like bool) bool {
		return slices.ContainsFunc(want, func(w string) bool {
			if like {
				return globMatch(w, v)
			}
			return w == v
		})
	}
	switch operator {
	case "StringEquals", "StringLike":
		return present && len(got) > 0 && anyMatch(got[0], operator == "StringLike")
	case "StringEqualsIfExists", "StringLikeIfExists":
		return !present || anyMatch(got[0], operator == "StringLikeIfExists")
	case "ForAllValues:StringEquals", "ForAllValues:StringLike":
		like := operator == "ForAllValues:StringLike"
		return !slices.ContainsFunc(got, func(v string) bool { return !anyMatch(v, like) })
	case "ForAnyValue:StringEquals", "ForAnyValue:StringLike":
		like := operator == "ForAnyValue:StringLike"
		return slices.ContainsFunc(got, func(v string) bool { return anyMatch(v, like) })
	}
	t.Fatalf("condition operator %s is not evaluated by this test; teach it", operator)
	return false
}

// allowedBy returns the Sid of the first statement that allows the check, or "" when none does.
func allowedBy(t *testing.T, p iamPolicy, az fake.Authorization) string {
	for i, s := range p.Statement {
		if s.Effect != "Allow" {
			continue
		}
		if !slices.ContainsFunc(s.Action, func(a string) bool { return globMatch(strings.ToLower(a), strings.ToLower(az.Action)) }) {
			continue
		}
		if !slices.ContainsFunc(s.Resource, func(r string) bool { return globMatch(r, az.Resource) }) {
			continue
		}
		holds := true
		for _, operator := range slices.Sorted(maps.Keys(s.Condition)) {
			for _, key := range slices.Sorted(maps.Keys(s.Condition[operator])) {
				if !conditionHolds(t, operator, key, s.Condition[operator][key], az) {
					holds = false
				}
			}
		}
		if holds {
			if s.Sid == "" {
				return fmt.Sprintf("statement %d", i)
			}
			return s.Sid
		}
	}
	return ""
}

// resourceKind is an ARN's resource type (instance, launch-template, …), or * for *.
func resourceKind(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	kind, _, _ := strings.Cut(parts[len(parts)-1], "/")
	return kind
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"arn:aws:ec2:us-west-2:*:instance/*", "arn:aws:ec2:us-west-2:111122223333:instance/i-0123", true},
		{"arn:aws:ec2:us-west-2:*:instance/*", "arn:aws:ec2:us-east-1:111122223333:instance/i-0123", false},
		{"arn:aws:ec2:us-west-2::image/*", "arn:aws:ec2:us-west-2::image/ami-1", true},
		{"*", "", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
	} {
		if got := globMatch(c.pattern, c.s); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v", c.pattern, c.s, got)
		}
	}
}

// TestIAMPoliciesAllowEveryCall runs the provider through a cluster's life against the fake,
// which records every permission check AWS would make (each resource a call creates or acts
// on, with its request and resource tags, ec2:CreateAction, iam:PassedToService and the
// requested region), and evaluates both the project's policy (docs/iam-policy.json) and
// Karpenter's published one (testdata/karpenter-controller-policy.json, from its
// getting-started CloudFormation template) against each: every check must be allowed by both,
// tag conditions included, so a user can keep Karpenter's IAM role as it is.
func TestIAMPoliciesAllowEveryCall(t *testing.T) {
	const queue = "karpenter-interruptions"
	f := newFixture(t, withReservedCapacity)
	f.aws.AddCapacityReservation(fake.CapacityReservation{ID: crM5, InstanceType: "m5.large", Zone: "us-west-2a", TotalInstanceCount: 1, Tags: map[string]string{"team": "ml"}})
	nc, np := f.seed004()
	if nc.Status.InstanceProfile == "" {
		t.Fatal("no instance profile was made for the role")
	}

	// An on-demand node that registers and is tagged with its name.
	onDemand := f.launchRecorded(np, "general-purpose-od")
	onDemand.Status.NodeName = "ip-10-0-0-1.us-west-2.compute.internal"
	if err := env.Client.Status().Update(f.ctx, onDemand); err != nil {
		t.Fatal(err)
	}
	if _, err := NewInstanceTagger(f.provider).Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(onDemand)}); err != nil {
		t.Fatal(err)
	}
	// A spot node, interrupted through the queue.
	spotPool := np.DeepCopy()
	for i, r := range spotPool.Spec.Template.Spec.Requirements {
		if r.Key == karpv1.CapacityTypeLabelKey {
			spotPool.Spec.Template.Spec.Requirements[i].Values = []string{karpv1.CapacityTypeSpot}
		}
	}
	spot := f.launchRecorded(spotPool, "general-purpose-spot")
	spotID, _ := instanceIDOf(spot.Status.ProviderID)
	f.aws.SendMessage(queue, fmt.Sprintf(`{"version":"0","id":"1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{"instance-id":"%s","instance-action":"terminate"}}`, spotID))
	interruptions := NewInterruptionController(f.provider, nil)
	interruptions.WaitTime = 0
	if _, err := interruptions.Poll(f.ctx); err != nil {
		t.Fatal(err)
	}
	// The instance status checks, polled with or without a queue.
	if err := NewInstanceStatusController(f.provider, nil).Poll(f.ctx); err != nil {
		t.Fatal(err)
	}
	// Zonal shifts (ENABLE_ZONAL_SHIFT): read at start and polled.
	f.aws.RegisterZonalShift(testCluster)
	if err := f.provider.EnableZonalShift(f.ctx); err != nil {
		t.Fatal(err)
	}
	if err := NewZonalShiftController(f.provider, nil).Poll(f.ctx); err != nil {
		t.Fatal(err)
	}
	// A node with Elastic Fabric Adapters (network interfaces on two cards).
	if _, err := f.provider.Create(f.ctx, claimFor(np, "general-purpose-efa", corev1.ResourceList{"vpc.amazonaws.com/efa": resource.MustParse("2")},
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c6in.32xlarge"))); err != nil {
		t.Fatal(err)
	}
	// A node in a capacity reservation (the ReservedCapacity gate): the NodeClass reads its
	// reservations, and the launch targets one.
	reserved := nc.DeepCopy()
	reserved.Spec.CapacityReservationSelectorTerms = mlTerms
	if err := env.Client.Update(f.ctx, reserved); err != nil {
		t.Fatal(err)
	}
	f.reconcile(nc.Name)
	reservedPool := np.DeepCopy()
	for i, r := range reservedPool.Spec.Template.Spec.Requirements {
		if r.Key == karpv1.CapacityTypeLabelKey {
			reservedPool.Spec.Template.Spec.Requirements[i].Values = []string{karpv1.CapacityTypeReserved}
		}
	}
	if c := f.launchRecorded(reservedPool, "general-purpose-reserved", req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")); c.Labels[awsv1.LabelCapacityReservationID] != crM5 {
		t.Fatalf("the reserved launch went to %v", c.Labels)
	}
	// A node in a placement group: the NodeClass reads the group, and the launch places the
	// instance in it.
	f.aws.AddPlacementGroup(fake.PlacementGroup{ID: pgCluster, Name: "hpc", Strategy: fake.StrategyCluster})
	placed := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(nc), placed); err != nil {
		t.Fatal(err)
	}
	placed.Spec.CapacityReservationSelectorTerms = nil
	placed.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: strp("hpc")}
	if err := env.Client.Update(f.ctx, placed); err != nil {
		t.Fatal(err)
	}
	f.reconcile(nc.Name)
	if c := f.launchRecorded(np, "general-purpose-placed", req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large")); c.Labels[awsv1.LabelPlacementGroupID] != pgCluster {
		t.Fatalf("the placed launch went to %v", c.Labels)
	}
	// Node repair's reboot (RebootForRepair), then termination, then a day later the
	// collectors: prices, launch templates, instance profiles.
	if err := f.provider.Reboot(f.ctx, onDemand, "reboot-1"); err != nil {
		t.Fatal(err)
	}
	if err := f.provider.Delete(f.ctx, onDemand); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(25 * time.Hour)
	NewLaunchTemplateGC(f.provider).pass(f.ctx)
	// The NodeClass goes: its instance profile is emptied and deleted.
	env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}})
	if err := env.Client.Delete(f.ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, err := NewNodeClassController(f.provider).Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.aws.InstanceProfiles()); n != 0 {
		t.Fatalf("%d instance profiles left", n)
	}

	checks := f.aws.Authorizations()
	// The scenario reaches every AWS API the code calls, so every call is evaluated.
	seen := map[string]bool{}
	for _, c := range checks {
		seen[c.Action] = true
	}
	for action, files := range calledActions(t) {
		if !seen[action] {
			t.Errorf("%s (called in %v) was not exercised: extend the scenario", action, files)
		}
	}
	for _, want := range []string{"ec2:RunInstances", "iam:PassRole"} {
		if !seen[want] {
			t.Errorf("no %s check recorded", want)
		}
	}
	// The NodeClass's launch check: its dry runs' checks are evaluated too.
	if got := dryRunChecks(f.aws, 0); !containsAll(got, []string{"ec2:CreateFleet fleet", "ec2:RunInstances instance m5.large"}) {
		t.Errorf("dry-run checks %v: the launch check's are not among those evaluated", got)
	}

	expectAllowed(t, f.aws, queue, checks)
	t.Logf("%d permission checks evaluated", len(checks))
}

// beyondPublishedPolicy are the actions Karpenter calls that its published controller policy
// does not grant, each with why: a user who turns the feature on adds them, as Karpenter's
// docs say. docs/iam-policy.json grants them.
var beyondPublishedPolicy = map[string]string{
	"ec2:RebootInstances": "node repair's reboot (the RebootForRepair gate): the AWS provider v1.15.2's chart says the gate \"requires the ec2:RebootInstances permission\"; without it a reboot fails at once and the node is replaced",
}

// expectAllowed evaluates the project's policy (docs/iam-policy.json) and Karpenter's
// published one against each permission check, filled in for the far end's account and
// region, the test cluster and the interruption queue, and fails the test for each check one
// of them denies.
func expectAllowed(t *testing.T, far *fake.AWS, queue string, checks []fake.Authorization) {
	t.Helper()
	region, account := far.Region(), far.AccountID()
	nodeRoleARN := fmt.Sprintf("arn:aws:iam::%s:role/%s", account, testRole)
	policies := map[string]iamPolicy{
		"docs/iam-policy.json": loadPolicy(t, "../../../docs/iam-policy.json", map[string]string{
			"AWS_PARTITION": "aws", "AWS_REGION": region, "AWS_ACCOUNT_ID": account, "CLUSTER_NAME": testCluster,
			"NODE_ROLE_NAME": testRole, "INTERRUPTION_QUEUE": queue,
		}),
		"Karpenter's published policy": loadPolicy(t, "testdata/karpenter-controller-policy.json", map[string]string{
			"AWS::Partition": "aws", "AWS::Region": region, "AWS::AccountId": account, "ClusterName": testCluster,
			"KarpenterNodeRole.Arn":          nodeRoleARN,
			"KarpenterInterruptionQueue.Arn": fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, account, queue),
		}),
	}
	for _, name := range slices.Sorted(maps.Keys(policies)) {
		denied := map[string]int{}
		for _, c := range checks {
			if name == "Karpenter's published policy" && beyondPublishedPolicy[c.Action] != "" {
				continue
			}
			if allowedBy(t, policies[name], c) == "" {
				key := fmt.Sprintf("%s on %s (request tags %v, resource tags %v, context %v)", c.Action, resourceKind(c.Resource), c.RequestTags, c.ResourceTags, c.Context)
				denied[key]++
			}
		}
		for _, k := range slices.Sorted(maps.Keys(denied)) {
			t.Errorf("%s denies %d× %s", name, denied[k], k)
		}
	}
}

// TestPolicyEvaluatorDenies shows the evaluator refuses what IAM refuses: a launch whose
// instance lacks the cluster tag, a launch template without a NodePool tag (Karpenter's
// policy), a request in another region, and CreateTags on a running instance with a key
// Karpenter's policy does not allow.
func TestPolicyEvaluatorDenies(t *testing.T) {
	karpenter := loadPolicy(t, "testdata/karpenter-controller-policy.json", map[string]string{
		"AWS::Partition": "aws", "AWS::Region": "us-west-2", "AWS::AccountId": "111122223333", "ClusterName": "c",
		"KarpenterNodeRole.Arn": "arn:aws:iam::111122223333:role/node", "KarpenterInterruptionQueue.Arn": "arn:aws:sqs:us-west-2:111122223333:q",
	})
	region := map[string][]string{"aws:RequestedRegion": {"us-west-2"}}
	owned := map[string]string{"kubernetes.io/cluster/c": "owned", "eks:eks-cluster-name": "c", "karpenter.sh/nodepool": "default"}
	instance := "arn:aws:ec2:us-west-2:111122223333:instance/i-0123456789abcdef0"
	for _, c := range []struct {
		name    string
		az      fake.Authorization
		allowed bool
	}{
		{"tagged launch", fake.Authorization{Action: "ec2:RunInstances", Resource: instance, RequestTags: owned, Context: region}, true},
		{"untagged launch", fake.Authorization{Action: "ec2:RunInstances", Resource: instance, RequestTags: map[string]string{"kubernetes.io/cluster/c": "owned"}, Context: region}, false},
		{"template without a NodePool tag", fake.Authorization{Action: "ec2:CreateFleet", Resource: "arn:aws:ec2:us-west-2:111122223333:launch-template/lt-1",
			ResourceTags: map[string]string{"kubernetes.io/cluster/c": "owned"}, Context: region}, false},
		{"describe in the region", fake.Authorization{Action: "ec2:DescribeInstances", Resource: "*", Context: region}, true},
		{"describe in another region", fake.Authorization{Action: "ec2:DescribeInstances", Resource: "*", Context: map[string][]string{"aws:RequestedRegion": {"eu-west-1"}}}, false},
		{"tag a running instance with its name", fake.Authorization{Action: "ec2:CreateTags", Resource: instance, ResourceTags: owned,
			RequestTags: map[string]string{"Name": "n"}, Context: map[string][]string{"aws:TagKeys": {"Name"}}}, true},
		{"tag a running instance with another key", fake.Authorization{Action: "ec2:CreateTags", Resource: instance, ResourceTags: owned,
			RequestTags: map[string]string{"team": "x"}, Context: map[string][]string{"aws:TagKeys": {"team"}}}, false},
	} {
		if got := allowedBy(t, karpenter, c.az) != ""; got != c.allowed {
			t.Errorf("%s: allowed %v, want %v", c.name, got, c.allowed)
		}
	}
}

// TestInstanceTaggerNamesTheInstance: a registered claim's instance gets its Name (the node's
// name) once, and the claim Karpenter's annotations; a second pass makes no call.
func TestInstanceTaggerNamesTheInstance(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	claim := f.launchRecorded(np, "general-purpose-named")
	tagger := NewInstanceTagger(f.provider)
	key := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(claim)}
	if _, err := tagger.Reconcile(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	if n := f.aws.Calls("CreateTags"); n != 0 {
		t.Fatalf("tagged before the node registered (%d calls)", n)
	}
	claim.Status.NodeName = "ip-10-0-0-9.us-west-2.compute.internal"
	if err := env.Client.Status().Update(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := tagger.Reconcile(f.ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.aws.Calls("CreateTags"); n != 1 {
		t.Errorf("%d CreateTags calls, want 1", n)
	}
	id, _ := instanceIDOf(claim.Status.ProviderID)
	inst, _ := f.aws.Instance(id)
	if inst.Tags[TagName] != claim.Status.NodeName || inst.Tags[TagEKSClusterName] != testCluster || inst.Tags[TagNodeClaim] != claim.Name {
		t.Errorf("instance tags %v", inst.Tags)
	}
	got := &karpv1.NodeClaim{}
	if err := env.Client.Get(f.ctx, key.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[awsv1.AnnotationInstanceTagged] != "true" || got.Annotations[awsv1.AnnotationClusterNameTagged] != "true" {
		t.Errorf("annotations %v", got.Annotations)
	}
}
