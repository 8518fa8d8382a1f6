package simulate

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ec2v1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
)

// This file holds the virtual clock and the workload's timeline: when the next thing happens
// (a controller's requeue, a disruption tick, a timed event), whether the cluster is quiet, and
// the timed events themselves (applied manifests, annotations, interruptions, sick nodes).

// quiet reports whether nothing will change until the next timeline event or job completion:
// no pod waits, no claim or node is on its way.
func (e *engine) quiet(ctx context.Context) (bool, error) {
	if pods, err := e.unboundPods(); err != nil || len(pods) > 0 {
		return false, err
	}
	if starting, err := e.pods(client.MatchingFields{"status.phase": string(corev1.PodPending)}); err != nil || len(starting) > 0 {
		return false, err
	}
	var claims karpv1.NodeClaimList
	if err := e.kube.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	for _, c := range claims.Items {
		if c.DeletionTimestamp != nil || !c.IsInitialized() {
			return false, nil
		}
	}
	for _, in := range e.cloud.Instances() {
		if in.State == sim.InstanceStatePending {
			return false, nil
		}
	}
	if e.disruption.Pending() != nil || e.disruption.InFlight() != nil {
		return false, nil
	}
	return len(e.cloud.Interruptions()) == e.rec.interruptionsSeen, nil
}

// nextWakeup is the next virtual time something is due while the cluster is quiet: a timeline
// event, a job finishing or a capacity shortage ending (else the end of the run). Nothing
// changes on its own in between, so the engine jumps there.
func (e *engine) nextWakeup(now time.Time) time.Time {
	next := Start.Add(e.w.Duration.Duration)
	if e.next < len(e.w.Timeline) {
		if at := Start.Add(e.w.Timeline[e.next].At.Duration); at.Before(next) {
			next = at
		}
	}
	for _, t := range e.rec.jobEnds {
		if t.After(now) && t.Before(next) {
			next = t
		}
	}
	for _, s := range e.shortages {
		if s.until.After(now) && s.until.Before(next) {
			next = s.until
		}
	}
	// Every controller's own timers: what each asked to be requeued after in the last pass,
	// and when disruption's decision may change with time (consolidateAfter, expireAfter,
	// do-not-disrupt durations, budget windows).
	// Disruption acts on the first tick of its loop at or after its moment.
	for _, t := range []time.Time{e.requeueAt, e.disruptionTick(e.disruption.NextWakeup())} {
		if t.After(now) && t.Before(next) {
			next = t
		}
	}
	// The cluster changed since the disruption loop last looked (or EveryTick): its next tick.
	if e.opts.EveryTick || e.kube.ResourceVersion() != e.disruptionSaw {
		if t := e.disruptionTick(now.Add(time.Nanosecond)); t.Before(next) {
			next = t
		}
	}
	if !next.After(now) {
		next = now.Add(e.opts.Step)
	}
	return next
}

// disruptionTick is the first tick of the disruption loop at or after t (zero for zero).
func (e *engine) disruptionTick(t time.Time) time.Time {
	if t.IsZero() || !t.After(e.lastDisruption) {
		return t
	}
	poll := e.disruption.PassInterval()
	ticks := (t.Sub(e.lastDisruption) + poll - 1) / poll
	return e.lastDisruption.Add(ticks * poll)
}

// applyEvents carries out the timeline events that are due.
func (e *engine) applyEvents(ctx context.Context, now time.Time) error {
	for e.next < len(e.w.Timeline) && !Start.Add(e.w.Timeline[e.next].At.Duration).After(now) {
		ev := e.w.Timeline[e.next]
		e.next++
		e.rec.log(timelineEntry(&ev))
		switch {
		case ev.Deploy != nil:
			e.deployments[ev.Deploy.key()] = &deploymentState{spec: ev.Deploy, template: ev.Deploy.template, replicas: ev.Deploy.Replicas}
			if ev.Deploy.MinAvailable != nil {
				minAvailable := intstr.FromInt32(int32(*ev.Deploy.MinAvailable))
				pdb := &policyv1.PodDisruptionBudget{
					ObjectMeta: metav1.ObjectMeta{Name: ev.Deploy.Name, Namespace: ev.Deploy.namespace()},
					Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: ev.Deploy.template.Labels}},
				}
				if err := e.kube.Create(ctx, pdb); err != nil {
					return err
				}
			}
		case ev.Scale != nil:
			e.deployments[cmp.Or(ev.Scale.target, ev.Scale.Name)].replicas = ev.Scale.Replicas
		case ev.Delete != nil:
			key := cmp.Or(ev.Delete.target, ev.Delete.Name)
			ns, name := defaultNamespace, key
			if d, ok := e.deployments[key]; ok {
				d.replicas = 0
				ns, name = d.spec.namespace(), d.spec.Name
			}
			if j, ok := e.jobs[key]; ok {
				ns, name = j.spec.namespace(), j.spec.Name
			}
			delete(e.jobs, key)
			if err := e.deleteOwnedPods(ctx, ns, name); err != nil {
				return err
			}
		case ev.Jobs != nil:
			e.jobs[ev.Jobs.key()] = &jobsState{spec: ev.Jobs}
		case ev.Interrupt != nil:
			e.interrupt(ev.Interrupt.Count)
		case ev.CapacityShortage != nil:
			s := ev.CapacityShortage
			e.cloud.SetOfferingAvailable(s.InstanceType, s.Zone, s.CapacityType, false)
			e.shortages = append(e.shortages, shortage{spec: s, until: now.Add(s.For.Duration)})
		case ev.Apply != "":
			for _, obj := range ev.applied {
				if err := e.apply(ctx, obj); err != nil {
					return err
				}
			}
		case ev.Annotate != nil:
			if err := e.annotate(ctx, ev.Annotate); err != nil {
				return err
			}
		case ev.Unhealthy != nil:
			e.sicken(ev.Unhealthy)
		}
	}
	kept := e.shortages[:0]
	for _, s := range e.shortages {
		if !s.until.After(now) {
			e.cloud.SetOfferingAvailable(s.spec.InstanceType, s.spec.Zone, s.spec.CapacityType, true)
			continue
		}
		kept = append(kept, s)
	}
	e.shortages = kept
	return nil
}

