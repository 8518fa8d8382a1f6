package provisioning_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// TestNoSchedulerIsLogged: a pod the kube-scheduler has not tried (no PodScheduled condition)
// for NoSchedulerAfter makes the provisioner say, once, that no kube-scheduler seems to run.
func TestNoSchedulerIsLogged(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	pods := builders.Pods(1, builders.PodOptions{Name: "untried", CPU: "500m", Memory: "1Gi"})
	for _, pod := range pods {
		pod.Status = corev1.PodStatus{}
	}
	pending(t, pods...)
	var said int
	ctx := log.IntoContext(context.Background(), funcr.New(func(_, args string) {
		if strings.Contains(args, "no kube-scheduler seems to be running") {
			said++
		}
	}, funcr.Options{}))
	provision := func(after time.Duration) {
		t.Helper()
		f.clock.SetTime(time.Now().Add(after))
		if _, err := f.provisioner.Provision(ctx); err != nil {
			t.Fatal(err)
		}
	}
	provision(provisioning.NoSchedulerAfter / 2)
	if said != 0 {
		t.Fatalf("said after %s", provisioning.NoSchedulerAfter/2)
	}
	provision(2 * provisioning.NoSchedulerAfter)
	provision(3 * provisioning.NoSchedulerAfter)
	if said != 1 {
		t.Errorf("said %d times past %s, want once", said, provisioning.NoSchedulerAfter)
	}
}

// TestSchedulerCheckAtStart: at start the controller reads the kube-scheduler's Lease and says
// when none seems to run: the Lease missing, or not renewed for SchedulerStale; silent while a
// scheduler renews it.
func TestSchedulerCheckAtStart(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	var said []string
	logged := log.IntoContext(ctx, funcr.New(func(_, args string) { said = append(said, args) }, funcr.Options{}))
	check := provisioning.NewSchedulerCheck(env.Client, func() time.Time { return now })
	if !check.Check(logged) || !strings.Contains(strings.Join(said, "\n"), "does not exist") {
		t.Fatalf("without the Lease: said %q", said)
	}
	renewed := metav1.NewMicroTime(now.Add(-10 * time.Second))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-scheduler"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("scheduler-1"), RenewTime: &renewed}}
	if err := env.Client.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, lease) })
	said = nil
	if check.Check(logged) || len(said) > 0 {
		t.Errorf("with a Lease renewed 10s ago: said %q", said)
	}
	now = now.Add(provisioning.SchedulerStale + time.Minute)
	if !check.Check(logged) || !strings.Contains(strings.Join(said, "\n"), "last renewed") {
		t.Errorf("with a stale Lease: said %q", said)
	}
}
