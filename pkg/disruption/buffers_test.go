package disruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/openkarpenter/karpenter/pkg/capacitybuffer"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// virtualPods are n virtual pods of a CapacityBuffer, each requesting cpu.
func virtualPods(n int32, cpu string) []*corev1.Pod {
	cb := &autoscalingv1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Name: "spare", Namespace: "default", UID: "spare-uid"},
		Status: autoscalingv1beta1.CapacityBufferStatus{Replicas: ptr.To(n), Conditions: []metav1.Condition{
			{Type: autoscalingv1beta1.ConditionReadyForProvisioning, Status: metav1.ConditionTrue}}},
	}
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	return capacitybuffer.BuildVirtualPods(cb, tmpl, metav1.NewTime(epoch))
}

// An empty node that a buffer's virtual pods occupy is kept, with Karpenter's Unconsolidatable
// reason; one whose buffer fits on the nodes that stay anyway is deleted.
func TestEmptyNodeHoldingBufferKept(t *testing.T) {
	for _, tc := range []struct {
		name   string
		buffer []*corev1.Pod
		kept   bool
	}{
		{"no buffer", nil, false},
		{"a buffer the busy node holds", virtualPods(1, "500m"), false},
		{"a buffer only the empty node holds", virtualPods(2, "1"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
			c := newCluster(catalog(), np)
			m := findType(c.types, "m.xlarge")
			c.add(stateNode(np, "busy", m, "on-demand", "test-zone-1", pod("3", "8Gi")))
			c.add(stateNode(np, "empty", m, "on-demand", "test-zone-1"))
			c.in.BufferPods = tc.buffer
			d := Decide(c.in)
			held := false
			for _, b := range d.Unconsolidatable {
				if b.Node == "empty" && b.Reason == `Node "empty" has buffer pods` {
					held = true
				}
			}
			deletesEmpty := d.Command != nil && d.Command.Method == MethodEmptiness
			switch {
			case tc.kept && (deletesEmpty || !held):
				t.Fatalf("command %+v, held %t (%v); want the empty node kept with Karpenter's reason", d.Command, held, d.Unconsolidatable)
			case !tc.kept && (!deletesEmpty || held):
				t.Fatalf("command %+v, held %t; want emptiness of node empty", d.Command, held)
			}
			if tc.kept && d.Command != nil {
				for _, cand := range d.Command.Candidates {
					if cand.Name() == "empty" {
						t.Errorf("%s removes the node holding the buffer", d.Command.Message())
					}
				}
			}
			if got, want := d.Eligible["Empty"], map[bool]int{true: 0, false: 1}[tc.kept]; got != want {
				t.Errorf("%d nodes eligible for emptiness, want %d", got, want)
			}
		})
	}
}

// Consolidation keeps a buffer's room: two half-used nodes are consolidated onto less capacity
// either way, but with a buffer of 8 CPUs the nodes left (and their replacement) still have room
// for it, where without the buffer they do not; the buffer's pods are neither placed nor
// launched for as pods.
func TestConsolidationKeepsBufferRoom(t *testing.T) {
	buffer := virtualPods(8, "1")
	for _, keep := range []bool{false, true} {
		np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
		c := newCluster(catalog(), np)
		m := findType(c.types, "m.2xlarge")
		c.add(stateNode(np, "a", m, "on-demand", "test-zone-1", pod("1", "2Gi")))
		c.add(stateNode(np, "b", m, "on-demand", "test-zone-1", pod("1", "2Gi")))
		if keep {
			c.in.BufferPods = buffer
		}
		d := Decide(c.in)
		if d.Command == nil {
			t.Fatalf("buffer %t: no command (unconsolidatable %v)", keep, d.Unconsolidatable)
		}
		for _, r := range d.Command.Replacements {
			for _, p := range r.Claim.Pods {
				if capacitybuffer.IsVirtual(p) {
					t.Errorf("replacement carries virtual pod %s", p.Name)
				}
			}
		}
		for _, pl := range d.Command.Placements {
			if capacitybuffer.IsVirtual(pl.Pod) {
				t.Errorf("virtual pod %s placed by the command", pl.Pod.Name)
			}
		}
		t.Logf("buffer %t: %s", keep, d.Command.Message())
		c.apply(d.Command)
		room := 0 // 1-CPU pods the nodes left have room for
		for _, sn := range c.in.Nodes {
			free := sn.Available()
			room += int(free.Cpu().MilliValue() / 1000)
		}
		if keep && room < len(buffer) || !keep && room >= len(buffer) {
			t.Errorf("buffer %t: after the command the nodes have room for %d 1-CPU pods; the buffer has %d", keep, room, len(buffer))
		}
	}
}
