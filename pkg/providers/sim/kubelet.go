package sim

import (
	"sync"

	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// Defaults of KubeletOptions.
const (
	// DefaultKubeletVersion is the version the simulated kubelets report.
	DefaultKubeletVersion = "v1.35.8"
	// DefaultKubeletInterval is how often Run steps.
	DefaultKubeletInterval = 100 * time.Millisecond
	// DefaultStartupTaintDelay is the StartupTaintDelay the controller (--sim-startup-taint-delay)
	// and `karpenter simulate` (cloud.startupTaintDelay) use unless told otherwise: about the
	// time a CNI agent such as Cilium takes to start on a Ready node.
	DefaultStartupTaintDelay = 5 * time.Second
	// containerRuntimeVersion is the runtime the simulated kubelets report.
	containerRuntimeVersion = "containerd://2.0.5"
)

// KubeletOptions configure the kubelet stand-in. The zero value is usable.
type KubeletOptions struct {
	// ReadyDelay is the time from an instance running (its Node registering) until the Node is
	// Ready; zero means Ready at registration.
	ReadyDelay time.Duration
	// StartupTaintDelay is the time from the Node being Ready until the agents its NodeClaim's
	// startup taints wait for (a NodePool's template.spec.startupTaints, such as Cilium's
	// node.cilium.io/agent-not-ready) have started and lifted them; zero lifts them as soon as
	// the Node is Ready. Callers usually give DefaultStartupTaintDelay.
	StartupTaintDelay time.Duration
	// MarkPodsRunning sets pods bound to Ready Nodes of the cloud to phase Running, with their
	// containers started and Ready, and finishes the deletion of pods being deleted from its
	// Nodes, as their kubelet would.
	MarkPodsRunning bool
	// Interval is how often Run steps; zero means DefaultKubeletInterval.
	Interval time.Duration
	// PodWorkers, when more than one, is how many pods' status writes (starting them) run at
	// once, in the background: Step hands the pods to start over and does not wait for them.
	// Each real node's kubelet starts its pods on its own, so starting a burst of thousands of
	// pods on the first nodes up must not hold up registering the others, nor take a write at a
	// time. Zero or one starts them one after another within Step, in a fixed order, as a
	// simulation on a virtual clock needs.
	PodWorkers int
	// KubeletVersion is the version the Nodes report; empty means DefaultKubeletVersion.
	KubeletVersion string
	// RegisterWithTaints are taints every Node registers with beyond its claim's, as a
	// kubelet's --register-with-taints set by custom user data would add: Karpenter does not
	// know of them, so pods that do not tolerate them never run on the node.
	RegisterWithTaints []corev1.Taint
}

// Validate reports the first invalid option.
func (o KubeletOptions) Validate() error {
	if o.ReadyDelay < 0 {
		return fmt.Errorf("ready delay %s is negative", o.ReadyDelay)
	}
	if o.StartupTaintDelay < 0 {
		return fmt.Errorf("startup taint delay %s is negative", o.StartupTaintDelay)
	}
	if o.Interval < 0 {
		return fmt.Errorf("interval %s is negative", o.Interval)
	}
	if o.PodWorkers < 0 {
		return fmt.Errorf("pod workers %d is negative", o.PodWorkers)
	}
	return nil
}

// Kubelet stands in for the kubelets of the cloud's instances and for the cloud's node
// lifecycle controller. Each Step:
//
//  1. deletes the Nodes (provider ID sim:///…) whose instances are gone or unknown to the cloud;
//     a Node with finalizers is only marked for deletion, as the API server does;
//  2. registers a Node for every running instance without one: named by the instance's
//     hostname, with its provider ID, the instance's labels plus kubernetes.io/hostname, the
//     legacy beta labels and those NodeClaim labels a kubelet may set itself, and the taints
//     karpenter.sh/unregistered:NoExecute, the NodeClaim's taints and startup taints (read from
//     the NodeClaim, or from the instance's user data when the claim is gone) and, until
//     Ready, node.kubernetes.io/not-ready:NoSchedule;
//  3. writes each Node's status through the status subresource: capacity and allocatable as
//     the instance type says, Ready=False at first and Ready=True once ReadyDelay has passed
//     since the instance started running, addresses and node info; and removes the not-ready
//     taint once Ready. The faults of the instance (Cloud.MakeUnhealthy, FaultPlan's node
//     failures) are written as its conditions, with their time as lastTransitionTime; a Ready
//     fault keeps the Node from turning Ready and gets the taint the node lifecycle controller
//     adds, node.kubernetes.io/not-ready:NoSchedule (False) or
//     node.kubernetes.io/unreachable:NoSchedule (Unknown);
//  4. plays the agents that startup taints wait for: StartupTaintDelay after the Node is Ready,
//     removes the NodeClaim's startup taints (as the instance's user data carried them), but
//     not a taint the claim also has among its regular taints or RegisterWithTaints has, and
//     again whenever one comes back (Karpenter's registration puts missing ones back);
//  5. with MarkPodsRunning, sets the pods bound to Ready Nodes to Running, and deletes the pods
//     being deleted from its Nodes as soon as asked (their containers stop at once), except
//     on Nodes whose Ready fault is Unknown: their kubelet is gone.
//
// Step reads time from the cloud's clock only, so a simulation drives it on a virtual clock.
type Kubelet struct {
	cloud *Cloud
	kube  client.Client
	opts  KubeletOptions
	// starting holds the pods being started in the background (PodWorkers > 1), by UID, and
	// startSlots bounds how many writes run at once.
	starting   sync.Map
	startSlots chan struct{}
}

// NewKubelet returns the kubelet stand-in of the cloud's instances, writing Nodes (and pods)
// through kube.
func NewKubelet(cloud *Cloud, kube client.Client, opts KubeletOptions) (*Kubelet, error) {
	if cloud == nil || kube == nil {
		return nil, errors.New("kubelet needs a cloud and a client")
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("invalid kubelet options: %w", err)
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultKubeletInterval
	}
	if opts.KubeletVersion == "" {
		opts.KubeletVersion = DefaultKubeletVersion
	}
	return &Kubelet{cloud: cloud, kube: kube, opts: opts, startSlots: make(chan struct{}, max(opts.PodWorkers, 1))}, nil
}

// Run steps every Interval on the cloud's clock (the real clock unless the cloud was given
// another) until ctx is cancelled, logging failed steps; it then returns nil.
func (k *Kubelet) Run(ctx context.Context) error {
	for {
		if err := k.Step(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "simulated kubelet step failed")
		}
		timer := k.cloud.clock.NewTimer(k.opts.Interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
		}
	}
}

