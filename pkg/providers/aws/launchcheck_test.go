package aws

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

// The launch check's EC2 calls, as the fake counts them.
var launchCheckActions = []string{"CreateLaunchTemplate", "CreateFleet", "RunInstances"}

// launchCheckCalls counts the fake's calls of each launch check action.
func (f *fixture) launchCheckCalls() map[string]int {
	out := map[string]int{}
	for _, a := range launchCheckActions {
		out[a] = f.aws.Calls(a)
	}
	return out
}

// expectValidation fails the test unless the NodeClass's ValidationSucceeded has the status,
// reason and message (any message when empty) and Ready agrees with it.
func expectValidation(t *testing.T, nc *awsv1.EC2NodeClass, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	c := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeValidationSucceeded)
	if c == nil || c.Status != status || c.Reason != reason || (message != "" && c.Message != message) {
		t.Errorf("ValidationSucceeded %+v, want %s %s %q", c, status, reason, message)
	}
	if ready, msg := condition(nc, awsv1.ConditionTypeReady); (ready == metav1.ConditionTrue) != (status == metav1.ConditionTrue) {
		t.Errorf("Ready %s (%s) while ValidationSucceeded is %s", ready, msg, status)
	}
}

// dryRunChecks are the permission checks of the dry runs the fake served from the index on:
// each one's action and resource type, and for a RunInstances the instance type it launches.
func dryRunChecks(far *fake.AWS, from int) []string {
	var out []string
	for _, az := range far.Authorizations()[from:] {
		if !strings.HasSuffix(az.Resource, "/*") || az.Action == "ec2:CreateTags" {
			continue
		}
		check := az.Action + " " + resourceKind(az.Resource)
		if v := az.Context["ec2:InstanceType"]; len(v) > 0 {
			check += " " + v[0]
		}
		out = append(out, check)
	}
	return out
}

// TestLaunchCheckRefusedActions: with EC2 refusing the controller ec2:CreateLaunchTemplate,
// ec2:CreateFleet or ec2:RunInstances, the NodeClass is not Ready: ValidationSucceeded is False
// with the action's reason and Karpenter's message naming the action and why, and no claim
// launches. As the AWS provider v1.15.2 (controllers/nodeclass/validation.go, its
// "Authorization Validation" specs): the verdict is remembered, so the next reconcile calls
// nothing and says the same though the permission is back, and once it expires (30 minutes)
// the NodeClass is Ready. A refused check launches nothing.
func TestLaunchCheckRefusedActions(t *testing.T) {
	for _, tc := range []struct{ action, reason string }{
		{"CreateLaunchTemplate", ReasonCreateLaunchTemplateAuthCheckFailed},
		{"CreateFleet", ReasonCreateFleetAuthCheckFailed},
		{"RunInstances", ReasonRunInstancesAuthCheckFailed},
	} {
		t.Run(tc.action, func(t *testing.T) {
			f := newFixture(t)
			f.aws.DenyEC2(tc.action)
			nc, np := f.seed004()
			message := "Controller isn't authorized to call ec2:" + tc.action + ": User is not authorized to perform this operation because no identity-based policy allows it"
			expectValidation(t, nc, metav1.ConditionFalse, tc.reason, message)
			if _, err := f.provider.Create(f.ctx, claimFor(np, "refused", nil)); !cloudprovider.IsNodeClassNotReadyError(err) {
				t.Errorf("Create: %v, want the NodeClass not ready", err)
			}
			if len(f.aws.Fleets()) != 0 || len(f.aws.Instances()) != 0 {
				t.Errorf("the check launched: %d fleets, %d instances", len(f.aws.Fleets()), len(f.aws.Instances()))
			}

			f.aws.AllowEC2(tc.action)
			calls := f.launchCheckCalls()
			f.clock.Step(launchCheckTTL - time.Second)
			nc = f.reconcile(nc.Name)
			expectValidation(t, nc, metav1.ConditionFalse, tc.reason, message)
			if got := f.launchCheckCalls(); !equalCounts(got, calls) {
				t.Errorf("calls %v, then %v: a remembered check called EC2", calls, got)
			}
			f.clock.Step(time.Second)
			nc = f.reconcile(nc.Name)
			expectValidation(t, nc, metav1.ConditionTrue, awsv1.ConditionTypeValidationSucceeded, "")
		})
	}
}

func equalCounts(a, b map[string]int) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return len(a) == len(b)
}

