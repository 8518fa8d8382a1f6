package memory

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// subResourceClient writes one subresource: "status", "eviction" or "binding".
type subResourceClient struct {
	c    *Client
	name string
}

// Status returns a writer of the status subresource: Update and Patch change only the status
// of objects whose kind has a status subresource (conflict-checked like Update), and fail with
// NotFound for other kinds, as kube-apiserver does.
func (c *Client) Status() client.SubResourceWriter { return &subResourceClient{c: c, name: "status"} }

// SubResource returns a client of the named subresource. Supported: "status" (Update, Patch),
// "eviction" (Create, for Pods, honouring PodDisruptionBudgets) and "binding" (Create, for
// Pods). Anything else fails with MethodNotSupported.
func (c *Client) SubResource(name string) client.SubResourceClient {
	return &subResourceClient{c: c, name: name}
}

// Get is not supported for any subresource.
func (r *subResourceClient) Get(_ context.Context, obj client.Object, _ client.Object, _ ...client.SubResourceGetOption) error {
	return r.unsupported(obj, "get")
}

// Create creates an eviction or a binding of a Pod.
func (r *subResourceClient) Create(_ context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceCreateOption) error {
	co := client.SubResourceCreateOptions{}
	co.ApplyOptions(opts)
	switch r.name {
	case "eviction":
		return r.c.evict(obj, sub, len(co.DryRun) > 0)
	case "binding":
		return r.c.bind(obj, sub, len(co.DryRun) > 0)
	}
	return r.unsupported(obj, "create")
}

// Update writes the status of obj (or of the WithSubResourceBody object).
func (r *subResourceClient) Update(_ context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if r.name != "status" {
		return r.unsupported(obj, "update")
	}
	uo := client.SubResourceUpdateOptions{}
	uo.ApplyOptions(opts)
	body := obj
	if uo.SubResourceBody != nil {
		body = uo.SubResourceBody
	}
	info, err := r.c.infoFor(body)
	if err != nil {
		return err
	}
	return r.c.update(info, body, "status", len(uo.DryRun) > 0)
}

// Patch patches the status of obj.
func (r *subResourceClient) Patch(_ context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if r.name != "status" {
		return r.unsupported(obj, "patch")
	}
	po := client.SubResourcePatchOptions{}
	po.ApplyOptions(opts)
	body := obj
	if po.SubResourceBody != nil {
		body = po.SubResourceBody
	}
	info, err := r.c.infoFor(body)
	if err != nil {
		return err
	}
	return r.c.patch(info, body, patch, "status", len(po.DryRun) > 0)
}

// Apply is server-side apply, which the store does not support.
func (r *subResourceClient) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: r.name}, "server-side apply")
}

func (r *subResourceClient) unsupported(obj client.Object, verb string) error {
	gr := schema.GroupResource{Resource: r.name}
	if info, err := r.c.infoFor(obj); err == nil {
		gr.Group, gr.Resource = info.gr.Group, info.gr.Resource+"/"+r.name
	}
	return apierrors.NewMethodNotSupported(gr, verb)
}

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

// podLocked returns the store of Pods and the slot of the pod named like obj. Callers hold mu.
func (c *Client) podLocked(obj client.Object) (*kindStore, *slot, error) {
	info := c.byGVK[podGVK]
	if info == nil {
		return nil, nil, runtime.NewNotRegisteredErrForKind(c.scheme.Name(), podGVK)
	}
	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	ks := c.storeLocked(info)
	s := ks.get(key)
	if s == nil {
		return nil, nil, apierrors.NewNotFound(info.gr, key.Name)
	}
	return ks, s, nil
}

// isPod reports whether obj is a Pod, typed or not.
func (c *Client) isPod(obj client.Object) bool {
	info, err := c.infoFor(obj)
	return err == nil && info.gvk == podGVK
}