// Start runs the kubelet; it makes Kubelet a controller-runtime manager.Runnable.
func (k *Kubelet) Start(ctx context.Context) error { return k.Run(ctx) }

// Step makes one pass over the cloud's instances and the cluster's Nodes (see Kubelet). A
// failure on one Node does not stop the others; the errors are joined.
func (k *Kubelet) Step(ctx context.Context) error {
	now, instances, err := k.cloud.snapshotLive(ctx)
	if err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := k.kube.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	live := make(map[string]bool, len(instances))
	for _, inst := range instances {
		live[inst.ProviderID] = true
	}

	var errs []error
	byProviderID := map[string]*corev1.Node{}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		providerID := node.Spec.ProviderID
		if !strings.HasPrefix(providerID, ProviderIDPrefix) {
			continue
		}
		if live[providerID] {
			byProviderID[providerID] = node
			continue
		}
		if node.DeletionTimestamp != nil {
			continue
		}
		if err := k.kube.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting node %s of a terminated instance: %w", node.Name, err))
		}
	}

	ready := map[string]*corev1.Node{}
	for _, inst := range instances {
		if inst.State != InstanceStateRunning {
			continue
		}
		node := byProviderID[inst.ProviderID]
		readyFault := findFault(inst.Conditions, corev1.NodeReady)
		isReady := !now.Before(inst.RunningTime.Add(k.opts.ReadyDelay)) && readyFault == nil && !inst.Rebooting(now)
		if readyFault != nil && readyFault.Status == corev1.ConditionUnknown {
			// Its kubelet is gone: nothing finishes the deletion of its pods.
			delete(byProviderID, inst.ProviderID)
		}
		if node == nil {
			var err error
			if node, err = k.register(ctx, inst, isReady, now); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		node, err := k.syncStatus(ctx, node, inst, isReady, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if node, err = k.syncFaults(ctx, node, inst.Conditions, now); err != nil {
			errs = append(errs, err)
			continue
		}
		if isReady && !now.Before(inst.RunningTime.Add(k.opts.ReadyDelay+k.opts.StartupTaintDelay)) {
			if node, err = k.liftStartupTaints(ctx, node, inst.Bootstrap); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if isReady {
			ready[node.Name] = node
		}
	}

	if k.opts.MarkPodsRunning && len(ready) > 0 {
		if err := k.markPodsRunning(ctx, ready, now); err != nil {
			errs = append(errs, err)
		}
	}
	if k.opts.MarkPodsRunning && len(byProviderID) > 0 {
		if err := k.finishTerminatingPods(ctx, byProviderID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// register creates the Node of a running instance, as its kubelet does when it starts.
func (k *Kubelet) register(ctx context.Context, inst Instance, ready bool, now time.Time) (*corev1.Node, error) {
	boot := inst.Bootstrap
	var claim karpv1.NodeClaim
	switch err := k.kube.Get(ctx, client.ObjectKey{Name: inst.NodeClaimName}, &claim); {
	case err == nil:
		boot = Bootstrap{Labels: claim.Labels, Taints: claim.Spec.Taints, StartupTaints: claim.Spec.StartupTaints}
	case apierrors.IsNotFound(err):
		// The claim is gone; the kubelet still starts with what its user data said.
	default:
		return nil, fmt.Errorf("reading nodeclaim %s of instance %s: %w", inst.NodeClaimName, inst.ID, err)
	}

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: inst.Hostname, Labels: nodeLabels(inst, boot.Labels)},
		Spec:       corev1.NodeSpec{ProviderID: inst.ProviderID, Taints: registrationTaints(boot, ready, k.opts.RegisterWithTaints)},
		Status:     k.nodeStatus(inst, ready, now),
	}
	err := k.kube.Create(ctx, node)
	if err == nil {
		return node, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("registering node %s: %w", inst.Hostname, err)
	}
	existing := &corev1.Node{}
	if err := k.kube.Get(ctx, client.ObjectKey{Name: inst.Hostname}, existing); err != nil {
		return nil, fmt.Errorf("reading node %s: %w", inst.Hostname, err)
	}
	if existing.Spec.ProviderID != inst.ProviderID {
		return nil, fmt.Errorf("registering node %s: the name is taken by provider id %q", inst.Hostname, existing.Spec.ProviderID)
	}
	return existing, nil
}

// syncStatus brings the Node's status (and its not-ready taint) in line with the instance.
func (k *Kubelet) syncStatus(ctx context.Context, node *corev1.Node, inst Instance, ready bool, now time.Time) (*corev1.Node, error) {
	cond := findNodeCondition(node.Status.Conditions, corev1.NodeReady)
	switch {
	case cond == nil || node.Status.Capacity == nil:
		// Registered without status (a store that drops it on create, or a failed write).
		base := node.DeepCopy()
		node.Status = k.nodeStatus(inst, ready, now)
		if err := k.kube.Status().Patch(ctx, node, client.MergeFrom(base)); err != nil {
			return nil, fmt.Errorf("writing status of node %s: %w", node.Name, err)
		}
	case ready && cond.Status != corev1.ConditionTrue:
		base := node.DeepCopy()
		t := metav1.NewTime(now)
		*cond = corev1.NodeCondition{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: t, LastTransitionTime: t,
		}
		if err := k.kube.Status().Patch(ctx, node, client.MergeFrom(base)); err != nil {
			return nil, fmt.Errorf("marking node %s ready: %w", node.Name, err)
		}
	}
	if inst.Rebooting(now) && cond != nil && cond.Status == corev1.ConditionTrue {
		// The kubelet is down while its instance reboots.
		base := node.DeepCopy()
		t := metav1.NewTime(now)
		*cond = corev1.NodeCondition{
			Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
			Message: "the node is rebooting", LastHeartbeatTime: t, LastTransitionTime: t,
		}
		if err := k.kube.Status().Patch(ctx, node, client.MergeFrom(base)); err != nil {
			return nil, fmt.Errorf("marking node %s not ready: %w", node.Name, err)
		}
	}
	if bootID := inst.BootID(now); node.Status.NodeInfo.BootID != "" && node.Status.NodeInfo.BootID != bootID {
		// A new boot: its kubelet posts the boot ID, and its own conditions afresh.
		base := node.DeepCopy()
		node.Status.NodeInfo.BootID = bootID
		node.Status.Conditions = slices.DeleteFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
			return !slices.Contains(kubeletConditionTypes, c.Type)
		})
		if err := k.kube.Status().Patch(ctx, node, client.MergeFrom(base)); err != nil {
			return nil, fmt.Errorf("writing the boot ID of node %s: %w", node.Name, err)
		}
	}
	if ready && (hasTaint(node.Spec.Taints, corev1.TaintNodeNotReady) || hasTaint(node.Spec.Taints, corev1.TaintNodeUnreachable)) {
		// The node lifecycle controller's part: a Ready node loses its not-ready (or, after a
		// reboot cleared a vanished kubelet, unreachable) taint.
		var err error
		if node, err = k.removeTaints(ctx, node, func(t corev1.Taint) bool {
			return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
		}); err != nil {
			return nil, fmt.Errorf("removing the not-ready taint of node %s: %w", node.Name, err)
		}
	}
	return node, nil
}

// syncFaults writes the instance's faults onto the Node as its conditions, and gives a Node
// with a Ready fault the taint the node lifecycle controller adds for it.
func (k *Kubelet) syncFaults(ctx context.Context, node *corev1.Node, faults []NodeCondition, now time.Time) (*corev1.Node, error) {
	if len(faults) == 0 {
		return node, nil
	}
	base := node.DeepCopy()
	changed := false
	for _, f := range faults {
		want := corev1.NodeCondition{Type: f.Type, Status: f.Status, Reason: f.Reason, Message: f.Message,
			LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(f.Since)}
		cond := findNodeCondition(node.Status.Conditions, f.Type)
		switch {
		case cond == nil:
			node.Status.Conditions = append(node.Status.Conditions, want)
		case cond.Status != want.Status || cond.Reason != want.Reason || cond.Message != want.Message || !cond.LastTransitionTime.Equal(&want.LastTransitionTime):
			*cond = want
		default:
			continue
		}
		changed = true
	}
	if changed {
		if err := k.kube.Status().Patch(ctx, node, client.MergeFrom(base)); err != nil {
			return nil, fmt.Errorf("writing the faults of node %s: %w", node.Name, err)
		}
	}
	readyFault := findFault(faults, corev1.NodeReady)
	if readyFault == nil {
		return node, nil
	}
	taint := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	if readyFault.Status == corev1.ConditionUnknown {
		taint.Key = corev1.TaintNodeUnreachable
	}
	tainted := func(taints []corev1.Taint) bool {
		return slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) })
	}
	if tainted(node.Spec.Taints) {
		return node, nil
	}
	key := client.ObjectKeyFromObject(node)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh := &corev1.Node{}
		if err := k.kube.Get(ctx, key, fresh); err != nil {
			return err
		}
		if !tainted(fresh.Spec.Taints) {
			fresh.Spec.Taints = append(fresh.Spec.Taints, taint)
			if err := k.kube.Update(ctx, fresh); err != nil {
				return err
			}
		}
		node = fresh
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tainting unhealthy node %s: %w", node.Name, err)
	}
	return node, nil
}

