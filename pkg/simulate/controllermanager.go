package simulate

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// This file holds the stand-in for kube-controller-manager: the workloads' pods (Deployments,
// StatefulSets, Jobs), the DaemonSets' pods on every node they select, and the pods' own
// lifecycle. The kube-scheduler's stand-in is package binder.

// ownerLabel marks the pods the stand-in made with the workload that owns them.
const ownerLabel = "simulate.karpenter.sh/owner"

// syncWorkloads plays the Deployment and Job controllers: keeps each deployment at its
// replicas, starts jobs' pods, finishes pods whose runtime is over, and replaces pods whose
// node went away. It reads the pods through the tracker, not the store: only the pods of
// nodes gone, of jobs and of deployments scaled down are visited.
func (e *engine) syncWorkloads(ctx context.Context, now time.Time) error {
	var nodes corev1.NodeList
	if err := e.kube.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	exists := map[string]bool{}
	for _, n := range nodes.Items {
		if n.DeletionTimestamp == nil {
			exists[n.Name] = true
		}
	}
	// A pod whose node is gone is lost, as pod garbage collection would find it.
	var lost []*corev1.Pod
	for node := range e.tracked.onNode {
		if exists[node] {
			continue
		}
		pods, err := e.pods(client.MatchingFields{"spec.nodeName": node})
		if err != nil {
			return err
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodSucceeded {
				lost = append(lost, p)
			}
		}
	}
	for _, p := range sortedByName(lost) {
		if err := e.kube.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	// Jobs' pods that ran their runtime succeed.
	var done []*corev1.Pod
	for owner, j := range e.jobs {
		for _, p := range e.tracked.byOwner[owner] {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				continue
			}
			end := runningSince(p).Add(j.spec.Runtime.Duration)
			e.rec.jobEnds[podKey(p)] = end
			if !now.Before(end) {
				done = append(done, p)
			}
		}
	}
	for _, p := range sortedByName(done) {
		if err := e.finishPod(ctx, p); err != nil {
			return err
		}
		delete(e.rec.jobEnds, podKey(p))
	}
	for _, name := range sortedKeys(e.deployments) {
		d := e.deployments[name]
		if d.spec.stateful != nil {
			if err := e.syncStatefulSet(ctx, d, e.tracked.livePods(name)); err != nil {
				return err
			}
			continue
		}
		have := e.tracked.live[name]
		for i := have; i < d.replicas; i++ {
			d.serial++
			if err := e.createPod(ctx, d.spec.namespace(), d.spec.Name, d.serial, d.template, nil); err != nil {
				return err
			}
		}
		if have > d.replicas {
			// Scale down removes the newest pods first, as a ReplicaSet prefers unready and
			// young pods.
			live := e.tracked.livePods(name)
			sort.Slice(live, func(i, j int) bool {
				if a, b := live[i].CreationTimestamp, live[j].CreationTimestamp; !a.Equal(&b) {
					return a.After(b.Time)
				}
				return live[i].Name > live[j].Name
			})
			for _, p := range live[:len(live)-d.replicas] {
				if err := e.kube.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
					return err
				}
			}
		}
	}
	for _, name := range sortedKeys(e.jobs) {
		j := e.jobs[name]
		for ; j.created < j.spec.Count; j.created++ {
			if err := e.createPod(ctx, j.spec.namespace(), j.spec.Name, j.created+1, j.spec.template, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// daemonTolerations are the tolerations the DaemonSet controller adds to every pod it makes
// (Kubernetes' AddOrUpdateDaemonPodTolerations): its pods run on nodes not ready or
// unreachable, under pressure, or cordoned.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// syncDaemonSets plays the DaemonSet controller: every node that is not being deleted runs one
// pod of each DaemonSet whose pods select its labels and tolerate its taints (besides those
// every daemon pod tolerates, daemonTolerations). The pod is created bound to its node and
// owned by its DaemonSet, as the controller's pods are, so that the binder sees its requests
// and host ports, the reports its requests, and Karpenter's controllers take it for a daemon
// pod (not reschedulable: a node with only daemon pods is empty). A node that goes loses its
// daemon pods with its other pods (syncWorkloads).
func (e *engine) syncDaemonSets(ctx context.Context) error {
	var daemonSets appsv1.DaemonSetList
	if err := e.kube.List(ctx, &daemonSets, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	if len(daemonSets.Items) == 0 {
		return nil
	}
	var nodes corev1.NodeList
	if err := e.kube.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if node.DeletionTimestamp != nil {
			continue
		}
		taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
			return scheduling.Tolerates(daemonTolerations, []corev1.Taint{t}) == nil
		})
		present := e.tracked.daemons[node.Name]
		for j := range daemonSets.Items {
			ds := &daemonSets.Items[j]
			if ds.DeletionTimestamp != nil || present[ds.UID] > 0 || !state.DaemonSetSchedules(ds, node.Labels, taints) {
				continue
			}
			if err := e.createDaemonPod(ctx, ds, node.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// createDaemonPod creates the pod of a DaemonSet on a node, as the DaemonSet controller would
// (named <daemonset>-<node>, cut with a hash to a name's bound). A pod of that name still being
// deleted there is left to go first.
func (e *engine) createDaemonPod(ctx context.Context, ds *appsv1.DaemonSet, node string) error {
	tmpl := &ds.Spec.Template
	controller := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: daemonPodName(ds.Name, node), Namespace: ds.Namespace, Labels: maps.Clone(tmpl.Labels), Annotations: maps.Clone(tmpl.Annotations),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &controller, BlockOwnerDeletion: &controller}},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, daemonTolerations...)
	if err := e.kube.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating pod %s of daemonset %s on node %s: %w", podKey(pod), qualified(ds.Namespace, ds.Name), node, err)
	}
	return nil
}

// daemonPodName is the name of a DaemonSet's pod on a node: <daemonset>-<node>, cut to 253
// characters (a pod name's bound) with a hash of the whole when longer.
func daemonPodName(daemonSet, node string) string {
	name := daemonSet + "-" + node
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:240], ".-") + "-" + hex.EncodeToString(sum[:])[:8]
}

