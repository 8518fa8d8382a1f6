package provisioning_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
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