// liftStartupTaints removes boot's startup taints from the Node, as the agents they wait for do
// once they run. A taint that is also among boot's regular taints or RegisterWithTaints (same
// key and effect) stays: it is the NodePool's or the user data's, not the agent's.
func (k *Kubelet) liftStartupTaints(ctx context.Context, node *corev1.Node, boot Bootstrap) (*corev1.Node, error) {
	lifted := func(t corev1.Taint) bool {
		matches := func(o corev1.Taint) bool { return t.MatchTaint(&o) }
		return slices.ContainsFunc(boot.StartupTaints, matches) &&
			!slices.ContainsFunc(boot.Taints, matches) && !slices.ContainsFunc(k.opts.RegisterWithTaints, matches)
	}
	if !slices.ContainsFunc(node.Spec.Taints, lifted) {
		return node, nil
	}
	fresh, err := k.removeTaints(ctx, node, lifted)
	if err != nil {
		return nil, fmt.Errorf("lifting the startup taints of node %s: %w", node.Name, err)
	}
	return fresh, nil
}

// removeTaints removes the Node's taints for which drop is true and returns the Node as
// written. Karpenter edits the taints too, so it updates with optimistic locking and retries
// on conflicts.
func (k *Kubelet) removeTaints(ctx context.Context, node *corev1.Node, drop func(corev1.Taint) bool) (*corev1.Node, error) {
	key := client.ObjectKeyFromObject(node)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh := &corev1.Node{}
		if err := k.kube.Get(ctx, key, fresh); err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(fresh.Spec.Taints), drop)
		if len(kept) != len(fresh.Spec.Taints) {
			fresh.Spec.Taints = kept
			if err := k.kube.Update(ctx, fresh); err != nil {
				return err
			}
		}
		node = fresh
		return nil
	})
	return node, err
}

