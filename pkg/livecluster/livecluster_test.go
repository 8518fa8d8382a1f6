package livecluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/openkarpenter/karpenter/pkg/apis"
	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

func names(list client.ObjectList) []string {
	objs, _ := meta.ExtractList(list)
	var out []string
	for _, o := range objs {
		out = append(out, o.(client.Object).GetName())
	}
	return out
}

func TestList(t *testing.T) {
	web := map[string]string{karpv1.NodePoolLabelKey: "web"}
	objs := []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: web}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}},
		&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: web}},
		&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "d"}},
		&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
	}
	// The cluster serves karpenter.sh but not karpenter.k8s.aws.
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			switch list.(type) {
			case *awsv1.EC2NodeClassList:
				return &meta.NoKindMatchError{GroupKind: EC2NodeClasses.GroupKind()}
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	kinds := []Kind{Nodes, Pods, NodeClaims, NodePools, EC2NodeClasses}
	lists, err := List(context.Background(), kube, kinds, labels.SelectorFromSet(web))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a"}, {"p"}, {"c"}, {"web"}}
	for i, w := range want {
		if got := names(lists[i]); strings.Join(got, ",") != strings.Join(w, ",") {
			t.Errorf("%s: %v, want %v (the selector narrows Nodes and NodeClaims only)", kinds[i].Kind, got, w)
		}
	}
	if lists[4] != nil {
		t.Errorf("EC2NodeClasses not served: got %v, want nil", lists[4])
	}

	// A kind of Kubernetes' own that cannot be listed is an error naming it.
	denied := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return errors.New("forbidden")
		},
	}).Build()
	if _, err := List(context.Background(), denied, []Kind{PodDisruptionBudgets}, nil); err == nil || !strings.Contains(err.Error(), "listing poddisruptionbudgets: forbidden") {
		t.Errorf("error %v, want listing poddisruptionbudgets: forbidden", err)
	}
}

func TestServesKarpenter(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	if served, err := ServesKarpenter(mapper); err != nil || served {
		t.Errorf("without the CRDs: served %v, %v; want false, nil", served, err)
	}
	mapper.Add(karpv1.SchemeGroupVersion.WithKind("NodeClaim"), meta.RESTScopeRoot)
	if served, err := ServesKarpenter(mapper); err != nil || !served {
		t.Errorf("with the CRDs: served %v, %v; want true, nil", served, err)
	}
}
