package simulate

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
)

// A cluster taken into a simulation (`karpenter simulate --from-cluster`) runs twice:
//
//   - from scratch: its NodePools and DaemonSets, and each of its pods that is not a
//     DaemonSet's or a static pod, deployed at once on an empty cluster, as plain manifests
//     are;
//   - consolidation now: its nodes adopted by the simulated cloud as they are (instance type,
//     zone, capacity type, allocatable, labels and taints), its pods bound where they run, its
//     PodDisruptionBudgets, and the disruption controllers left to act until they settle.
//
// Every object keeps its namespace and name (a pod's name cut to 63 characters with a hash
// when longer: it names its workload, in a label), so PodDisruptionBudgets, pod
// (anti-)affinity terms and topology spread constraints select the same pods as in the
// cluster. Each pod is its own workload of one replica: when disruption evicts it, a new one
// like it is made, as its controller would.

// UnmanagedNodePool is how reports name the NodePool of nodes Karpenter does not manage.
const UnmanagedNodePool = "(unmanaged)"

// DefaultSettle is how long consolidation runs on the virtual clock after the longest
// consolidateAfter of the NodePools: long enough for it to settle.
const DefaultSettle = time.Hour

// ClusterOptions tune a --from-cluster run.
type ClusterOptions struct {
	// NodePoolFiles are files of NodePools and EC2NodeClasses: one named as one of the
	// cluster's replaces it, the others are added.
	NodePoolFiles []string
	// AdoptUnmanaged, when set, is the NodePool the nodes Karpenter does not manage (managed
	// node groups, Cluster Autoscaler's) are taken into, as if it had launched them, so that
	// consolidation may act on them; empty leaves them unmanaged.
	AdoptUnmanaged string
	// Settle is how long consolidation runs after the longest consolidateAfter (default
	// DefaultSettle).
	Settle time.Duration
	// Seed seeds the simulated cloud (default 1).
	Seed int64
	// Progress, when set, is called with each run's name, virtual time done and total.
	Progress func(run string, done, total time.Duration)
}

// ClusterRun is a cluster made ready to simulate: PrepareCluster refuses what cannot be, Run
// runs it.
type ClusterRun struct {
	cluster   *Cluster
	opts      ClusterOptions
	karpenter []client.Object
	pools     map[string]*karpv1.NodePool
	nodes     []*adoptedNode
	pods      []*clusterPod
	daemons   []*corev1.Pod
	// daemonSets are the cluster's, and those made up for daemon pods whose DaemonSet the
	// input lacks, by namespace/name.
	daemonSets map[string]*appsv1.DaemonSet
	storage    []client.Object
	pdbs       []client.Object
	zones      []string
	duration   time.Duration
	warnings   []string
	// poolsFrom says where the NodePools came from, for the report.
	poolsFrom string
}

// adoptedNode is one of the cluster's nodes and the instance it becomes.
type adoptedNode struct {
	node                             *corev1.Node
	instanceType, zone, capacityType string
	id                               string
	// nodePool is the NodePool that manages it; empty for an unmanaged node.
	nodePool string
	// claim names its NodeClaim (the cluster's, else the node's name).
	claim  string
	price  float64
	priced bool
}

// clusterPod is one of the cluster's pods that runs in the simulation as a workload.
type clusterPod struct {
	// namespace and name are its workload's in the simulation (name is the pod's, cut to a
	// label value's bound, see workloadName); original is namespace/name.
	namespace, name, original string
	template                  *corev1.PodTemplateSpec
	// node is where it runs; empty for a pending pod.
	node string
}

// PrepareCluster checks a cluster and the options, and prepares both runs. Its errors are the
// input's: a NodePool file that does not parse, no NodePool at all, a NodePool whose
// EC2NodeClass is missing.
func PrepareCluster(c *Cluster, opts ClusterOptions) (*ClusterRun, error) {
	if opts.Settle <= 0 {
		opts.Settle = DefaultSettle
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	r := &ClusterRun{cluster: c, opts: opts, pools: map[string]*karpv1.NodePool{}, daemonSets: map[string]*appsv1.DaemonSet{}}
	if err := r.mergeNodePools(); err != nil {
		return nil, err
	}
	if err := r.adoptNodes(); err != nil {
		return nil, err
	}
	if len(c.Skipped) > 0 {
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(c.Skipped)) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, c.Skipped[k]))
		}
		r.warn("objects not simulated, skipped: " + strings.Join(kinds, ", "))
	}
	r.translatePods()
	r.translateStorage()
	r.translateBudgets()
	longest := time.Duration(0)
	for _, np := range r.pools {
		if a := np.Spec.Disruption.ConsolidateAfter; a.Duration != nil {
			longest = max(longest, *a.Duration)
		}
	}
	r.duration = longest + opts.Settle
	if r.duration > MaxDuration {
		r.duration = MaxDuration
	}
	return r, nil
}