// kubeletConditionTypes are the conditions the kubelet itself reports; the others (the node
// monitoring agent's, faults written by syncFaults) start afresh with a new boot.
var kubeletConditionTypes = []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady}

// nodeStatus is what the kubelet of the instance reports.
func (k *Kubelet) nodeStatus(inst Instance, ready bool, now time.Time) corev1.NodeStatus {
	t := metav1.NewTime(now)
	readyCond := corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		Message: "container runtime network not ready", LastHeartbeatTime: t, LastTransitionTime: t,
	}
	if ready {
		readyCond.Status, readyCond.Reason, readyCond.Message = corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"
	}
	healthy := func(typ corev1.NodeConditionType, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: corev1.ConditionFalse, Reason: reason, Message: message, LastHeartbeatTime: t, LastTransitionTime: t}
	}
	id := digest("machine", inst.ID)
	return corev1.NodeStatus{
		Capacity:    inst.Capacity.DeepCopy(),
		Allocatable: inst.Allocatable.DeepCopy(),
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{
			healthy(corev1.NodeMemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			healthy(corev1.NodeDiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			healthy(corev1.NodePIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			readyCond,
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: inst.PrivateIP},
			{Type: corev1.NodeHostName, Address: inst.Hostname},
			{Type: corev1.NodeInternalDNS, Address: inst.Hostname},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               id[:32],
			SystemUUID:              "ec2" + id[32:37] + "-" + id[37:41] + "-" + id[41:45] + "-" + id[45:49] + "-" + id[49:61],
			BootID:                  inst.BootID(now),
			KernelVersion:           "6.1.0-sim",
			OSImage:                 "Linux (simulated, " + inst.ImageID + ")",
			ContainerRuntimeVersion: containerRuntimeVersion,
			KubeletVersion:          k.opts.KubeletVersion,
			OperatingSystem:         inst.Labels[corev1.LabelOSStable],
			Architecture:            inst.Labels[corev1.LabelArchStable],
		},
	}
}

// nodeLabels are the labels a kubelet registers its Node with: the claim's labels it may set
// itself (the NodeRestriction admission rules), the instance's labels, its hostname and the
// legacy beta labels.
func nodeLabels(inst Instance, claimLabels map[string]string) map[string]string {
	out := make(map[string]string, len(claimLabels)+len(inst.Labels)+6)
	for k, v := range claimLabels {
		if kubeletMaySetLabel(k) {
			out[k] = v
		}
	}
	maps.Copy(out, inst.Labels)
	out[corev1.LabelHostname] = inst.Hostname
	out[corev1.LabelArchStable] = cmp.Or(out[corev1.LabelArchStable], "amd64")
	out[corev1.LabelOSStable] = cmp.Or(out[corev1.LabelOSStable], string(corev1.Linux))
	out["beta.kubernetes.io/arch"] = out[corev1.LabelArchStable]
	out["beta.kubernetes.io/os"] = out[corev1.LabelOSStable]
	out[corev1.LabelInstanceType] = inst.InstanceType
	out[corev1.LabelFailureDomainBetaZone] = inst.Zone
	out[corev1.LabelFailureDomainBetaRegion] = out[corev1.LabelTopologyRegion]
	return out
}

// kubeletMaySetLabel says whether the NodeRestriction admission plugin lets a kubelet set the
// label on its own Node: any label outside the kubernetes.io and k8s.io domains, and within
// them only the kubelet.kubernetes.io and node.kubernetes.io namespaces (the well-known labels
// the kubelet sets come from the instance instead).
func kubeletMaySetLabel(key string) bool {
	domain, _, found := strings.Cut(key, "/")
	if !found {
		return true
	}
	restricted := func(d string) bool { return domain == d || strings.HasSuffix(domain, "."+d) }
	if !restricted("kubernetes.io") && !restricted("k8s.io") {
		return true
	}
	return domain == "kubelet.kubernetes.io" || domain == "node.kubernetes.io" ||
		strings.HasSuffix(domain, ".kubelet.kubernetes.io") || strings.HasSuffix(domain, ".node.kubernetes.io")
}

// registrationTaints are the taints a Node registers with: Karpenter's unregistered taint, the
// claim's taints and startup taints (the kubelet's --register-with-taints), and not-ready until
// it is. Duplicates (same key and effect) keep their first occurrence.
func registrationTaints(boot Bootstrap, ready bool, extra []corev1.Taint) []corev1.Taint {
	taints := []corev1.Taint{{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}}
	taints = append(taints, boot.Taints...)
	taints = append(taints, boot.StartupTaints...)
	taints = append(taints, extra...)
	if !ready {
		taints = append(taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
	}
	out := taints[:0]
	for _, t := range taints {
		if !slices.ContainsFunc(out, func(o corev1.Taint) bool { return o.Key == t.Key && o.Effect == t.Effect }) {
			out = append(out, t)
		}
	}
	return out
}

func hasTaint(taints []corev1.Taint, key string) bool {
	return slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.Key == key })
}

