package memory

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The store plays kube-controller-manager's garbage collector and namespace controller
// synchronously: whenever an object is removed, its dependents and waiting owners are handled
// before the write returns. CollectGarbage sweeps for what only time or a missed event would
// reveal (ownerReferences that never resolved, pods whose grace period ran out).

// dependent is an object whose ownerReferences name an owner.
type dependent struct {
	ks *kindStore
	s  *slot
}

// dependentsLocked returns the current dependents of the owner with uid, in kind, namespace
// and name order.
func (c *Client) dependentsLocked(uid types.UID) []dependent {
	deps := c.dependents[uid]
	out := make([]dependent, 0, len(deps))
	for s, ks := range deps {
		out = append(out, dependent{ks: ks, s: s})
	}
	slices.SortFunc(out, func(a, b dependent) int {
		if c := strings.Compare(a.ks.info.gvk.String(), b.ks.info.gvk.String()); c != 0 {
			return c
		}
		if c := strings.Compare(a.s.key.Namespace, b.s.key.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.s.key.Name, b.s.key.Name)
	})
	return out
}

// live reports whether d still holds the current version of a stored object.
func (d dependent) live() bool { return d.ks.get(d.s.key) == d.s }

// ownerLocked finds the owner ref points at, from a dependent in namespace. known is false
// when the owner's kind is not in the scheme (such owners always count as present, as the
// garbage collector cannot tell); s is nil when the owner is gone or has another UID.
func (c *Client) ownerLocked(namespace string, ref metav1.OwnerReference) (ks *kindStore, s *slot, known bool) {
	gv, ok := c.groupVersions[ref.APIVersion]
	if !ok {
		var err error
		if gv, err = schema.ParseGroupVersion(ref.APIVersion); err != nil {
			return nil, nil, false
		}
		c.groupVersions[ref.APIVersion] = gv
	}
	info := c.byGVK[gv.WithKind(ref.Kind)]
	if info == nil {
		return nil, nil, false
	}
	key := client.ObjectKey{Name: ref.Name}
	if info.namespaced {
		key.Namespace = namespace
	}
	if ks = c.stores[info.gvk]; ks == nil {
		return nil, nil, true
	}
	if s = ks.get(key); s == nil || s.obj.GetUID() != ref.UID {
		return ks, nil, true
	}
	return ks, s, true
}

// afterRemoveLocked reacts to the removal of an object: collects its dependents, finishes the
// foreground deletion of owners waiting for it and removes its namespace when that is
// terminating and now empty.
func (c *Client) afterRemoveLocked(ks *kindStore, key client.ObjectKey, gone client.Object) {
	for _, d := range c.dependentsLocked(gone.GetUID()) {
		if d.live() {
			c.collectDependentLocked(d)
		}
	}
	for _, ref := range gone.GetOwnerReferences() {
		if oks, os, _ := c.ownerLocked(key.Namespace, ref); os != nil {
			c.finishForegroundLocked(oks, os)
		}
	}
	if ks.info.namespaced && c.nsObjects[key.Namespace] == 0 {
		c.finishNamespaceLocked(key.Namespace)
	}
	if node, ok := gone.(*corev1.Node); ok {
		// Its pods are stranded: the pod garbage collector will remove them.
		for _, s := range c.podsOnNodeLocked(node.Name) {
			c.suspects[s] = c.stores[podGVK]
		}
	}
}

// podsOnNodeLocked returns the pods bound to a node.
func (c *Client) podsOnNodeLocked(node string) []*slot {
	ks := c.stores[podGVK]
	if ks == nil {
		return nil
	}
	var out []*slot
	if idx := ks.indexes["spec.nodeName"]; idx != nil && idx.builtin {
		if set := idx.values[node]; set != nil {
			out = slotsOf(set)
		}
		return out
	}
	ks.each("", func(s *slot) bool {
		if s.obj.(*corev1.Pod).Spec.NodeName == node {
			out = append(out, s)
		}
		return true
	})
	return out
}

// noteSuspectLocked remembers the object in s for CollectGarbage when it may need the garbage
// collector's, the kubelet's or the pod garbage collector's attention later: an owner missing
// or waiting, a graceful deletion under way, a pod bound to a missing node. Callers hold mu.
func (c *Client) noteSuspectLocked(ks *kindStore, s *slot) {
	if c.suspectLocked(ks, s) {
		c.suspects[s] = ks
	} else {
		delete(c.suspects, s)
	}
}