// TestLaunchCheckPasses: with every permission the NodeClass is Ready after the check v1.15.2
// makes: a real launch template of the NodeClass for an on-demand node of no NodePool (tagged
// karpenter.sh/nodepool "", as Karpenter's GetTags), then a dry-run CreateFleet and a dry-run
// RunInstances from it, which launch nothing. Without a NodePool the check launches m5.large,
// v1.15.2's fallback.
func TestLaunchCheckPasses(t *testing.T) {
	f := newFixture(t)
	nc, _ := f.seed004()
	expectValidation(t, nc, metav1.ConditionTrue, awsv1.ConditionTypeValidationSucceeded, "")
	if got, want := f.launchCheckCalls(), map[string]int{"CreateLaunchTemplate": 1, "CreateFleet": 1, "RunInstances": 1}; !equalCounts(got, want) {
		t.Errorf("calls %v, want %v (RunInstances passes in the first subnet)", got, want)
	}
	if len(f.aws.Fleets()) != 0 || len(f.aws.Instances()) != 0 {
		t.Errorf("the check launched: %d fleets, %d instances", len(f.aws.Fleets()), len(f.aws.Instances()))
	}
	lts := f.aws.LaunchTemplates()
	if len(lts) != 1 {
		t.Fatalf("%d launch templates, want the check's", len(lts))
	}
	if v, ok := lts[0].Tags[TagNodePool]; !ok || v != "" || lts[0].Tags[TagNodeClass] != nc.Name || lts[0].ImageID != "ami-0a2023a00d6400001" {
		t.Errorf("the check's launch template %s: tags %v, image %s", lts[0].Name, lts[0].Tags, lts[0].ImageID)
	}
	if got, want := dryRunChecks(f.aws, 0), []string{"ec2:CreateFleet fleet", "ec2:RunInstances instance m5.large"}; !containsAll(got, want) {
		t.Errorf("dry-run checks %v, want %v among them", got, want)
	}
}

func containsAll(got, want []string) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

// TestLaunchCheckDisabled: DISABLE_DRY_RUN (Options.DisableDryRun) skips the check, as in
// v1.15.2: the NodeClass is Ready though every launch action is refused, and EC2 sees no
// launch template, fleet or instance call.
func TestLaunchCheckDisabled(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.DisableDryRun = true })
	for _, a := range launchCheckActions {
		f.aws.DenyEC2(a)
	}
	nc, _ := f.seed004()
	expectValidation(t, nc, metav1.ConditionTrue, awsv1.ConditionTypeValidationSucceeded, "")
	if got := f.launchCheckCalls(); !equalCounts(got, map[string]int{"CreateLaunchTemplate": 0, "CreateFleet": 0, "RunInstances": 0}) {
		t.Errorf("calls %v, want none", got)
	}
}

// TestLaunchCheckRemembered: a passed check stands for 30 minutes while its inputs are
// unchanged (no EC2 call at later reconciles), and runs again at once when the NodeClass's tags
// or annotations change, as v1.15.2's cache keyed by the NodeClass and its tags; the dry runs
// carry the new tags.
func TestLaunchCheckRemembered(t *testing.T) {
	f := newFixture(t)
	nc, _ := f.seed004()
	calls := f.launchCheckCalls()
	f.clock.Step(launchCheckTTL - time.Second)
	f.reconcile(nc.Name)
	if got := f.launchCheckCalls(); !equalCounts(got, calls) {
		t.Errorf("calls %v, then %v within the TTL", calls, got)
	}

	checks := len(f.aws.Authorizations())
	nc = f.reconcile(nc.Name)
	nc.Spec.Tags = map[string]string{"team": "web"}
	if err := env.Client.Update(f.ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc = f.reconcile(nc.Name)
	expectValidation(t, nc, metav1.ConditionTrue, awsv1.ConditionTypeValidationSucceeded, "")
	if got := f.launchCheckCalls(); got["CreateFleet"] != calls["CreateFleet"]+1 || got["RunInstances"] != calls["RunInstances"]+1 {
		t.Errorf("calls %v, then %v after the tags changed, want a new check", calls, got)
	}
	tagged := false
	for _, az := range f.aws.Authorizations()[checks:] {
		if az.Action == "ec2:CreateFleet" && resourceKind(az.Resource) == "fleet" {
			tagged = az.RequestTags["team"] == "web"
		}
	}
	if !tagged {
		t.Error("the new check's fleet lacks the NodeClass's new tag")
	}

	calls = f.launchCheckCalls()
	patch := client.MergeFrom(nc.DeepCopy())
	nc.Annotations = map[string]string{"testing": "validation"}
	if err := env.Client.Patch(f.ctx, nc, patch); err != nil {
		t.Fatal(err)
	}
	f.reconcile(nc.Name)
	if got := f.launchCheckCalls(); got["CreateFleet"] != calls["CreateFleet"]+1 {
		t.Errorf("calls %v, then %v after an annotation was added, want a new check", calls, got)
	}
}

// TestLaunchCheckInstanceType: the check launches a type its NodePools allow (here only
// c5.large), except for the Windows families, which v1.15.2 checks with its fallback m5.large
// whatever their NodePools allow (getPrioritizedInstanceTypes).
func TestLaunchCheckInstanceType(t *testing.T) {
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	for _, tc := range []struct{ name, alias, want string }{
		{"al2023", "al2023@latest", "c5.large"},
		{"windows2022", "windows2022@latest", "m5.large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			nc := ncs[0].DeepCopy()
			nc.Name = tc.name
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: tc.alias}}
			np := nps[0].DeepCopy()
			np.Spec.Template.Spec.NodeClassRef.Name = nc.Name
			if strings.HasPrefix(tc.name, "windows") {
				np = windowsNodePool(np, nc.Name)
			}
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large"))
			if err := env.Client.Create(f.ctx, np); err != nil {
				t.Fatal(err)
			}
			got := f.applyNodeClass(nc)
			expectValidation(t, got, metav1.ConditionTrue, awsv1.ConditionTypeValidationSucceeded, "")
			if checks := dryRunChecks(f.aws, 0); !slices.Contains(checks, "ec2:RunInstances instance "+tc.want) {
				t.Errorf("dry-run checks %v, want a RunInstances of %s", checks, tc.want)
			}
		})
	}
}