// sortedByName sorts pods by namespace and name, as List returns them, and returns them.
func sortedByName(pods []*corev1.Pod) []*corev1.Pod {
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return pods
}

// podReady reports whether the pod runs and is Ready.
func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func runningSince(p *corev1.Pod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

// syncStatefulSet plays the StatefulSet controller for a deployment read from a StatefulSet:
// its pods are <name>-0 to <name>-<replicas-1>, and a missing one is created once its name is
// free (its predecessor gone). With ordered (OrderedReady) pod management, one is created only
// when all below it run and are Ready. (A plain-manifest workload never scales it down.)
func (e *engine) syncStatefulSet(ctx context.Context, d *deploymentState, live []*corev1.Pod) error {
	s, ns, name := d.spec.stateful, d.spec.namespace(), d.spec.Name
	byName := map[string]*corev1.Pod{}
	for _, p := range live {
		byName[p.Name] = p
	}
	for i := 0; i < d.replicas; i++ {
		podName := name + "-" + strconv.Itoa(i)
		if p := byName[podName]; p != nil {
			if s.ordered && !podReady(p) {
				break
			}
			continue
		}
		if e.podExists(ctx, ns, podName) {
			if s.ordered {
				break
			}
			continue // its predecessor is still being deleted
		}
		if err := e.createPod(ctx, ns, name, i, d.template, s); err != nil {
			return err
		}
		if s.ordered {
			break
		}
	}
	return nil
}

// podExists reports whether a pod of that namespace and name is in the store, being deleted or
// not.
func (e *engine) podExists(ctx context.Context, namespace, name string) bool {
	return e.kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Pod{}, client.UnsafeDisableDeepCopy) == nil
}

// createPod creates the pod serial of the workload owner of namespace from its template, and
// first the pod's claims when the workload is a StatefulSet (stateful set).
func (e *engine) createPod(ctx context.Context, namespace, owner string, serial int, tmpl *corev1.PodTemplateSpec, stateful *statefulSet) error {
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Name = owner + "-" + strconv.Itoa(serial)
	pod.Namespace = namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[ownerLabel] = owner
	if stateful != nil {
		// As the StatefulSet controller: the pod's claims first, unless they exist already.
		for _, pvc := range stateful.podClaims(pod, owner, serial) {
			if err := e.kube.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating persistentvolumeclaim %s: %w", pvc.Name, err)
			}
		}
	}
	if err := e.kube.Create(ctx, pod); err != nil {
		return fmt.Errorf("creating pod %s: %w", podKey(pod), err)
	}
	e.rec.podCreated(pod)
	return nil
}

func (e *engine) finishPod(ctx context.Context, shared *corev1.Pod) error {
	p := shared.DeepCopy()
	p.Status.Phase = corev1.PodSucceeded
	if err := e.kube.Status().Update(ctx, p); err != nil && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// deleteOwnedPods deletes the pods of the workload owner of namespace.
func (e *engine) deleteOwnedPods(ctx context.Context, namespace, owner string) error {
	var pods corev1.PodList
	if err := e.kube.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{ownerLabel: owner}); err != nil {
		return err
	}
	for i := range pods.Items {
		if err := e.kube.Delete(ctx, &pods.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