// mergeNodePools takes the cluster's NodePools and EC2NodeClasses, replaced or added to by the
// files', and refuses a run without a NodePool.
func (r *ClusterRun) mergeNodePools() error {
	objs := slices.Clone(r.cluster.Karpenter)
	fromCluster := hasNodePool(objs)
	if len(r.opts.NodePoolFiles) > 0 {
		var docs []document
		var errs []error
		for _, file := range r.opts.NodePoolFiles {
			data, err := readFile(file)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			d, e := readDocuments(file, string(data), 1)
			errs = append(errs, e...)
			for _, doc := range d {
				if !doc.isKarpenter() || doc.src.Kind == "NodeClaim" {
					errs = append(errs, doc.errorf("kind", "%s: with --from-cluster, the files given are NodePools and EC2NodeClasses (the workload is the cluster's pods; a dump is given as --from-cluster=%s, with =)", doc.src.Kind, file))
					continue
				}
				docs = append(docs, doc)
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		files, err := decodeObjects(docs, objs...)
		if err != nil {
			return err
		}
		for _, f := range files {
			kind := f.GetObjectKind().GroupVersionKind().Kind
			objs = slices.DeleteFunc(objs, func(o client.Object) bool {
				return o.GetObjectKind().GroupVersionKind().Kind == kind && o.GetName() == f.GetName()
			})
			objs = append(objs, f)
		}
	}
	classes := map[string]bool{}
	for _, o := range objs {
		switch o := o.(type) {
		case *karpv1.NodePool:
			r.pools[o.Name] = o
		case *awsv1.EC2NodeClass:
			classes[o.Name] = true
		}
	}
	if len(r.pools) == 0 {
		return fmt.Errorf("%s: no NodePool: the cluster has none (it runs no Karpenter, or the dump lacks them: add nodepools,ec2nodeclasses to kubectl get); pass NodePool and EC2NodeClass files to simulate with, such as karpenter simulate --from-cluster=%s nodepool.yaml", r.cluster.Source, r.cluster.Source)
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(r.pools)) {
		ref := r.pools[name].Spec.Template.Spec.NodeClassRef
		if ref == nil || !classes[ref.Name] {
			refName := ""
			if ref != nil {
				refName = ref.Name
			}
			errs = append(errs, fmt.Errorf("%s: NodePool %s: spec.template.spec.nodeClassRef: EC2NodeClass %q is neither in the cluster nor in the files given: pass its file", r.cluster.Source, name, refName))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	switch {
	case fromCluster && len(r.opts.NodePoolFiles) > 0:
		r.poolsFrom = "the cluster's, with the files' (" + strings.Join(r.opts.NodePoolFiles, ", ") + ") replacing those of their names"
	case fromCluster:
		r.poolsFrom = "the cluster's"
	default:
		r.poolsFrom = strings.Join(r.opts.NodePoolFiles, ", ")
	}
	if r.opts.AdoptUnmanaged != "" && r.pools[r.opts.AdoptUnmanaged] == nil {
		return fmt.Errorf("--adopt-nodes %s: no such NodePool (have %s)", r.opts.AdoptUnmanaged, strings.Join(slices.Sorted(maps.Keys(r.pools)), ", "))
	}
	r.karpenter = objs
	return nil
}

// Well-known labels of the nodes read.
const (
	labelBetaInstanceType = "beta.kubernetes.io/instance-type"
	// labelEKSCapacityType is what EKS managed node groups label their nodes with: ON_DEMAND
	// or SPOT.
	labelEKSCapacityType = "eks.amazonaws.com/capacityType"
)

// adoptNodes works out each node's instance, NodePool and price.
func (r *ClusterRun) adoptNodes() error {
	prices, err := catalog.DefaultPrices()
	if err != nil {
		return err
	}
	claims := map[string]string{} // node name or provider ID -> NodeClaim name
	for _, nc := range r.cluster.NodeClaims {
		if nc.Status.NodeName != "" {
			claims[nc.Status.NodeName] = nc.Name
		}
		if nc.Status.ProviderID != "" {
			claims[nc.Status.ProviderID] = nc.Name
		}
	}
	zones := map[string]bool{}
	ids := map[string]bool{}
	nodes := slices.Clone(r.cluster.Nodes)
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for i := range nodes {
		n := &nodes[i]
		if n.DeletionTimestamp != nil {
			r.warn(fmt.Sprintf("node %s is being deleted: left out", n.Name))
			continue
		}
		a := &adoptedNode{node: n}
		a.instanceType = cmp.Or(n.Labels[corev1.LabelInstanceTypeStable], n.Labels[labelBetaInstanceType], "unknown")
		providerZone, providerID := "", ""
		if rest, ok := strings.CutPrefix(n.Spec.ProviderID, "aws:///"); ok {
			providerZone, providerID, _ = strings.Cut(rest, "/")
		}
		a.zone = cmp.Or(n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelFailureDomainBetaZone], providerZone)
		if a.zone == "" {
			r.warn(fmt.Sprintf("node %s has no %s label: taken to be in %s", n.Name, corev1.LabelTopologyZone, sim.DefaultZones(sim.DefaultRegion)[0]))
			a.zone = sim.DefaultZones(sim.DefaultRegion)[0]
		}
		zones[a.zone] = true
		a.capacityType = karpv1.CapacityTypeOnDemand
		switch {
		case n.Labels[karpv1.CapacityTypeLabelKey] != "":
			a.capacityType = n.Labels[karpv1.CapacityTypeLabelKey]
		case n.Labels[labelEKSCapacityType] == "SPOT":
			a.capacityType = karpv1.CapacityTypeSpot
		}
		if strings.HasPrefix(providerID, "i-") && !strings.Contains(providerID, "/") && !ids[providerID] {
			a.id = providerID
			ids[providerID] = true
		}
		switch pool := n.Labels[karpv1.NodePoolLabelKey]; {
		case pool != "" && r.pools[pool] != nil:
			a.nodePool = pool
		case pool != "":
			r.warn(fmt.Sprintf("node %s belongs to NodePool %s, which is neither in the cluster nor in the files given: taken as unmanaged", n.Name, pool))
		}
		if a.nodePool == "" && r.opts.AdoptUnmanaged != "" {
			a.nodePool = r.opts.AdoptUnmanaged
		}
		if a.nodePool != "" {
			a.claim = cmp.Or(claims[n.Name], claims[n.Spec.ProviderID], n.Name)
		}
		a.price, a.priced = prices.Price(a.instanceType, a.zone, a.capacityType)
		r.nodes = append(r.nodes, a)
	}
	r.zones = slices.Sorted(maps.Keys(zones))
	return nil
}

// workloadName is the name of the workload that stands for a pod of the cluster: the pod's
// name, cut to 63 characters (the bound of the label value that ties pods to their workload)
// with a hash of the whole when longer.
func workloadName(name string) string {
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	head := strings.TrimRight(name[:54], ".-_")
	return head + "-" + hex.EncodeToString(sum[:])[:8]
}

// translatePods sorts the cluster's pods into DaemonSet and static pods, which run where they
// are, and workload pods, each made a template of.
func (r *ClusterRun) translatePods() {
	nodes := map[string]bool{}
	for _, a := range r.nodes {
		nodes[a.node.Name] = true
	}
	claims := map[string]bool{}
	for _, pvc := range r.cluster.Claims {
		claims[pvc.Namespace+"/"+pvc.Name] = true
	}
	for i := range r.cluster.DaemonSets {
		ds := r.cluster.DaemonSets[i].DeepCopy()
		r.daemonSets[ds.Namespace+"/"+ds.Name] = ds
	}
	pods := slices.Clone(r.cluster.Pods)
	slices.SortFunc(pods, func(a, b corev1.Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	for i := range pods {
		p := &pods[i]
		if p.Namespace == "" {
			p.Namespace = "default"
		}
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if ds := daemonSetOf(p); ds != "" || isMirrorPod(p) {
			if !nodes[p.Spec.NodeName] {
				continue // a daemon pod of a node left out, or not yet placed: new nodes get their own
			}
			if ds != "" && r.daemonSets[p.Namespace+"/"+ds] == nil {
				r.daemonSets[p.Namespace+"/"+ds] = daemonSetFromPod(p, ds)
			}
			r.daemons = append(r.daemons, p)
			continue
		}
		cp := &clusterPod{namespace: p.Namespace, name: workloadName(p.Name), original: p.Namespace + "/" + p.Name, template: r.podTemplate(p, claims)}
		if p.Spec.NodeName != "" {
			if nodes[p.Spec.NodeName] {
				cp.node = p.Spec.NodeName
			} else {
				r.warn(fmt.Sprintf("pod %s runs on node %s, which is not among the nodes read: taken as pending", cp.original, p.Spec.NodeName))
			}
		}
		r.pods = append(r.pods, cp)
	}
}

// daemonSetFromPod makes up the DaemonSet a daemon pod belongs to when the input lacks it: its
// pods are like this one, without the node affinity the DaemonSet controller pins each to its
// node with.
func daemonSetFromPod(p *corev1.Pod, name string) *appsv1.DaemonSet {
	spec := p.Spec.DeepCopy()
	spec.NodeName = ""
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		for i := range terms {
			terms[i].MatchFields = nil
		}
		terms = slices.DeleteFunc(terms, func(t corev1.NodeSelectorTerm) bool { return len(t.MatchExpressions) == 0 })
		if len(terms) == 0 {
			a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
		} else {
			a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = terms
		}
	}
	labels := maps.Clone(p.Labels)
	delete(labels, "controller-revision-hash")
	delete(labels, "pod-template-generation")
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Namespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: maps.Clone(p.Annotations)}, Spec: *spec},
		},
	}
}