func findNodeCondition(conds []corev1.NodeCondition, typ corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// PodPhaseIndex is the field the Kubelet lists Pending pods by: kube-apiserver serves it as a
// field selector; a cached client needs IndexFields first.
const PodPhaseIndex = "status.phase"

// PodTerminatingIndex indexes pods being deleted (a deletion timestamp set) under "true", for
// the Kubelet to find the pods whose deletion it finishes without listing every pod. It is no
// field selector of kube-apiserver's: without the index the Kubelet lists every pod.
const PodTerminatingIndex = "simulate.karpenter.sh/terminating"

// PodStartingIndex indexes, under "true", the pods bound to a node whose containers have not
// started (phase Pending, not being deleted), for the Kubelet to find the pods to start without
// listing every Pending pod (at a scale-up, most of them wait for a node). It is no field
// selector of kube-apiserver's: without the index the Kubelet lists the Pending pods.
const PodStartingIndex = "simulate.karpenter.sh/starting"

// IndexFields registers, on a cache's field indexer, the pod fields the Kubelet selects by.
func IndexFields(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Pod{}, PodPhaseIndex, func(o client.Object) []string {
		if p, ok := o.(*corev1.Pod); ok {
			return []string{string(p.Status.Phase)}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing pods by phase: %w", err)
	}
	if err := indexer.IndexField(ctx, &corev1.Pod{}, PodTerminatingIndex, func(o client.Object) []string {
		if p, ok := o.(*corev1.Pod); ok && p.DeletionTimestamp != nil {
			return []string{"true"}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing pods being deleted: %w", err)
	}
	if err := indexer.IndexField(ctx, &corev1.Pod{}, PodStartingIndex, func(o client.Object) []string {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" && p.DeletionTimestamp == nil && (p.Status.Phase == "" || p.Status.Phase == corev1.PodPending) {
			return []string{"true"}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing pods starting: %w", err)
	}
	return nil
}

// listPodsIndexed lists, read-only, the pods the client's index of that name holds under
// "true", or, from a client without the index (kube-apiserver serves no such field selector),
// the pods fallback selects.
func (k *Kubelet) listPodsIndexed(ctx context.Context, index string, fallback ...client.ListOption) (corev1.PodList, error) {
	var pods corev1.PodList
	if err := k.kube.List(ctx, &pods, client.MatchingFields{index: "true"}, client.UnsafeDisableDeepCopy); err == nil {
		return pods, nil
	}
	pods = corev1.PodList{}
	if err := k.kube.List(ctx, &pods, append(fallback, client.UnsafeDisableDeepCopy)...); err != nil {
		return pods, fmt.Errorf("listing pods: %w", err)
	}
	return pods, nil
}

// finishTerminatingPods deletes the pods being deleted (evicted, scaled down) from the cloud's
// Nodes, as their kubelet does once their containers have stopped: simulated containers stop
// at once. Without it a terminating pod would stay forever, and drains would never end.
func (k *Kubelet) finishTerminatingPods(ctx context.Context, nodes map[string]*corev1.Node) error {
	ours := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		ours[n.Name] = true
	}
	// The pods being deleted, through PodTerminatingIndex when the client has it.
	pods, err := k.listPodsIndexed(ctx, PodTerminatingIndex)
	if err != nil {
		return err
	}
	var errs []error
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp == nil || !ours[pod.Spec.NodeName] {
			continue
		}
		gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
		if err := k.kube.Delete(ctx, gone, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting terminated pod %s/%s: %w", pod.Namespace, pod.Name, err))
		}
	}
	return errors.Join(errs...)
}

// markPodsRunning sets the pending pods bound to the ready Nodes to Running, in namespace and
// name order.
func (k *Kubelet) markPodsRunning(ctx context.Context, ready map[string]*corev1.Node, now time.Time) error {
	// Only the pods bound and not started, through PodStartingIndex when the client has it, else
	// the Pending pods (a field selector kube-apiserver serves too); read-only: the pods to
	// change are copied first.
	pods, err := k.listPodsIndexed(ctx, PodStartingIndex, client.MatchingFields{PodPhaseIndex: string(corev1.PodPending)})
	if err != nil {
		return err
	}
	byName := func(a, b corev1.Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	}
	if !slices.IsSortedFunc(pods.Items, byName) {
		slices.SortFunc(pods.Items, byName)
	}
	var errs []error
	for i := range pods.Items {
		shared := &pods.Items[i]
		node := ready[shared.Spec.NodeName]
		if node == nil || shared.DeletionTimestamp != nil || (shared.Status.Phase != "" && shared.Status.Phase != corev1.PodPending) {
			continue
		}
		patch := newPodRunningPatch(shared, node, now)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: shared.Namespace, Name: shared.Name}}
		if k.opts.PodWorkers <= 1 {
			if err := k.kube.Status().Patch(ctx, pod, patch); client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("marking pod %s/%s running: %w", pod.Namespace, pod.Name, err))
			}
			continue
		}
		if _, busy := k.starting.LoadOrStore(shared.UID, true); busy {
			continue
		}
		go func(uid types.UID) {
			defer k.starting.Delete(uid)
			select {
			case k.startSlots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-k.startSlots }()
			if err := k.kube.Status().Patch(ctx, pod, patch); client.IgnoreNotFound(err) != nil && ctx.Err() == nil {
				log.FromContext(ctx).Error(err, "simulated kubelet could not start a pod", "pod", client.ObjectKeyFromObject(pod))
			}
		}(shared.UID)
	}
	return errors.Join(errs...)
}

