// Package livecluster lists a running cluster's objects for the commands that read one:
// `karpenter view` (its Nodes, Pods, DaemonSets, NodeClaims and NodePools, once or through
// informers) and `karpenter simulate --from-cluster` (those and what a dump of the cluster
// holds besides). It owns which kinds there are, which of them a label selector narrows, and
// how a cluster without Karpenter's CRDs is read: its NodePools, NodeClaims and EC2NodeClasses
// are left out, not an error.
package livecluster

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// Kind is one kind of object a command lists.
type Kind struct {
	// GroupVersionKind names it as the API server serves it.
	schema.GroupVersionKind
	// NewList makes the empty list to fill.
	NewList func() client.ObjectList
	// Karpenter marks a kind of Karpenter's CRDs: a cluster without them does not serve it.
	Karpenter bool
	// Selected says a command's label selector narrows it (view --selector): Nodes and
	// NodeClaims, which carry their NodePool's labels.
	Selected bool
}

// The kinds the commands list.
var (
	Nodes                = Kind{corev1.SchemeGroupVersion.WithKind("Node"), func() client.ObjectList { return &corev1.NodeList{} }, false, true}
	Pods                 = Kind{corev1.SchemeGroupVersion.WithKind("Pod"), func() client.ObjectList { return &corev1.PodList{} }, false, false}
	DaemonSets           = Kind{appsv1.SchemeGroupVersion.WithKind("DaemonSet"), func() client.ObjectList { return &appsv1.DaemonSetList{} }, false, false}
	PodDisruptionBudgets = Kind{policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} }, false, false}
	Claims               = Kind{corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), func() client.ObjectList { return &corev1.PersistentVolumeClaimList{} }, false, false}
	Volumes              = Kind{corev1.SchemeGroupVersion.WithKind("PersistentVolume"), func() client.ObjectList { return &corev1.PersistentVolumeList{} }, false, false}
	StorageClasses       = Kind{storagev1.SchemeGroupVersion.WithKind("StorageClass"), func() client.ObjectList { return &storagev1.StorageClassList{} }, false, false}
	NodePools            = Kind{karpv1.SchemeGroupVersion.WithKind("NodePool"), func() client.ObjectList { return &karpv1.NodePoolList{} }, true, false}
	NodeClaims           = Kind{karpv1.SchemeGroupVersion.WithKind("NodeClaim"), func() client.ObjectList { return &karpv1.NodeClaimList{} }, true, true}
	EC2NodeClasses       = Kind{awsv1.SchemeGroupVersion.WithKind("EC2NodeClass"), func() client.ObjectList { return &awsv1.EC2NodeClassList{} }, true, false}
)

// plural is the kind's name in messages: "nodes", "storageclasses".
func (k Kind) plural() string {
	name := strings.ToLower(k.Kind)
	if strings.HasSuffix(name, "s") {
		return name + "es"
	}
	return name + "s"
}

// List lists each kind through r, in order: lists[i] holds kinds[i]'s objects, nil when it is
// one of Karpenter's kinds the cluster does not serve. The selector (nil or empty: every object)
// narrows the Selected kinds; opts apply to every list. An error names the kind.
func List(ctx context.Context, r client.Reader, kinds []Kind, selector labels.Selector, opts ...client.ListOption) (lists []client.ObjectList, err error) {
	selected := opts
	if selector != nil && !selector.Empty() {
		selected = append(selected[:len(selected):len(selected)], client.MatchingLabelsSelector{Selector: selector})
	}
	lists = make([]client.ObjectList, len(kinds))
	for i, k := range kinds {
		list, o := k.NewList(), opts
		if k.Selected {
			o = selected
		}
		if err := r.List(ctx, list, o...); err != nil {
			if k.Karpenter && (meta.IsNoMatchError(err) || apierrors.IsNotFound(err)) {
				continue
			}
			return nil, fmt.Errorf("listing %s: %w", k.plural(), err)
		}
		lists[i] = list
	}
	return lists, nil
}

// ServesKarpenter reports whether the cluster the mapper discovers serves Karpenter's
// karpenter.sh/v1 CRDs (NodeClaims stand for them).
func ServesKarpenter(mapper meta.RESTMapper) (bool, error) {
	_, err := mapper.RESTMapping(NodeClaims.GroupKind(), NodeClaims.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	default:
		return false, fmt.Errorf("discovering nodeclaims: %w", err)
	}
}
