package view

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(&a, &b, &c, &p).Build()
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
			if !slices.Equal(nodes, tc.wantNodes) || !slices.Equal(claims, tc.wantClaims) || len(objs.Pods) != 1 {
				t.Errorf("nodes %v, claims %v, %d pods; want %v, %v, 1 pod (all pods whatever the selector)",
					nodes, claims, len(objs.Pods), tc.wantNodes, tc.wantClaims)
			}
		})
	}
}
