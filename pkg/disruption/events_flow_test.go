package disruption_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// TestPodsAndNodesSayWhyAsKarpenter: a pod protected by a do-not-disrupt duration says until
// when (DoNotDisruptUntil), one whose duration ran out says so (DoNotDisruptGracePeriodElapsed),
// and the nodes of a NodePool whose consolidation is off say that (Unconsolidatable).
func TestPodsAndNodesSayWhyAsKarpenter(t *testing.T) {
	np := builders.NodePool(m5Pool, func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration() })
	f := newFixture(t, np)
	running := builders.Pod(builders.PodOptions{CPU: "1", Memory: "1Gi"})
	ended := builders.Pod(builders.PodOptions{CPU: "1", Memory: "1Gi"})
	f.node(np, "timed", "m5.large", time.Hour, running)
	f.node(np, "free", "m5.large", time.Hour, ended)
	for _, p := range []struct {
		pod     *corev1.Pod
		started time.Duration
	}{{running, 30 * time.Minute}, {ended, 90 * time.Minute}} {
		p.pod.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "1h"}
		if err := env.Client.Update(context.Background(), p.pod); err != nil {
			t.Fatal(err)
		}
		p.pod.Status.StartTime = &metav1.Time{Time: f.clock.Now().Add(-p.started).Truncate(time.Second)}
		if err := env.Client.Status().Update(context.Background(), p.pod); err != nil {
			t.Fatal(err)
		}
	}
	// Read back from the API server, times are local, and Karpenter formats them as they are.
	until := running.Status.StartTime.Add(time.Hour).Local().Format(time.RFC3339)
	f.step(10 * time.Second)
	f.expectEvent("Normal DoNotDisruptUntil", "The karpenter.sh/do-not-disrupt grace period will elapse at "+until)
	f.expectEvent("Normal DoNotDisruptGracePeriodElapsed", "The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now disruptable")
	f.expectEvent("Normal Unconsolidatable", `NodePool "default" has consolidation disabled`)
}
