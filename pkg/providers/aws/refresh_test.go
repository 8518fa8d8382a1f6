package aws

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// TestNodeClassRefreshIntervals: an EC2NodeClass's subnets, security groups and images are read
// from EC2 again each at its own interval (SUBNET_REFRESH_INTERVAL, SECURITY_GROUP_REFRESH_INTERVAL,
// AMI_REFRESH_INTERVAL), as Karpenter v1.15.2's providers cache them for those times
// (pkg/operator/operator.go NewOperator: subnet.NewDefaultProvider, securitygroup.NewDefaultProvider
// and amifamily.NewDefaultProvider with caches of options.*RefreshInterval); a spec change reads
// them all at once. Before, every part was read every five minutes whatever the settings.
func TestNodeClassRefreshIntervals(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Refresh = RefreshIntervals{Subnets: time.Minute, SecurityGroups: 2 * time.Minute, AMIs: 3 * time.Minute}
	})
	nc, _ := f.seed004()
	calls := func() [3]int {
		return [3]int{f.aws.Calls("DescribeSubnets"), f.aws.Calls("DescribeSecurityGroups"), f.aws.Calls("DescribeImages")}
	}
	last := calls()
	for i, c := range last {
		if c == 0 {
			t.Fatalf("part %d of the NodeClass was not read on its first reconcile: calls %v", i, last)
		}
	}
	step := func(d time.Duration, want [3]int) {
		t.Helper()
		f.clock.Step(d)
		res, err := NewNodeClassController(f.provider).Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)})
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != time.Minute {
			t.Errorf("requeue after %s, want the shortest interval, 1m", res.RequeueAfter)
		}
		now := calls()
		got := [3]int{now[0] - last[0], now[1] - last[1], now[2] - last[2]}
		if got != want {
			t.Errorf("after %s more: new reads of subnets, security groups, images %v, want %v", d, got, want)
		}
		last = now
	}
	step(0, [3]int{0, 0, 0})
	step(30*time.Second, [3]int{0, 0, 0})
	step(30*time.Second, [3]int{1, 0, 0}) // 1m
	step(time.Minute, [3]int{1, 1, 0})    // 2m
	step(time.Minute, [3]int{1, 0, 1})    // 3m

	// A spec change reads every part again at once.
	got := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	got.Spec.Tags = map[string]string{"team": "payments"}
	if err := env.Client.Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	step(0, [3]int{1, 1, 1})
	if ready := f.reconcile(nc.Name); !isReady(ready) {
		t.Errorf("NodeClass not Ready after the refreshes: %v", ready.Status.Conditions)
	}
}

func isReady(nc *awsv1.EC2NodeClass) bool {
	s, _ := condition(nc, awsv1.ConditionTypeReady)
	return s == metav1.ConditionTrue
}

// TestRefreshIntervalsValidated: an interval under a minute is refused naming its setting, as
// Karpenter v1.15.2 refuses it (pkg/operator/options/options.go Validate).
func TestRefreshIntervalsValidated(t *testing.T) {
	err := Options{ClusterName: "c", KubeClient: env.Client, KubernetesVersion: func() (string, error) { return "1.35", nil },
		Refresh: RefreshIntervals{AMIs: 30 * time.Second, Subnets: time.Minute}}.Validate()
	for _, want := range []string{"--ami-refresh-interval (AMI_REFRESH_INTERVAL) 30s", "--security-group-refresh-interval (SECURITY_GROUP_REFRESH_INTERVAL) 0s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "SUBNET_REFRESH_INTERVAL") {
		t.Errorf("a 1m subnet interval refused: %v", err)
	}
}

// TestEKSControlPlaneVersion: with EKS_CONTROL_PLANE the cluster's version, which AMI aliases
// resolve by, is the one EKS DescribeCluster reports, not the API server's, as Karpenter
// v1.15.2's version provider reads it (pkg/providers/version/version.go UpdateVersion). Here the
// API server's version cannot be read at all: without the setting the images do not resolve.
func TestEKSControlPlaneVersion(t *testing.T) {
	noAPIServer := func() (string, error) { return "", errors.New("the API server's version is not reachable") }
	for _, eks := range []bool{false, true} {
		f := newFixture(t, func(o *Options) { o.KubernetesVersion, o.EKSControlPlane = noAPIServer, eks })
		nc, _ := f.seed004()
		status, msg := condition(nc, awsv1.ConditionTypeAMIsReady)
		if want := map[bool]metav1.ConditionStatus{false: metav1.ConditionFalse, true: metav1.ConditionTrue}[eks]; status != want {
			t.Errorf("EKSControlPlane %v: AMIsReady %s (%s), want %s", eks, status, msg, want)
		}
		if eks && len(nc.Status.AMIs) == 0 {
			t.Errorf("EKSControlPlane: no images resolved")
		}
		env.Purge(t, []client.ObjectList{&awsv1.EC2NodeClassList{}})
	}
}
