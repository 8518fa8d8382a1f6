package state

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// ListPDBs reads every PodDisruptionBudget.
func ListPDBs(ctx context.Context, reader client.Reader) ([]*policyv1.PodDisruptionBudget, error) {
	var list policyv1.PodDisruptionBudgetList
	if err := reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing poddisruptionbudgets: %w", err)
	}
	out := make([]*policyv1.PodDisruptionBudget, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// PDBIndex finds the PodDisruptionBudgets that forbid evicting a pod.
type PDBIndex struct {
	pdbs      []*policyv1.PodDisruptionBudget
	selectors []labels.Selector
}

// NewPDBIndex indexes the budgets (their selectors parsed once; a budget whose selector does
// not parse selects nothing).
func NewPDBIndex(pdbs []*policyv1.PodDisruptionBudget) *PDBIndex {
	sorted := append([]*policyv1.PodDisruptionBudget(nil), pdbs...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	idx := &PDBIndex{}
	for _, pdb := range sorted {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		idx.pdbs = append(idx.pdbs, pdb)
		idx.selectors = append(idx.selectors, sel)
	}
	return idx
}

// Blocking returns the first budget that selects pod and allows no disruption now.
func (idx *PDBIndex) Blocking(pod *corev1.Pod) *policyv1.PodDisruptionBudget {
	for i, pdb := range idx.pdbs {
		if pdb.Namespace == pod.Namespace && pdb.Status.DisruptionsAllowed <= 0 && idx.selectors[i].Matches(labels.Set(pod.Labels)) {
			return pdb
		}
	}
	return nil
}

// FullyBlocking returns the first budget that selects pod and can never allow its eviction
// (maxUnavailable 0 or 0%, minAvailable 100%), Karpenter's fully blocking PodDisruptionBudget.
func (idx *PDBIndex) FullyBlocking(pod *corev1.Pod) *policyv1.PodDisruptionBudget {
	for i, pdb := range idx.pdbs {
		if pdb.Namespace != pod.Namespace || !idx.selectors[i].Matches(labels.Set(pod.Labels)) {
			continue
		}
		maxUnavailable, minAvailable := pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable
		if maxUnavailable != nil && (maxUnavailable.Type == intstr.Int && maxUnavailable.IntVal == 0 || maxUnavailable.Type == intstr.String && maxUnavailable.StrVal == "0%") ||
			minAvailable != nil && minAvailable.Type == intstr.String && minAvailable.StrVal == "100%" {
			return pdb
		}
	}
	return nil
}

// CurrentlyReschedulable reports whether a pod of a node being deleted will move soon, so that
// room is made for it now, as Karpenter's PDB limits IsCurrentlyReschedulable: it must move
// (IsReschedulable), no karpenter.sh/do-not-disrupt holds it at now, and no budget can ever
// allow its eviction (those pods wait for the node's terminationGracePeriod).
func (idx *PDBIndex) CurrentlyReschedulable(pod *corev1.Pod, now time.Time) bool {
	return IsReschedulable(pod) && !karpv1.PodDoNotDisrupt(pod, now).Active && idx.FullyBlocking(pod) == nil
}

// ReschedulablePods are the pods bound to a node marked for deletion that will move soon
// (CurrentlyReschedulable), which Karpenter's provisioner and consolidation place beside the
// pending pods (its StateNodes.CurrentlyReschedulablePods of the deleting nodes); none for a
// node not marked.
func (sn *StateNode) ReschedulablePods(pdbs *PDBIndex, now time.Time) []*corev1.Pod {
	if !sn.MarkedForDeletion {
		return nil
	}
	var out []*corev1.Pod
	for _, pod := range sn.Pods {
		if pod.Spec.NodeName != "" && pdbs.CurrentlyReschedulable(pod, now) {
			out = append(out, pod)
		}
	}
	return out
}
