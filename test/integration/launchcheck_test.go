package integration_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/operator"
	awsprovider "github.com/openkarpenter/karpenter/pkg/providers/aws"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// TestDisableDryRunReachesTheProvider runs the controllers with --cloud-provider aws against
// the in-process AWS far end, which refuses the controller ec2:CreateFleet: by default the
// EC2NodeClass's launch check finds it (ValidationSucceeded False, CreateFleetAuthCheckFailed,
// not Ready); with DISABLE_DRY_RUN (Options.AWS.DisableDryRun) the NodeClass is Ready and EC2
// sees no launch template, fleet or instance call, as in Karpenter.
func TestDisableDryRunReachesTheProvider(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		t.Run(fmt.Sprintf("DISABLE_DRY_RUN=%t", disabled), func(t *testing.T) {
			t.Cleanup(func() { cleanup(t) })
			far := fake.New(fake.Options{Region: "us-west-2"})
			t.Cleanup(far.Close)
			far.SeedEKS(time.Now())
			far.DenyEC2("CreateFleet")
			cfg := far.Config()
			nc := nodeClass("default")
			nc.Spec.Role = fake.SeedNodeRole
			nc.Spec.SubnetSelectorTerms[0].Tags = map[string]string{"karpenter.sh/discovery": fake.SeedClusterName}
			nc.Spec.SecurityGroupSelectorTerms[0].Tags = map[string]string{"karpenter.sh/discovery": fake.SeedClusterName}
			create(t, nc)
			r := startOperator(t, nil, func(o *operator.Options) {
				o.CloudProvider, o.ClusterName = operator.CloudProviderAWS, fake.SeedClusterName
				o.AWS.Config, o.AWS.DisableDryRun = &cfg, disabled
			})
			defer r.stop(t)

			want, reason := metav1.ConditionFalse, awsprovider.ReasonCreateFleetAuthCheckFailed
			if disabled {
				want, reason = metav1.ConditionTrue, awsv1.ConditionTypeValidationSucceeded
			}
			harness.Eventually(t, 30*time.Second, fmt.Sprintf("ValidationSucceeded %s (%s)", want, reason), func() (bool, string) {
				got := &awsv1.EC2NodeClass{}
				if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(nc), got); err != nil {
					return false, err.Error()
				}
				c := meta.FindStatusCondition(got.Status.Conditions, awsv1.ConditionTypeValidationSucceeded)
				ready := meta.IsStatusConditionTrue(got.Status.Conditions, awsv1.ConditionTypeReady)
				return c != nil && c.Status == want && c.Reason == reason && ready == disabled, fmt.Sprintf("%+v, Ready %t", c, ready)
			})
			if disabled {
				for _, action := range []string{"CreateLaunchTemplate", "CreateFleet", "RunInstances"} {
					if n := far.Calls(action); n != 0 {
						t.Errorf("%d %s calls with the dry run disabled", n, action)
					}
				}
			}
		})
	}
}

// TestZonalShiftReachesTheProvider: with ENABLE_ZONAL_SHIFT (Options.AWS.EnableZonalShift)
// the controller does not start for a cluster ARC zonal shift does not manage, naming the
// setting, as Karpenter stops; for one it manages it starts and polls the cluster's shifts.
func TestZonalShiftReachesTheProvider(t *testing.T) {
	far := fake.New(fake.Options{Region: "us-west-2"})
	t.Cleanup(far.Close)
	far.SeedEKS(time.Now())
	cfg := far.Config()
	opts := operator.DefaultOptions()
	opts.LeaderElection, opts.SkipControllerNameValidation = false, true
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.CloudProvider, opts.ClusterName = operator.CloudProviderAWS, fake.SeedClusterName
	opts.AWS.Config, opts.AWS.EnableZonalShift = &cfg, true
	_, err := operator.New(env.Config, opts)
	if err == nil || !strings.Contains(err.Error(), "ENABLE_ZONAL_SHIFT") || !strings.Contains(err.Error(), "is not found in ARC zonal shift") {
		t.Fatalf("a cluster without zonal shift: %v", err)
	}
	far.RegisterZonalShift(fake.SeedClusterName)
	calls := far.Calls("GetManagedResource")
	r := startOperator(t, nil, func(o *operator.Options) {
		o.CloudProvider, o.ClusterName = operator.CloudProviderAWS, fake.SeedClusterName
		o.AWS.Config, o.AWS.EnableZonalShift = &cfg, true
	})
	defer r.stop(t)
	harness.Eventually(t, 30*time.Second, "the zonal shifts read at start and polled", func() (bool, string) {
		n := far.Calls("GetManagedResource") - calls
		return n >= 2, fmt.Sprintf("%d GetManagedResource calls", n)
	})
}