// evict is the eviction subresource of a Pod, modelled on kube-apiserver's: a pod that is
// Pending, finished or already being deleted is deleted at once; otherwise the
// PodDisruptionBudget (at most one) selecting it must allow a disruption, computed on the
// spot from the pods it selects as the disruption controller would, else the answer is 429
// TooManyRequests. An evicted pod gets the DisruptionTarget condition and is deleted with the
// eviction's DeleteOptions (so a bound pod terminates gracefully).
func (c *Client) evict(obj client.Object, sub client.Object, dryRun bool) error {
	if !c.isPod(obj) {
		return (&subResourceClient{c: c, name: "eviction"}).unsupported(obj, "create")
	}
	var name string
	var deleteOpts *metav1.DeleteOptions
	switch e := sub.(type) {
	case *policyv1.Eviction:
		name, deleteOpts = e.Name, e.DeleteOptions
	case *policyv1beta1.Eviction:
		name, deleteOpts = e.Name, e.DeleteOptions
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("an eviction must be a policy/v1 Eviction, not %T", sub))
	}
	if name != "" && name != obj.GetName() {
		return apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	o := evictionDeleteOptions(deleteOpts)
	o.dryRun = o.dryRun || dryRun
	c.mu.Lock()
	defer c.unlockAndNotify()
	ks, s, err := c.podLocked(obj)
	if err != nil {
		return err
	}
	pod := s.obj.(*corev1.Pod)
	if p := o.preconditions; p != nil {
		// Preconditions apply to the pod as it is, before the DisruptionTarget condition.
		if p.UID != nil && *p.UID != pod.UID {
			return apierrors.NewConflict(ks.info.gr, pod.Name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, pod.UID))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != pod.ResourceVersion {
			return apierrors.NewConflict(ks.info.gr, pod.Name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, pod.ResourceVersion))
		}
		o.preconditions = nil
	}
	pdbs := c.budgetsForLocked(pod)
	if !canIgnoreBudgets(pod) {
		if len(pdbs) > 1 {
			return statusError(http.StatusInternalServerError, metav1.StatusReasonUnknown, "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
		}
		if len(pdbs) == 1 {
			pdb := pdbs[0].obj.(*policyv1.PodDisruptionBudget)
			st := c.budgetStatusLocked(pdb)
			skip := !podHealthy(pod) && (pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow ||
				st.CurrentHealthy >= st.DesiredHealthy && st.DesiredHealthy > 0)
			if !skip && st.DisruptionsAllowed <= 0 {
				err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
				err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
					Type:    policyv1.DisruptionBudgetCause,
					Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, st.DesiredHealthy, st.CurrentHealthy),
				})
				return err
			}
		}
	}
	if o.dryRun {
		return nil
	}
	if pod.DeletionTimestamp == nil {
		next := shallowClone(pod).(*corev1.Pod)
		if setCondition(&next.Status.Conditions, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting",
		}, c.now()) {
			c.commitLocked(ks, s, next)
		}
	}
	if ks.get(s.key) == s {
		if err := c.deleteLocked(ks, s, o); err != nil {
			return err
		}
	}
	for _, p := range pdbs {
		c.syncBudgetLocked(p)
	}
	return nil
}

// evictionDeleteOptions converts an eviction's DeleteOptions.
func evictionDeleteOptions(do *metav1.DeleteOptions) deleteOpts {
	if do == nil {
		return deleteOpts{}
	}
	return deleteOptions(&client.DeleteOptions{Raw: do})
}

// canIgnoreBudgets reports whether evicting pod skips disruption budgets, as it does for pods
// that are Pending, finished or already being deleted.
func canIgnoreBudgets(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed:
		return true
	}
	return pod.DeletionTimestamp != nil
}

// podHealthy reports whether a pod counts as healthy for a disruption budget: Running, not being
// deleted, and not marked unready (a Running pod without a Ready condition counts as ready,
// which suits simulated kubelets that only set the phase).
func podHealthy(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return true
}

// setCondition sets cond in conds (replacing the slice, never writing into a shared array),
// keeping the transition time when the status does not change. It reports whether anything
// changed.
func setCondition(conds *[]corev1.PodCondition, cond corev1.PodCondition, now metav1.Time) bool {
	out := slices.Clone(*conds)
	for i, c := range out {
		if c.Type != cond.Type {
			continue
		}
		cond.LastTransitionTime = c.LastTransitionTime
		if c.Status != cond.Status {
			cond.LastTransitionTime = now
		}
		if equality.Semantic.DeepEqual(c, cond) {
			return false
		}
		out[i] = cond
		*conds = out
		return true
	}
	cond.LastTransitionTime = now
	*conds = append(out, cond)
	return true
}

