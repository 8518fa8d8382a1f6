package view

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openkarpenter/karpenter/pkg/apis"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

func TestViewReaderSource(t *testing.T) {
	a := testNode("a", nodeOptions{nodePool: "web"})
	b := testNode("b", nodeOptions{nodePool: "batch"})
	c := testClaim("c", claimOptions{labels: map[string]string{karpv1.NodePoolLabelKey: "web"}})
	p := testPod("p", "b", "1", "1Gi", corev1.PodRunning)
	agent := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system"}}
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(&a, &b, &c, &p, agent).Build()
	web := labels.SelectorFromSet(labels.Set{karpv1.NodePoolLabelKey: "web"})
	for _, tc := range []struct {
		name       string
		src        ReaderSource
		wantNodes  []string
		wantClaims []string
	}{
		{"everything", ReaderSource{Reader: kube, NodeClaims: true}, []string{"a", "b"}, []string{"c"}},
		{"selected", ReaderSource{Reader: kube, Selector: web, NodeClaims: true}, []string{"a"}, []string{"c"}},
		{"no nodeclaims served", ReaderSource{Reader: kube}, []string{"a", "b"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := tc.src.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var nodes, claims []string
			for _, n := range objs.Nodes {
				nodes = append(nodes, n.Name)
			}
			for _, c := range objs.NodeClaims {
				claims = append(claims, c.Name)
			}
			if !slices.Equal(nodes, tc.wantNodes) || !slices.Equal(claims, tc.wantClaims) || len(objs.Pods) != 1 || len(objs.DaemonSets) != 1 {
				t.Errorf("nodes %v, claims %v, %d pods, %d DaemonSets; want %v, %v, 1 pod and 1 DaemonSet (all pods and DaemonSets whatever the selector)",
					nodes, claims, len(objs.Pods), len(objs.DaemonSets), tc.wantNodes, tc.wantClaims)
			}
		})
	}
}