// podRunningPatch is the merge patch of a pod's status that setPodRunning makes: every status
// field it sets, whole. Applied to the pod it gives what client.MergeFrom's patch would, without
// encoding the pod twice and comparing the two (the pods a large simulation starts are most of
// its writes). Besides its JSON (Data) it can make the same change to the typed pod (ApplyTo):
// the simulator's store applies it that way, without encoding or decoding JSON.
type podRunningPatch struct {
	// running is the pod's status once started. The patch carries its phase, start time and
	// conditions, the addresses it has, and the container lists flagged: a list is replaced
	// whole when it has entries now or had some before (null removes stale ones).
	running                    corev1.PodStatus
	containers, initContainers bool
}

// newPodRunningPatch is the patch that starts pod on node at now.
func newPodRunningPatch(pod *corev1.Pod, node *corev1.Node, now time.Time) *podRunningPatch {
	started := &corev1.Pod{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec, Status: *pod.Status.DeepCopy()}
	setPodRunning(started, node, now)
	st := started.Status
	return &podRunningPatch{running: st,
		containers:     len(st.ContainerStatuses) > 0 || len(pod.Status.ContainerStatuses) > 0,
		initContainers: len(st.InitContainerStatuses) > 0 || len(pod.Status.InitContainerStatuses) > 0}
}