var pdbGVK = policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget")

// budgetsForLocked returns the PodDisruptionBudgets of pod's namespace that select it.
func (c *Client) budgetsForLocked(pod *corev1.Pod) []*slot {
	ks := c.stores[pdbGVK]
	if ks == nil {
		return nil
	}
	var out []*slot
	ks.each(pod.Namespace, func(s *slot) bool {
		if sel := budgetSelector(s.obj.(*policyv1.PodDisruptionBudget)); sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, s)
		}
		return true
	})
	return out
}

// budgetSelector is a budget's pod selector; a budget without one selects nothing.
func budgetSelector(pdb *policyv1.PodDisruptionBudget) labels.Selector {
	if pdb.Spec.Selector == nil {
		return labels.Nothing()
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// budgetStatusLocked computes a budget's status as the disruption controller would, from the
// pods it selects now: healthy pods are those podHealthy accepts; the expected count is the
// number of selected pods for an integer minAvailable and otherwise the scale of their
// controllers (ReplicaSets, their Deployments, StatefulSets, ReplicationControllers), each pod
// without one counting for itself (where the disruption controller would give up).
func (c *Client) budgetStatusLocked(pdb *policyv1.PodDisruptionBudget) policyv1.PodDisruptionBudgetStatus {
	sel := budgetSelector(pdb)
	var pods []*corev1.Pod
	healthy := 0
	if ks := c.stores[podGVK]; ks != nil {
		ks.each(pdb.Namespace, func(s *slot) bool {
			if pod := s.obj.(*corev1.Pod); sel.Matches(labels.Set(pod.Labels)) {
				pods = append(pods, pod)
				if podHealthy(pod) {
					healthy++
				}
			}
			return true
		})
	}
	expected, desired := 0, 0
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		expected = c.expectedScaleLocked(pdb.Namespace, pods)
		if unavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, expected, true); err == nil {
			desired = max(expected-unavailable, 0)
		}
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		expected, desired = len(pods), pdb.Spec.MinAvailable.IntValue()
	case pdb.Spec.MinAvailable != nil:
		expected = c.expectedScaleLocked(pdb.Namespace, pods)
		if v, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, expected, true); err == nil {
			desired = v
		}
	}
	allowed := max(healthy-desired, 0)
	cond := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue, Reason: policyv1.SufficientPodsReason, ObservedGeneration: pdb.Generation}
	if allowed == 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, policyv1.InsufficientPodsReason
	}
	cond.LastTransitionTime = c.now()
	for _, old := range pdb.Status.Conditions {
		if old.Type == cond.Type && old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
	}
	return policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: int32(allowed),
		CurrentHealthy:     int32(healthy),
		DesiredHealthy:     int32(desired),
		ExpectedPods:       int32(expected),
		Conditions:         []metav1.Condition{cond},
	}
}

// expectedScaleLocked sums the desired replicas of the pods' controllers, each counted once; a
// pod without a known controller counts for itself unless it has finished.
func (c *Client) expectedScaleLocked(namespace string, pods []*corev1.Pod) int {
	scales := map[types.UID]int{}
	loose := 0
	for _, pod := range pods {
		if uid, scale, ok := c.controllerScaleLocked(namespace, metav1.GetControllerOf(pod)); ok {
			scales[uid] = scale
		} else if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			loose++
		}
	}
	for _, scale := range scales {
		loose += scale
	}
	return loose
}