func (c *Client) suspectLocked(ks *kindStore, s *slot) bool {
	obj := s.obj
	m := objectMeta(obj)
	if m.DeletionTimestamp != nil {
		if m.DeletionGracePeriodSeconds != nil && *m.DeletionGracePeriodSeconds > 0 {
			return true
		}
		if hasFinalizer(obj, metav1.FinalizerOrphanDependents) || hasFinalizer(obj, metav1.FinalizerDeleteDependents) {
			return true
		}
		if _, ok := obj.(*corev1.Namespace); ok {
			return true
		}
	}
	if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
		nodes := c.stores[corev1.SchemeGroupVersion.WithKind("Node")]
		if nodes == nil || nodes.get(client.ObjectKey{Name: pod.Spec.NodeName}) == nil {
			return true
		}
	}
	for _, ref := range m.OwnerReferences {
		_, os, known := c.ownerLocked(s.key.Namespace, ref)
		if known && (os == nil || os.obj.GetDeletionTimestamp() != nil) {
			return true
		}
	}
	return false
}

// collectDependentLocked does what the garbage collector does with a dependent: delete it when
// none of its owners remains (Foreground when an owner waits for it and it has dependents of
// its own), or drop the references to owners that are gone or waiting when others remain.
func (c *Client) collectDependentLocked(d dependent) {
	refs := d.s.obj.GetOwnerReferences()
	if len(refs) == 0 {
		return
	}
	var solid, stale int
	waiting := false
	keep := make([]metav1.OwnerReference, 0, len(refs))
	for _, ref := range refs {
		_, os, known := c.ownerLocked(d.s.key.Namespace, ref)
		switch {
		case !known:
			solid++
			keep = append(keep, ref)
		case os == nil:
			stale++
		case os.obj.GetDeletionTimestamp() != nil && hasFinalizer(os.obj, metav1.FinalizerDeleteDependents):
			stale++
			waiting = true
		default:
			solid++
			keep = append(keep, ref)
		}
	}
	switch {
	case stale == 0:
		return
	case solid > 0:
		next := shallowClone(d.s.obj)
		objectMeta(next).OwnerReferences = keep
		c.commitLocked(d.ks, d.s, next)
	case d.s.obj.GetDeletionTimestamp() != nil:
		return
	default:
		policy := metav1.DeletePropagationBackground
		if waiting && len(c.dependents[d.s.obj.GetUID()]) > 0 {
			policy = metav1.DeletePropagationForeground
		}
		_ = c.deleteLocked(d.ks, d.s, deleteOpts{propagation: &policy})
	}
}

// foregroundLocked deletes the dependents of an owner in foreground deletion, then finishes it
// if none blocks it.
func (c *Client) foregroundLocked(ks *kindStore, s *slot) {
	for _, d := range c.dependentsLocked(s.obj.GetUID()) {
		if d.live() {
			c.collectDependentLocked(d)
		}
	}
	c.finishForegroundLocked(ks, s)
}

// finishForegroundLocked removes the foregroundDeletion finalizer of an owner being deleted
// once no dependent with blockOwnerDeletion remains (removing the owner if it was the last).
func (c *Client) finishForegroundLocked(ks *kindStore, s *slot) {
	if ks.get(s.key) != s || s.obj.GetDeletionTimestamp() == nil || !hasFinalizer(s.obj, metav1.FinalizerDeleteDependents) {
		return
	}
	uid := s.obj.GetUID()
	for _, d := range c.dependentsLocked(uid) {
		for _, ref := range d.s.obj.GetOwnerReferences() {
			if ref.UID == uid && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				return
			}
		}
	}
	next := shallowClone(s.obj)
	nm := objectMeta(next)
	nm.Finalizers = slices.DeleteFunc(nm.Finalizers, func(f string) bool { return f == metav1.FinalizerDeleteDependents })
	c.commitLocked(ks, s, next)
}

// orphanLocked removes an orphaning owner from its dependents' ownerReferences, then its orphan
// finalizer (removing the owner if it was the last).
func (c *Client) orphanLocked(ks *kindStore, s *slot) {
	uid := s.obj.GetUID()
	for _, d := range c.dependentsLocked(uid) {
		if !d.live() {
			continue
		}
		next := shallowClone(d.s.obj)
		nm := objectMeta(next)
		nm.OwnerReferences = slices.DeleteFunc(nm.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == uid })
		c.commitLocked(d.ks, d.s, next)
	}
	if ks.get(s.key) != s {
		return
	}
	next := shallowClone(s.obj)
	nm := objectMeta(next)
	nm.Finalizers = slices.DeleteFunc(nm.Finalizers, func(f string) bool { return f == metav1.FinalizerOrphanDependents })
	c.commitLocked(ks, s, next)
}

// drainNamespaceLocked deletes everything in a terminating namespace, as the namespace
// controller does, then removes the namespace if nothing is left.
func (c *Client) drainNamespaceLocked(namespace string) {
	for _, ks := range c.sortedStoresLocked() {
		if !ks.info.namespaced {
			continue
		}
		b := ks.buckets[namespace]
		if b == nil {
			continue
		}
		for _, s := range slotsOf(b.sorted) {
			if ks.get(s.key) == s && s.obj.GetDeletionTimestamp() == nil {
				_ = c.deleteLocked(ks, s, deleteOpts{})
			}
		}
	}
	c.finishNamespaceLocked(namespace)
}