// podTemplate is the template of the pods that stand for p in the simulation: its labels,
// annotations and spec, unbound; a volume of a claim that was not read becomes an emptyDir.
func (r *ClusterRun) podTemplate(p *corev1.Pod, claims map[string]bool) *corev1.PodTemplateSpec {
	spec := p.Spec.DeepCopy()
	spec.NodeName = ""
	labels := maps.Clone(p.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.PersistentVolumeClaim == nil || claims[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName] {
			continue
		}
		r.warn(fmt.Sprintf("pod %s/%s: persistentvolumeclaim %s is not among the objects read: its volume is taken as an emptyDir (add pvc,pv to kubectl get for its zone to count)", p.Namespace, p.Name, v.PersistentVolumeClaim.ClaimName))
		v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: maps.Clone(p.Annotations)}, Spec: *spec}
}

// translateStorage takes the StorageClasses, volumes and claims as they are.
func (r *ClusterRun) translateStorage() {
	for i := range r.cluster.StorageClasses {
		sc := r.cluster.StorageClasses[i].DeepCopy()
		cleanMeta(&sc.ObjectMeta)
		sc.SetGroupVersionKind(storagev1.SchemeGroupVersion.WithKind("StorageClass"))
		r.storage = append(r.storage, sc)
	}
	for i := range r.cluster.Volumes {
		pv := r.cluster.Volumes[i].DeepCopy()
		cleanMeta(&pv.ObjectMeta)
		pv.Status = corev1.PersistentVolumeStatus{}
		if ref := pv.Spec.ClaimRef; ref != nil {
			pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: cmp.Or(ref.Namespace, defaultNamespace), Name: ref.Name}
		}
		pv.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolume"))
		r.storage = append(r.storage, pv)
	}
	for i := range r.cluster.Claims {
		pvc := r.cluster.Claims[i].DeepCopy()
		pvc.Namespace = cmp.Or(pvc.Namespace, defaultNamespace)
		cleanMeta(&pvc.ObjectMeta)
		pvc.Status = corev1.PersistentVolumeClaimStatus{}
		pvc.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"))
		r.storage = append(r.storage, pvc)
	}
}