// controllerScaleLocked returns the UID and desired replicas of the workload controlling a pod
// through ref: a ReplicaSet's Deployment when it has one, else the ReplicaSet, a StatefulSet or
// a ReplicationController.
func (c *Client) controllerScaleLocked(namespace string, ref *metav1.OwnerReference) (types.UID, int, bool) {
	if ref == nil {
		return "", 0, false
	}
	_, s, _ := c.ownerLocked(namespace, *ref)
	if s == nil {
		return "", 0, false
	}
	replicas := func(r *int32) int {
		if r == nil {
			return 1
		}
		return int(*r)
	}
	switch owner := s.obj.(type) {
	case *appsv1.ReplicaSet:
		if uid, scale, ok := c.controllerScaleLocked(namespace, metav1.GetControllerOf(owner)); ok {
			return uid, scale, true
		}
		return owner.UID, replicas(owner.Spec.Replicas), true
	case *appsv1.Deployment:
		return owner.UID, replicas(owner.Spec.Replicas), true
	case *appsv1.StatefulSet:
		return owner.UID, replicas(owner.Spec.Replicas), true
	case *corev1.ReplicationController:
		return owner.UID, replicas(owner.Spec.Replicas), true
	}
	return "", 0, false
}

// syncBudgetLocked stores a budget's computed status when it changed, and reports whether it did.
func (c *Client) syncBudgetLocked(s *slot) bool {
	ks := c.stores[pdbGVK]
	if ks == nil || ks.get(s.key) != s {
		return false
	}
	pdb := s.obj.(*policyv1.PodDisruptionBudget)
	st := c.budgetStatusLocked(pdb)
	if equality.Semantic.DeepEqual(st, pdb.Status) {
		return false
	}
	next := shallowClone(pdb).(*policyv1.PodDisruptionBudget)
	next.Status = st
	c.commitLocked(ks, s, next)
	return true
}

// SyncDisruptionBudgets recomputes the status of every PodDisruptionBudget from the pods it
// selects, as kube-controller-manager's disruption controller would, and returns how many
// changed. (Evictions compute budgets on the spot and refresh the budgets they touch; this
// keeps the others' status current for controllers that read it.)
func (c *Client) SyncDisruptionBudgets() int {
	c.mu.Lock()
	defer c.unlockAndNotify()
	ks := c.stores[pdbGVK]
	if ks == nil {
		return 0
	}
	var slots []*slot
	ks.each("", func(s *slot) bool { slots = append(slots, s); return true })
	n := 0
	for _, s := range slots {
		if c.syncBudgetLocked(s) {
			n++
		}
	}
	return n
}

// bind is the binding subresource of a Pod: it assigns an unassigned pod to the target node
// (setting spec.nodeName and the PodScheduled condition), refusing with Conflict a pod that is
// already assigned or being deleted.
func (c *Client) bind(obj client.Object, sub client.Object, dryRun bool) error {
	if !c.isPod(obj) {
		return (&subResourceClient{c: c, name: "binding"}).unsupported(obj, "create")
	}
	b, ok := sub.(*corev1.Binding)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("a binding must be a core/v1 Binding, not %T", sub))
	}
	if b.Name != "" && b.Name != obj.GetName() {
		return apierrors.NewBadRequest("name in URL does not match name in Binding object")
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		return statusError(http.StatusInternalServerError, metav1.StatusReasonUnknown,
			field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}).Error())
	}
	if b.Target.Name == "" {
		return statusError(http.StatusInternalServerError, metav1.StatusReasonUnknown, field.Required(field.NewPath("target", "name"), "").Error())
	}
	c.mu.Lock()
	defer c.unlockAndNotify()
	ks, s, err := c.podLocked(obj)
	if err != nil {
		return err
	}
	pod := s.obj.(*corev1.Pod)
	bindingGR := schema.GroupResource{Resource: "pods/binding"}
	if pod.DeletionTimestamp != nil {
		return apierrors.NewConflict(bindingGR, pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
	}
	if pod.Spec.NodeName != "" {
		return apierrors.NewConflict(bindingGR, pod.Name, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName))
	}
	if dryRun {
		return nil
	}
	next := shallowClone(pod).(*corev1.Pod)
	next.Spec.NodeName = b.Target.Name
	if len(b.Annotations) > 0 {
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		for k, v := range b.Annotations {
			next.Annotations[k] = v
		}
	}
	setCondition(&next.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, c.now())
	c.commitLocked(ks, s, next)
	return nil
}