// Type is a JSON merge patch.
func (p *podRunningPatch) Type() types.PatchType { return types.MergePatchType }

// Data is the merge patch's JSON.
func (p *podRunningPatch) Data(obj client.Object) ([]byte, error) {
	st := p.running
	status := map[string]any{"phase": st.Phase, "startTime": st.StartTime, "conditions": st.Conditions}
	// The addresses setPodRunning set or kept (writing a kept one again changes nothing).
	if st.HostIP != "" {
		status["hostIP"] = st.HostIP
	}
	if len(st.HostIPs) > 0 {
		status["hostIPs"] = st.HostIPs
	}
	if st.PodIP != "" {
		status["podIP"] = st.PodIP
	}
	if len(st.PodIPs) > 0 {
		status["podIPs"] = st.PodIPs
	}
	if p.containers {
		status["containerStatuses"] = st.ContainerStatuses
	}
	if p.initContainers {
		status["initContainerStatuses"] = st.InitContainerStatuses
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return nil, fmt.Errorf("encoding the running status of pod %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return patch, nil
}

// ApplyTo changes obj, a Pod that shares its fields with a stored one, as applying Data would:
// each field the patch carries replaced whole by a new value, its times as JSON carries them
// (seconds, read back in the local zone).
func (p *podRunningPatch) ApplyTo(obj client.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("the running status patch applies to a Pod, not a %T", obj)
	}
	st, running := &pod.Status, p.running.DeepCopy()
	st.Phase = running.Phase
	st.StartTime = nil
	if running.StartTime != nil && !running.StartTime.IsZero() {
		t := jsonTime(*running.StartTime)
		st.StartTime = &t
	}
	for i := range running.Conditions {
		c := &running.Conditions[i]
		c.LastProbeTime, c.LastTransitionTime = jsonTime(c.LastProbeTime), jsonTime(c.LastTransitionTime)
	}
	st.Conditions = running.Conditions
	if running.HostIP != "" {
		st.HostIP = running.HostIP
	}
	if len(running.HostIPs) > 0 {
		st.HostIPs = running.HostIPs
	}
	if running.PodIP != "" {
		st.PodIP = running.PodIP
	}
	if len(running.PodIPs) > 0 {
		st.PodIPs = running.PodIPs
	}
	if p.containers {
		st.ContainerStatuses = jsonContainerTimes(running.ContainerStatuses)
	}
	if p.initContainers {
		st.InitContainerStatuses = jsonContainerTimes(running.InitContainerStatuses)
	}
	return nil
}

// jsonTime is t as it reads back from JSON: to the second, in the local zone; zero stays zero
// (JSON null).
func jsonTime(t metav1.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t.Rfc3339Copy().Local())
}