// finishNamespaceLocked removes a terminating namespace that holds nothing any more.
func (c *Client) finishNamespaceLocked(namespace string) {
	if c.nsObjects[namespace] > 0 {
		return
	}
	info := c.byGVK[corev1.SchemeGroupVersion.WithKind("Namespace")]
	if info == nil {
		return
	}
	ks := c.stores[info.gvk]
	if ks == nil {
		return
	}
	s := ks.get(client.ObjectKey{Name: namespace})
	if s == nil || s.obj.GetDeletionTimestamp() == nil {
		return
	}
	ns, ok := s.obj.(*corev1.Namespace)
	if !ok {
		return
	}
	if len(ns.Spec.Finalizers) > 0 {
		next := shallowClone(ns).(*corev1.Namespace)
		next.Spec.Finalizers = slices.DeleteFunc(slices.Clone(next.Spec.Finalizers), func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
		c.commitLocked(ks, s, next)
		if ks.get(s.key) != s {
			return
		}
		ns = s.obj.(*corev1.Namespace)
	}
	if len(ns.Finalizers) == 0 && len(ns.Spec.Finalizers) == 0 {
		c.removeLocked(ks, s, s.obj)
	}
}

// sortedStoresLocked returns the kind stores in group, version and kind order.
func (c *Client) sortedStoresLocked() []*kindStore {
	out := make([]*kindStore, 0, len(c.stores))
	for _, ks := range c.stores {
		out = append(out, ks)
	}
	slices.SortFunc(out, func(a, b *kindStore) int { return strings.Compare(a.info.gvk.String(), b.info.gvk.String()) })
	return out
}

// CollectGarbage does, at once, the work kube-controller-manager and the kubelets would do over
// time that the store does not already do synchronously, and returns how many objects it
// changed or removed:
//
//   - the garbage collector: deletes objects whose every owner is gone (including owners that
//     never existed or have another UID) and drops references to missing owners from objects
//     that keep other owners; re-drives foreground and orphan deletions;
//   - the namespace controller: empties terminating namespaces and removes them;
//   - the kubelet: removes pods whose graceful deletion period (deletionTimestamp) has passed on
//     the clock, or clears their grace period when finalizers hold them;
//   - the pod garbage collector: removes pods bound to nodes that do not exist.
//
// Writes note the objects that may need this step, so it costs nothing when nothing is due,
// however large the store: call it every tick of the simulation.
func (c *Client) CollectGarbage() int {
	c.mu.Lock()
	defer c.unlockAndNotify()
	before := c.rv
	now := c.clock.Now()
	suspects := make([]dependent, 0, len(c.suspects))
	for s, ks := range c.suspects {
		suspects = append(suspects, dependent{ks: ks, s: s})
	}
	c.suspects = map[*slot]*kindStore{}
	slices.SortFunc(suspects, func(a, b dependent) int {
		if c := strings.Compare(a.ks.info.gvk.String(), b.ks.info.gvk.String()); c != 0 {
			return c
		}
		return compareKeys(a.s.key, b.s.key)
	})
	nodes := c.stores[corev1.SchemeGroupVersion.WithKind("Node")]
	for _, d := range suspects {
		if d.live() {
			c.collectDependentLocked(d)
		}
		if d.live() && d.s.obj.GetDeletionTimestamp() != nil {
			switch {
			case hasFinalizer(d.s.obj, metav1.FinalizerOrphanDependents):
				c.orphanLocked(d.ks, d.s)
			case hasFinalizer(d.s.obj, metav1.FinalizerDeleteDependents):
				c.foregroundLocked(d.ks, d.s)
			}
			if _, ok := d.s.obj.(*corev1.Namespace); ok && d.live() {
				c.drainNamespaceLocked(d.s.key.Name)
			}
		}
		pod, ok := d.s.obj.(*corev1.Pod)
		if !d.live() || !ok {
			continue
		}
		m := &pod.ObjectMeta
		switch {
		case pod.Spec.NodeName != "" && (nodes == nil || nodes.get(client.ObjectKey{Name: pod.Spec.NodeName}) == nil):
			zero := int64(0)
			_ = c.deleteLocked(d.ks, d.s, deleteOpts{grace: &zero})
		case m.DeletionTimestamp != nil && m.DeletionGracePeriodSeconds != nil && *m.DeletionGracePeriodSeconds > 0 && !m.DeletionTimestamp.After(now):
			next := shallowClone(pod)
			zero := int64(0)
			objectMeta(next).DeletionGracePeriodSeconds = &zero
			if len(m.Finalizers) == 0 {
				c.removeLocked(d.ks, d.s, next)
			} else {
				c.commitLocked(d.ks, d.s, next)
			}
		}
		if d.live() {
			c.noteSuspectLocked(d.ks, d.s)
		}
	}
	return int(c.rv - before)
}