// TestLaunchCheckUserDataTooLarge: user data over EC2's 16 KB fails the check when its launch
// template is refused, as UserDataSizeLimitExceeded with v1.15.2's message.
func TestLaunchCheckUserDataTooLarge(t *testing.T) {
	f := newFixture(t)
	ncs, _ := readManifests(t, "seed-004-nodepool.yaml")
	nc := ncs[0]
	nc.Spec.UserData = strp("#!/bin/bash\n" + strings.Repeat("echo padding\n", 1400))
	got := f.applyNodeClass(nc)
	expectValidation(t, got, metav1.ConditionFalse, ReasonUserDataSizeLimitExceeded,
		"ec2:CreateLaunchTemplate rejected the rendered user data as too large: Rendered user data exceeds the EC2 user data size limit")
	if n := f.aws.Calls("CreateFleet"); n != 0 {
		t.Errorf("%d CreateFleet calls after the template was refused", n)
	}
}

// TestLaunchCheckInstanceProfileNotFound: when the dry-run RunInstances finds the NodeClass's
// spec.instanceProfile gone, ValidationSucceeded is False (InstanceProfileNotFound, naming it),
// and, as in v1.15.2, the verdict is not remembered: once the profile is back the next
// reconcile makes the NodeClass Ready.
func TestLaunchCheckInstanceProfileNotFound(t *testing.T) {
	f := newFixture(t)
	f.aws.AddInstanceProfile("custom", testRole)
	ncs, _ := readManifests(t, "seed-004-nodepool.yaml")
	nc := ncs[0]
	nc.Spec.Role = ""
	nc.Spec.InstanceProfile = strp("custom")
	nc = f.applyNodeClass(nc)
	expectValidation(t, nc, metav1.ConditionTrue, awsv1.ConditionTypeValidationSucceeded, "")

	// The profile goes; the NodeClass's instance profile is read again only in 5 minutes, so a
	// new check (its annotations changed) is the first to see it.
	if _, err := f.provider.clients.IAM.RemoveRoleFromInstanceProfile(f.ctx, &iam.RemoveRoleFromInstanceProfileInput{
		InstanceProfileName: aws.String("custom"), RoleName: aws.String(testRole)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.provider.clients.IAM.DeleteInstanceProfile(f.ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("custom")}); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(nc.DeepCopy())
	nc.Annotations = map[string]string{"testing": "profile"}
	if err := env.Client.Patch(f.ctx, nc, patch); err != nil {
		t.Fatal(err)
	}
	nc = f.reconcile(nc.Name)
	expectValidation(t, nc, metav1.ConditionFalse, ReasonInstanceProfileNotFound, `Instance profile "custom" not found`)

	f.aws.AddInstanceProfile("custom", testRole)
	nc = f.reconcile(nc.Name)
	expectValidation(t, nc, metav1.ConditionTrue, awsv1.ConditionTypeValidationSucceeded, "")
}

// TestLaunchCheckAwaitsDependencies: while the NodeClass's subnets (or images, security groups,
// instance profile) are not resolved, ValidationSucceeded is False with DependenciesNotReady, as
// v1.15.2 says before it checks anything with EC2.
func TestLaunchCheckAwaitsDependencies(t *testing.T) {
	f := newFixture(t)
	ncs, _ := readManifests(t, "seed-004-nodepool.yaml")
	nc := ncs[0]
	nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "nowhere"}}}
	got := f.applyNodeClass(nc)
	expectValidation(t, got, metav1.ConditionFalse, ReasonDependenciesNotReady, "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution")
	if calls := f.launchCheckCalls(); !equalCounts(calls, map[string]int{"CreateLaunchTemplate": 0, "CreateFleet": 0, "RunInstances": 0}) {
		t.Errorf("calls %v, want none", calls)
	}
}

// TestLaunchCheckForgottenWithTheNodeClass: deleting the NodeClass drops its check (and its
// launch template), as v1.15.2 clears its cache entries, so a NodeClass made again under the
// name is checked afresh.
func TestLaunchCheckForgottenWithTheNodeClass(t *testing.T) {
	f := newFixture(t)
	nc, _ := f.seed004()
	if err := env.Client.Delete(f.ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, err := NewNodeClassController(f.provider).Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)}); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.provider.launchChecks.get(nc.Name, "", f.clock.Now()); ok || len(f.provider.launchChecks.byName) != 0 {
		t.Error("the deleted NodeClass's check is remembered")
	}
	if n := len(f.aws.LaunchTemplates()); n != 0 {
		t.Errorf("%d launch templates left", n)
	}
}