// jsonContainerTimes gives the times in statuses as they read back from JSON.
func jsonContainerTimes(statuses []corev1.ContainerStatus) []corev1.ContainerStatus {
	for i := range statuses {
		for _, state := range []*corev1.ContainerState{&statuses[i].State, &statuses[i].LastTerminationState} {
			if r := state.Running; r != nil {
				r.StartedAt = jsonTime(r.StartedAt)
			}
			if t := state.Terminated; t != nil {
				t.StartedAt, t.FinishedAt = jsonTime(t.StartedAt), jsonTime(t.FinishedAt)
			}
		}
	}
	return statuses
}

// setPodRunning writes the status a kubelet reports once a pod's containers have started.
func setPodRunning(pod *corev1.Pod, node *corev1.Node, now time.Time) {
	t := metav1.NewTime(now)
	var nodeIP string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			nodeIP = a.Address
			break
		}
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &t
	if nodeIP != "" {
		pod.Status.HostIP = nodeIP
		pod.Status.HostIPs = []corev1.HostIP{{IP: nodeIP}}
		if pod.Spec.HostNetwork {
			pod.Status.PodIP = nodeIP
			pod.Status.PodIPs = []corev1.PodIP{{IP: nodeIP}}
		}
	}
	for _, typ := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		setPodCondition(pod, corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: t})
	}
	containerID := func(name string) string {
		return "containerd://" + digest("container", string(pod.UID), pod.Namespace, pod.Name, name)[:64]
	}
	running := func(c corev1.Container) corev1.ContainerStatus {
		started := true
		return corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: containerID(c.Name),
			Ready: true, Started: &started, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		}
	}
	pod.Status.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, running(c)) // a sidecar
			continue
		}
		started := false
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: containerID(c.Name), Ready: true, Started: &started,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: t, FinishedAt: t, ContainerID: containerID(c.Name)}},
		})
	}
	pod.Status.ContainerStatuses = make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, running(c))
	}
}

func setPodCondition(pod *corev1.Pod, cond corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == cond.Type {
			if pod.Status.Conditions[i].Status == cond.Status {
				return
			}
			pod.Status.Conditions[i] = cond
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, cond)
}