// interrupt sends notices to the oldest running spot instances.
func (e *engine) interrupt(count int) {
	for _, in := range e.cloud.Instances() {
		if count == 0 {
			return
		}
		if in.State == sim.InstanceStateRunning && in.CapacityType == karpv1.CapacityTypeSpot {
			if err := e.cloud.Interrupt(in.ProviderID); err == nil {
				e.rec.log(LogEntry{Kind: LogInterruption, Message: fmt.Sprintf("spot interruption warning for instance %s (%s): reclaimed in %s", in.ID, in.InstanceType, sim.DefaultInterruptionNotice), Nodes: []string{in.Hostname}})
				count--
			}
		}
	}
}

// sicken makes the oldest running instances (of the event's NodePool) whose Node does not
// report the event's condition yet report it from now on.
func (e *engine) sicken(u *Unhealthy) {
	left := u.Count
	for _, in := range e.cloud.Instances() {
		if left == 0 {
			return
		}
		if in.State != sim.InstanceStateRunning || (u.NodePool != "" && in.NodePoolName != u.NodePool) ||
			slices.ContainsFunc(in.Conditions, func(c sim.NodeCondition) bool { return string(c.Type) == u.Condition }) {
			continue
		}
		cond := sim.NodeCondition{Type: corev1.NodeConditionType(u.Condition), Status: corev1.ConditionStatus(u.Status), Reason: u.Reason}
		if err := e.cloud.MakeUnhealthy(in.ProviderID, cond); err != nil {
			e.rec.warn(fmt.Sprintf("making instance %s unhealthy: %v", in.ID, err))
			continue
		}
		what := fmt.Sprintf("node of instance %s (%s) reports %s %s", in.ID, in.InstanceType, u.Condition, u.Status)
		if u.Reason != "" {
			what += " (" + u.Reason + ")"
		}
		e.rec.log(LogEntry{Kind: LogUnhealthy, Message: what, Nodes: []string{in.Hostname}})
		left--
	}
	if left > 0 {
		e.rec.warn(fmt.Sprintf("unhealthy: %d of %d nodes made unhealthy, the others are not running or already report %s", u.Count-left, u.Count, u.Condition))
	}
}

// apply creates the object, or replaces the labels, annotations and spec of the one there, as
// kubectl apply of a whole manifest would.
func (e *engine) apply(ctx context.Context, obj client.Object) error {
	desired := obj.DeepCopyObject().(client.Object)
	current := desired.DeepCopyObject().(client.Object)
	err := e.kube.Get(ctx, client.ObjectKeyFromObject(desired), current)
	if apierrors.IsNotFound(err) {
		return e.kube.Create(ctx, desired)
	}
	if err != nil {
		return err
	}
	switch d := desired.(type) {
	case *karpv1.NodePool:
		c := current.(*karpv1.NodePool)
		c.Labels, c.Annotations, c.Spec = d.Labels, d.Annotations, d.Spec
	case *ec2v1.EC2NodeClass:
		c := current.(*ec2v1.EC2NodeClass)
		c.Labels, c.Annotations, c.Spec = d.Labels, d.Annotations, d.Spec
	}
	return e.kube.Update(ctx, current)
}

// annotate sets annotations on a deployment's pods, now and from now on, or on the oldest
// nodes and their NodeClaims.
func (e *engine) annotate(ctx context.Context, a *Annotate) error {
	if a.Deployment != "" {
		d := e.deployments[cmp.Or(a.target, a.Deployment)]
		template := d.template.DeepCopy()
		if template.Annotations == nil {
			template.Annotations = map[string]string{}
		}
		maps.Copy(template.Annotations, a.Annotations)
		d.template = template
		var pods corev1.PodList
		if err := e.kube.List(ctx, &pods, client.InNamespace(d.spec.namespace()), client.MatchingLabels{ownerLabel: d.spec.Name}); err != nil {
			return err
		}
		for i := range pods.Items {
			if err := e.setAnnotations(ctx, &pods.Items[i], a.Annotations); err != nil {
				return err
			}
		}
		return nil
	}
	var nodes corev1.NodeList
	if err := e.kube.List(ctx, &nodes); err != nil {
		return err
	}
	slices.SortFunc(nodes.Items, func(x, y corev1.Node) int {
		if c := x.CreationTimestamp.Compare(y.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	var claims karpv1.NodeClaimList
	if err := e.kube.List(ctx, &claims); err != nil {
		return err
	}
	for i := range nodes.Items[:min(a.Nodes, len(nodes.Items))] {
		node := &nodes.Items[i]
		if err := e.setAnnotations(ctx, node, a.Annotations); err != nil {
			return err
		}
		for j := range claims.Items {
			if claims.Items[j].Status.NodeName == node.Name {
				if err := e.setAnnotations(ctx, &claims.Items[j], a.Annotations); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (e *engine) setAnnotations(ctx context.Context, obj client.Object, annotations map[string]string) error {
	merged := maps.Clone(obj.GetAnnotations())
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, annotations)
	obj.SetAnnotations(merged)
	return client.IgnoreNotFound(e.kube.Update(ctx, obj))
}