// translateBudgets takes the PodDisruptionBudgets that select pods.
func (r *ClusterRun) translateBudgets() {
	for i := range r.cluster.PodDisruptionBudgets {
		src := &r.cluster.PodDisruptionBudgets[i]
		ns := cmp.Or(src.Namespace, "default")
		if src.Spec.Selector == nil {
			r.warn(fmt.Sprintf("poddisruptionbudget %s/%s has no selector: it guards no pod", ns, src.Name))
			continue
		}
		pdb := src.DeepCopy()
		pdb.Namespace = ns
		cleanMeta(&pdb.ObjectMeta)
		pdb.Status = policyv1.PodDisruptionBudgetStatus{}
		pdb.SetGroupVersionKind(policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"))
		r.pdbs = append(r.pdbs, pdb)
	}
}

// cleanMeta drops what the API server set on an object read from it, and its owner
// references (its owners are not simulated; the simulation's garbage collector would delete
// it for want of them).
func cleanMeta(m *metav1.ObjectMeta) {
	m.UID, m.ResourceVersion, m.Generation, m.ManagedFields = "", "", 0, nil
	m.CreationTimestamp, m.DeletionTimestamp, m.DeletionGracePeriodSeconds = metav1.Time{}, nil, nil
	m.OwnerReferences = nil
	m.SelfLink = ""
	delete(m.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
}

func (r *ClusterRun) warn(msg string) {
	if !slices.Contains(r.warnings, msg) {
		r.warnings = append(r.warnings, msg)
	}
}

// workload is one of the two runs: fromScratch with no node, or else the cluster adopted.
func (r *ClusterRun) workload(fromScratch bool) *Workload {
	name := "consolidation now"
	if fromScratch {
		name = "from scratch"
	}
	w := &Workload{Name: name, Duration: Duration{r.duration}, Seed: r.opts.Seed, file: r.cluster.Source, namespacesUnknown: true}
	if len(r.zones) > 0 {
		w.Cloud.Zones = slices.Clone(r.zones)
	}
	for _, o := range r.karpenter {
		w.Objects = append(w.Objects, o.DeepCopyObject().(client.Object))
	}
	for _, o := range append(slices.Clone(r.storage), r.pdbs...) {
		w.Objects = append(w.Objects, o.DeepCopyObject().(client.Object))
	}
	for _, p := range r.pods {
		w.Timeline = append(w.Timeline, Event{Deploy: &Deployment{Name: p.name, Namespace: nonDefault(p.namespace), Replicas: 1, template: p.template.DeepCopy()}})
	}
	if fromScratch {
		for _, key := range slices.Sorted(maps.Keys(r.daemonSets)) {
			ds := r.daemonSets[key].DeepCopy()
			cleanMeta(&ds.ObjectMeta)
			ds.Status = appsv1.DaemonSetStatus{}
			ds.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DaemonSet"))
			w.Objects = append(w.Objects, ds)
		}
		return w
	}
	w.setup = r.adopt
	return w
}

// adopt puts the cluster into a new engine: its DaemonSets, its nodes as running instances
// (with NodeClaims for those a NodePool manages, already launched, registered and
// initialized), and its pods bound where they run.
func (r *ClusterRun) adopt(ctx context.Context, e *engine) error {
	daemonSetUIDs := map[string]metav1.OwnerReference{}
	for _, key := range slices.Sorted(maps.Keys(r.daemonSets)) {
		ds := r.daemonSets[key].DeepCopy()
		cleanMeta(&ds.ObjectMeta)
		ds.Status = appsv1.DaemonSetStatus{}
		if err := e.kube.Create(ctx, ds); err != nil {
			return fmt.Errorf("creating daemonset %s: %w", key, err)
		}
		controller := true
		daemonSetUIDs[key] = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &controller}
	}
	now := e.clock.Now()
	nodeRefs := map[string]metav1.OwnerReference{}
	for _, a := range r.nodes {
		if err := r.adoptNode(ctx, e, a, now); err != nil {
			return err
		}
		var n corev1.Node
		if err := e.kube.Get(ctx, client.ObjectKey{Name: a.node.Name}, &n); err != nil {
			return err
		}
		nodeRefs[n.Name] = metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}
	}
	for _, src := range r.daemons {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: src.Name, Namespace: src.Namespace, Labels: maps.Clone(src.Labels), Annotations: maps.Clone(src.Annotations)}, Spec: *src.Spec.DeepCopy()}
		if ds := daemonSetOf(src); ds != "" {
			p.OwnerReferences = []metav1.OwnerReference{daemonSetUIDs[src.Namespace+"/"+ds]}
		} else {
			p.OwnerReferences = []metav1.OwnerReference{nodeRefs[src.Spec.NodeName]}
		}
		if err := e.kube.Create(ctx, p); err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", src.Namespace, src.Name, err)
		}
	}
	for _, cp := range r.pods {
		if cp.node == "" {
			continue // pending: the timeline's deploy creates it
		}
		p := &corev1.Pod{ObjectMeta: *cp.template.ObjectMeta.DeepCopy(), Spec: *cp.template.Spec.DeepCopy()}
		p.Name, p.Namespace = cp.name, cp.namespace
		p.Labels[ownerLabel] = cp.name
		p.Spec.NodeName = cp.node
		if err := e.kube.Create(ctx, p); err != nil {
			return fmt.Errorf("creating pod %s: %w", cp.original, err)
		}
		e.rec.podCreated(p)
		e.rec.bound(podKey(p), now)
	}
	return nil
}

// adoptNode makes one node an instance of the simulated cloud, creates its Node and, when a
// NodePool manages it, its NodeClaim.
func (r *ClusterRun) adoptNode(ctx context.Context, e *engine, a *adoptedNode, now time.Time) error {
	src := a.node
	in := sim.Adopted{
		ID: a.id, InstanceType: a.instanceType, Zone: a.zone, CapacityType: a.capacityType,
		Hostname: src.Name, RunningSince: now.Add(-time.Hour),
		NodeClaimName: a.claim, NodePoolName: a.nodePool, Unmanaged: a.nodePool == "",
		Labels: maps.Clone(src.Labels), Capacity: src.Status.Capacity, Allocatable: src.Status.Allocatable,
	}
	for _, addr := range src.Status.Addresses {
		if addr.Type == corev1.NodeInternalIP {
			in.PrivateIP = addr.Address
			break
		}
	}
	var np *karpv1.NodePool
	if a.nodePool != "" {
		np = r.pools[a.nodePool]
		in.NodeClassName = np.Spec.Template.Spec.NodeClassRef.Name
		in.Bootstrap = sim.Bootstrap{Labels: maps.Clone(np.Spec.Template.Labels), Taints: np.Spec.Template.Spec.Taints}
	}
	inst, _, err := e.cloud.Adopt(ctx, in)
	if err != nil {
		return err
	}
	node := src.DeepCopy()
	cleanMeta(&node.ObjectMeta)
	node.Finalizers = nil
	node.Spec.ProviderID = inst.ProviderID
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == karpv1.DisruptedTaintKey || t.Key == karpv1.UnregisteredTaintKey
	})
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	if np != nil {
		node.Labels[karpv1.NodePoolLabelKey] = np.Name
		node.Labels[karpv1.NodeRegisteredLabelKey] = "true"
		node.Labels[karpv1.NodeInitializedLabelKey] = "true"
		node.Labels[karpv1.CapacityTypeLabelKey] = a.capacityType
		node.Finalizers = []string{karpv1.TerminationFinalizer}
	}
	if err := e.kube.Create(ctx, node); err != nil {
		return fmt.Errorf("creating node %s: %w", src.Name, err)
	}
	if np == nil {
		return nil
	}
	var stored karpv1.NodePool
	if err := e.kube.Get(ctx, client.ObjectKey{Name: np.Name}, &stored); err != nil {
		return fmt.Errorf("reading nodepool %s: %w", np.Name, err)
	}
	pinned := []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{np.Name}},
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{a.instanceType}},
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{a.zone}},
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{a.capacityType}},
	}
	claim := nodepool.NewNodeClaim(&stored, pinned, nil)
	claim.GenerateName, claim.Name = "", a.claim
	maps.Copy(claim.Labels, node.Labels)
	claim.Finalizers = []string{karpv1.TerminationFinalizer}
	if err := e.kube.Create(ctx, claim); err != nil {
		return fmt.Errorf("creating nodeclaim %s of node %s: %w", a.claim, src.Name, err)
	}
	claim.Status.ProviderID, claim.Status.NodeName, claim.Status.ImageID = inst.ProviderID, node.Name, inst.ImageID
	claim.Status.Capacity, claim.Status.Allocatable = src.Status.Capacity.DeepCopy(), src.Status.Allocatable.DeepCopy()
	t := metav1.NewTime(now)
	for _, typ := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized, "Ready"} {
		claim.Status.Conditions = append(claim.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: typ, LastTransitionTime: t, ObservedGeneration: claim.Generation})
	}
	if err := e.kube.Status().Update(ctx, claim); err != nil {
		return fmt.Errorf("writing the status of nodeclaim %s: %w", a.claim, err)
	}
	return nil
}
