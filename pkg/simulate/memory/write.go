package memory

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errEmptyNamespace is what controller-runtime's client returns, before any request, when a
// namespaced object without a namespace is created.
var errEmptyNamespace = errors.New("an empty namespace may not be set during creation")

// Create stores a new object, as kube-apiserver does: it requires the namespace to exist (and
// not be terminating), generates the name from metadata.generateName when the name is empty,
// sets uid, resourceVersion, creationTimestamp (from the clock, in whole seconds) and, for the
// kinds that have one, generation 1; it drops the status of kinds with a status subresource
// (except Nodes) and applies the defaults the client knows (CRD structural defaults, a Pod's
// Pending phase, QoS class and 30s termination grace period, a Namespace's Active phase).
// obj is updated with the stored object. It returns AlreadyExists when the name is taken.
func (c *Client) Create(_ context.Context, obj client.Object, opts ...client.CreateOption) error {
	info, err := c.infoFor(obj)
	if err != nil {
		return err
	}
	co := client.CreateOptions{}
	co.ApplyOptions(opts)
	next, err := toStored(info, obj)
	if err != nil {
		return err
	}
	c.mu.Lock()
	stored, err := c.createLocked(info, next, len(co.DryRun) > 0)
	c.unlockAndNotify()
	if err != nil {
		return err
	}
	return copyOut(info, stored, obj)
}

// createLocked validates and stores obj, a private copy. Callers hold mu.
func (c *Client) createLocked(info *kindInfo, obj client.Object, dryRun bool) (client.Object, error) {
	m := objectMeta(obj)
	if info.namespaced {
		if m.Namespace == "" {
			return nil, errEmptyNamespace
		}
		if err := c.checkNamespaceLocked(info, m.Namespace, m.Name, dryRun); err != nil {
			return nil, err
		}
	} else {
		m.Namespace = ""
	}
	if m.ResourceVersion != "" {
		return nil, statusError(http.StatusInternalServerError, metav1.StatusReasonUnknown, "resourceVersion should not be set on objects to be created")
	}
	ks := c.storeLocked(info)
	if m.Name == "" {
		if m.GenerateName == "" {
			return nil, apierrors.NewInvalid(info.gvk.GroupKind(), "", field.ErrorList{
				field.Required(field.NewPath("metadata", "name"), "name or generateName is required"),
			})
		}
		m.Name = c.generateNameLocked(ks, m.Namespace, m.GenerateName)
	}
	if msgs := validateName(info, m.Name); len(msgs) > 0 {
		errs := field.ErrorList{}
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), m.Name, msg))
		}
		return nil, apierrors.NewInvalid(info.gvk.GroupKind(), m.Name, errs)
	}
	key := client.ObjectKey{Namespace: m.Namespace, Name: m.Name}
	if ks.get(key) != nil {
		return nil, apierrors.NewAlreadyExists(info.gr, m.Name)
	}
	now := c.now()
	m.UID = c.newUIDLocked()
	m.CreationTimestamp = now
	m.DeletionTimestamp, m.DeletionGracePeriodSeconds = nil, nil
	m.Generation = 0
	if info.generation {
		m.Generation = 1
	}
	m.SelfLink, m.ManagedFields = "", nil
	if info.statusSubresource && !info.keepStatusOnCreate {
		info.statusOf(obj).SetZero()
	}
	createDefaults(obj, now)
	obj, err := defaulted(info, obj)
	if err != nil {
		return nil, err
	}
	if dryRun {
		return obj, nil
	}
	objectMeta(obj).ResourceVersion = c.nextRVLocked()
	c.insertLocked(ks, obj)
	return obj, nil
}

// checkNamespaceLocked refuses namespaces that are missing or terminating, as the
// NamespaceLifecycle admission plugin does (or creates a missing one with
// WithAutoCreateNamespaces).
func (c *Client) checkNamespaceLocked(info *kindInfo, namespace, name string, dryRun bool) error {
	nsInfo := c.byGVK[corev1.SchemeGroupVersion.WithKind("Namespace")]
	if nsInfo == nil {
		return nil
	}
	s := c.storeLocked(nsInfo).get(client.ObjectKey{Name: namespace})
	if s == nil {
		if c.autoNS && !dryRun {
			_, err := c.createLocked(nsInfo, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, false)
			return err
		}
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, namespace)
	}
	if s.obj.GetDeletionTimestamp() != nil {
		err := apierrors.NewForbidden(info.gr, name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", namespace))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: corev1.NamespaceTerminatingCause, Message: fmt.Sprintf("namespace %s is being terminated", namespace), Field: "metadata.namespace",
		})
		return err
	}
	return nil
}

// validateName checks a name as kube-apiserver does: custom resources and RBAC objects need a
// valid path segment, namespaces a DNS label and other built-in kinds a DNS subdomain.
func validateName(info *kindInfo, name string) []string {
	switch {
	case info.custom || info.gvk.Group == "rbac.authorization.k8s.io":
		return pathSegmentErrors(name)
	case info.gvk.Group == "" && info.gvk.Kind == "Namespace":
		return validation.IsDNS1123Label(name)
	default:
		return validation.IsDNS1123Subdomain(name)
	}
}

func pathSegmentErrors(name string) []string {
	if name == "." || name == ".." {
		return []string{fmt.Sprintf("may not be '%s'", name)}
	}
	for _, bad := range []string{"/", "%"} {
		if strings.Contains(name, bad) {
			return []string{fmt.Sprintf("may not contain '%s'", bad)}
		}
	}
	return nil
}

// createDefaults sets what kube-apiserver's create strategies and defaulting set on the
// built-in kinds whose behaviour the store models.
func createDefaults(obj client.Object, now metav1.Time) {
	switch o := obj.(type) {
	case *corev1.Pod:
		if o.Spec.TerminationGracePeriodSeconds == nil {
			grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
			o.Spec.TerminationGracePeriodSeconds = &grace
		}
		o.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: podQOS(o)}
	case *corev1.Namespace:
		if len(o.Spec.Finalizers) == 0 {
			o.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
		}
		o.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	case *corev1.PersistentVolumeClaim:
		o.Status.Phase = corev1.ClaimPending
	case *corev1.PersistentVolume:
		o.Status.Phase = corev1.VolumePending
		o.Status.LastPhaseTransitionTime = &now
	}
}

// podQOS classifies a pod's quality of service from its cpu and memory requests and limits.
func podQOS(pod *corev1.Pod) corev1.PodQOSClass {
	qos := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	type rl struct{ requests, limits corev1.ResourceList }
	var all []rl
	if pod.Spec.Resources != nil {
		all = append(all, rl{pod.Spec.Resources.Requests, pod.Spec.Resources.Limits})
	} else {
		for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for _, ctr := range cs {
				all = append(all, rl{ctr.Resources.Requests, ctr.Resources.Limits})
			}
		}
	}
	any, guaranteed := false, true
	for _, r := range all {
		for _, name := range qos {
			req, hasReq := r.requests[name]
			lim, hasLim := r.limits[name]
			if (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero()) {
				any = true
			}
			if !hasLim || lim.IsZero() || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}

// defaulted applies the kind's CRD structural defaults to obj.
func defaulted(info *kindInfo, obj client.Object) (client.Object, error) {
	if info.defaults == nil {
		return obj, nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s for defaulting: %w", info, err)
	}
	if err := applyDefaults(content, info.defaults); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out := info.newObject()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, out); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("converting defaulted %s: %w", info, err))
	}
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return out, nil
}

// Update replaces an object, as kube-apiserver does: a non-empty resourceVersion that is not
// the stored one is a Conflict; uid, creationTimestamp, deletionTimestamp and generation stay
// the server's; the status of kinds with a status subresource is kept; generation grows when
// anything but metadata and status changes; an update that changes nothing keeps the
// resourceVersion; new finalizers on an object being deleted are Invalid; and removing the last
// finalizer of an object being deleted (with no grace period pending) deletes it. obj is
// updated with the stored object (its last version when the update deleted it).
func (c *Client) Update(_ context.Context, obj client.Object, opts ...client.UpdateOption) error {
	info, err := c.infoFor(obj)
	if err != nil {
		return err
	}
	uo := client.UpdateOptions{}
	uo.ApplyOptions(opts)
	return c.update(info, obj, "", len(uo.DryRun) > 0)
}

// update is Update for the main resource (sub "") or the status subresource (sub "status").
func (c *Client) update(info *kindInfo, obj client.Object, sub string, dryRun bool) error {
	if sub == "status" && !info.statusSubresource {
		return errNoSubresource()
	}
	next, err := toStored(info, obj)
	if err != nil {
		return err
	}
	key := keyFor(info, obj)
	c.mu.Lock()
	var stored client.Object
	if ks := c.stores[info.gvk]; ks != nil {
		if s := ks.get(key); s != nil {
			stored, err = c.updateLocked(ks, s, next, sub, dryRun)
		}
	}
	c.unlockAndNotify()
	if err != nil {
		return err
	}
	if stored == nil {
		return apierrors.NewNotFound(info.gr, key.Name)
	}
	return copyOut(info, stored, obj)
}

// errNoSubresource is kube-apiserver's answer to a write to a subresource a kind lacks.
func errNoSubresource() error {
	return statusError(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
}

// statusError builds an API error with a code, reason and message.
func statusError(code int32, reason metav1.StatusReason, message string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message}}
}

// updateLocked makes next (a private copy) the new version of the object in s, for the main
// resource (sub "") or the status subresource. It returns the stored version. Callers hold mu.
func (c *Client) updateLocked(ks *kindStore, s *slot, next client.Object, sub string, dryRun bool) (client.Object, error) {
	info, cur := ks.info, s.obj
	curMeta, nextMeta := objectMeta(cur), objectMeta(next)
	if rv := nextMeta.ResourceVersion; rv != "" && rv != curMeta.ResourceVersion {
		return nil, apierrors.NewConflict(info.gr, s.key.Name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if uid := nextMeta.UID; uid != "" && uid != curMeta.UID {
		return nil, apierrors.NewConflict(info.gr, s.key.Name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, curMeta.UID))
	}
	if sub == "status" && info.statusResetsMetadata {
		// Only the status changes: everything else is the stored object's.
		out := shallowClone(cur)
		info.statusOf(out).Set(info.statusOf(next))
		next, nextMeta = out, objectMeta(out)
	} else {
		nextMeta.Namespace, nextMeta.Name = s.key.Namespace, s.key.Name
		nextMeta.UID, nextMeta.CreationTimestamp = curMeta.UID, curMeta.CreationTimestamp
		nextMeta.DeletionTimestamp, nextMeta.DeletionGracePeriodSeconds = curMeta.DeletionTimestamp, curMeta.DeletionGracePeriodSeconds
		nextMeta.Generation, nextMeta.SelfLink, nextMeta.ManagedFields = curMeta.Generation, "", nil
		if curMeta.DeletionTimestamp != nil {
			var added []string
			for _, f := range nextMeta.Finalizers {
				if !slices.Contains(curMeta.Finalizers, f) {
					added = append(added, f)
				}
			}
			if len(added) > 0 {
				// kube-apiserver validates the metadata update twice and reports both.
				forbidden := field.Forbidden(field.NewPath("metadata", "finalizers"),
					fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %#v", added))
				return nil, apierrors.NewInvalid(info.gvk.GroupKind(), s.key.Name, field.ErrorList{forbidden, forbidden})
			}
		}
		switch {
		case sub == "status":
			// Built-in status strategies keep the spec (and a few kind-specific fields) and
			// let the rest of the metadata through.
			curV, nextV := reflect.ValueOf(cur).Elem(), reflect.ValueOf(next).Elem()
			for _, i := range info.specFields {
				nextV.Field(i).Set(curV.Field(i))
			}
			switch info.gvk.GroupKind() {
			case schema.GroupKind{Kind: "Pod"}:
				nextMeta.OwnerReferences = curMeta.OwnerReferences
			case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
				nextMeta.Labels = curMeta.Labels
			}
		case info.statusSubresource:
			info.statusOf(next).Set(info.statusOf(cur))
			if ns, ok := next.(*corev1.Namespace); ok {
				// spec.finalizers change only through the finalize subresource.
				ns.Spec.Finalizers = cur.(*corev1.Namespace).Spec.Finalizers
			}
		}
		if sub == "" && info.generation && (specChanged(info, cur, next) ||
			info.annotationsBumpGeneration && !equality.Semantic.DeepEqual(curMeta.Annotations, nextMeta.Annotations)) {
			nextMeta.Generation++
		}
	}
	var err error
	if next, err = defaulted(info, next); err != nil {
		return nil, err
	}
	nextMeta = objectMeta(next)
	nextMeta.ResourceVersion = curMeta.ResourceVersion
	if unchanged(info, cur, next) {
		return cur, nil
	}
	if dryRun {
		return next, nil
	}
	return c.commitLocked(ks, s, next), nil
}

// unchanged reports whether a write leaves the object as it was (then it keeps its version). It
// compares the status first: most writes change it, and it is where they differ soonest.
func unchanged(info *kindInfo, cur, next client.Object) bool {
	if info.statusField >= 0 && !equality.Semantic.DeepEqual(info.statusOf(cur).Interface(), info.statusOf(next).Interface()) {
		return false
	}
	return equality.Semantic.DeepEqual(cur, next)
}

// specChanged reports whether anything but metadata and status differs.
func specChanged(info *kindInfo, a, b client.Object) bool {
	av, bv := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for _, i := range info.specFields {
		if !equality.Semantic.DeepEqual(av.Field(i).Interface(), bv.Field(i).Interface()) {
			return true
		}
	}
	return false
}

// commitLocked stores next as the new version of s with a new resourceVersion, or removes the
// object when the write removed the last finalizer of an object already being deleted with no
// grace period pending. It returns next. Callers hold mu.
func (c *Client) commitLocked(ks *kindStore, s *slot, next client.Object) client.Object {
	curMeta, nextMeta := objectMeta(s.obj), objectMeta(next)
	if curMeta.DeletionTimestamp != nil && len(nextMeta.Finalizers) == 0 &&
		(curMeta.DeletionGracePeriodSeconds == nil || *curMeta.DeletionGracePeriodSeconds == 0) {
		if ns, ok := next.(*corev1.Namespace); !ok || len(ns.Spec.Finalizers) == 0 {
			nextMeta.ResourceVersion = strconv.FormatUint(c.rv+1, 10) // the version removeLocked hands out
			c.removeLocked(ks, s, next)
			return next
		}
	}
	nextMeta.ResourceVersion = c.nextRVLocked()
	old := s.obj
	ks.replace(s, next)
	c.retrackOwnersLocked(ks, s, old.GetOwnerReferences(), next.GetOwnerReferences())
	c.recordLocked(watch.Modified, ks.info, s.key, next, old)
	c.noteSuspectLocked(ks, s)
	return next
}

// insertLocked adds a new object. Callers hold mu and have set its resourceVersion.
func (c *Client) insertLocked(ks *kindStore, obj client.Object) *slot {
	s := &slot{obj: obj, key: client.ObjectKey{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	ks.insert(s)
	c.retrackOwnersLocked(ks, s, nil, obj.GetOwnerReferences())
	if ks.info.namespaced {
		c.nsObjects[s.key.Namespace]++
	}
	c.recordLocked(watch.Added, ks.info, s.key, obj, nil)
	c.noteSuspectLocked(ks, s)
	return s
}

// removeLocked drops the object in s (whose last version is final) and lets the garbage
// collector and the namespace controller react at once: dependents whose owners are all gone
// are deleted, owners waiting in foreground deletion are finished, and an empty terminating
// namespace is removed. Callers hold mu.
func (c *Client) removeLocked(ks *kindStore, s *slot, final client.Object) {
	if ks.get(s.key) != s {
		return
	}
	ks.remove(s)
	delete(c.suspects, s)
	c.retrackOwnersLocked(ks, s, s.obj.GetOwnerReferences(), nil)
	c.retrackOwnersLocked(ks, s, final.GetOwnerReferences(), nil)
	c.rv++
	c.recordLocked(watch.Deleted, ks.info, s.key, final, nil)
	if ks.info.namespaced {
		if c.nsObjects[s.key.Namespace]--; c.nsObjects[s.key.Namespace] <= 0 {
			delete(c.nsObjects, s.key.Namespace)
		}
	}
	c.afterRemoveLocked(ks, s.key, final)
}

// retrackOwnersLocked updates the owner index for a change of s's ownerReferences.
func (c *Client) retrackOwnersLocked(ks *kindStore, s *slot, old, next []metav1.OwnerReference) {
	if len(old) == 0 && len(next) == 0 {
		return
	}
	for _, ref := range old {
		if !slices.ContainsFunc(next, func(r metav1.OwnerReference) bool { return r.UID == ref.UID }) {
			if deps := c.dependents[ref.UID]; deps != nil {
				delete(deps, s)
				if len(deps) == 0 {
					delete(c.dependents, ref.UID)
				}
			}
		}
	}
	for _, ref := range next {
		deps := c.dependents[ref.UID]
		if deps == nil {
			deps = map[*slot]*kindStore{}
			c.dependents[ref.UID] = deps
		}
		deps[s] = ks
	}
}

// Patch applies a JSON merge patch (client.MergeFrom, client.RawPatch with
// types.MergePatchType), a JSON patch or, for built-in kinds, a strategic merge patch
// (client.StrategicMergeFrom) to the stored object, then stores the result with Update's
// rules; a patch carrying a resourceVersion (client.MergeFromWithOptimisticLock) conflicts when
// it is stale. Server-side apply is not supported. obj is updated with the stored object.
func (c *Client) Patch(_ context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	info, err := c.infoFor(obj)
	if err != nil {
		return err
	}
	po := client.PatchOptions{}
	po.ApplyOptions(opts)
	return c.patch(info, obj, patch, "", len(po.DryRun) > 0)
}

// patch is Patch for the main resource (sub "") or the status subresource.
func (c *Client) patch(info *kindInfo, obj client.Object, patch client.Patch, sub string, dryRun bool) error {
	if sub == "status" && !info.statusSubresource {
		return errNoSubresource()
	}
	typed, isTyped := patch.(TypedMergePatch)
	isTyped = isTyped && patch.Type() == types.MergePatchType
	var data []byte
	var err error
	if !isTyped {
		if data, err = patch.Data(obj); err != nil {
			return fmt.Errorf("computing the patch: %w", err)
		}
	}
	if err = checkPatchType(info, patch.Type()); err != nil {
		return err
	}
	key := keyFor(info, obj)
	c.mu.Lock()
	var stored client.Object
	if ks := c.stores[info.gvk]; ks != nil {
		if s := ks.get(key); s != nil {
			var next client.Object
			if isTyped {
				next = shallowClone(s.obj)
				err = typed.ApplyTo(next)
			} else {
				next, err = applyPatch(info, s.obj, patch.Type(), data)
			}
			if err == nil {
				if next.GetName() != key.Name || (info.namespaced && next.GetNamespace() != key.Namespace) {
					err = apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", next.GetName(), key.Name))
				} else {
					stored, err = c.updateLocked(ks, s, next, sub, dryRun)
				}
			}
		}
	}
	c.unlockAndNotify()
	if err != nil {
		return err
	}
	if stored == nil {
		return apierrors.NewNotFound(info.gr, key.Name)
	}
	return copyOut(info, stored, obj)
}

// TypedMergePatch is a JSON merge patch that can also make its change to the typed object. The
// store applies it through ApplyTo, without encoding or decoding JSON; kube-apiserver (or any
// other client) is sent its Data. ApplyTo is given a copy of the stored object whose fields
// other than its ObjectMeta are shared with the stored one: it must assign new values, never
// change shared ones in place, and leave obj exactly as applying Data would.
type TypedMergePatch interface {
	client.Patch
	ApplyTo(obj client.Object) error
}

// Apply is server-side apply, which the store does not support: it always fails.
func (c *Client) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return apierrors.NewMethodNotSupported(schema.GroupResource{}, "server-side apply")
}

// Delete deletes an object, as kube-apiserver does. An object with finalizers (including the
// orphan or foregroundDeletion finalizer that PropagationPolicy Orphan or Foreground adds) is
// kept with deletionTimestamp set from the clock; a Pod bound to a node and neither Succeeded
// nor Failed is deleted gracefully: kept with deletionTimestamp now+grace period (the
// GracePeriodSeconds option, else its terminationGracePeriodSeconds) until CollectGarbage finds
// the period over, as its kubelet would. Anything else is removed at once, and the garbage
// collector runs synchronously: dependents whose every owner is gone are deleted (Background),
// foreground deletion deletes the dependents first, orphaning removes the ownerReferences.
// Preconditions that do not hold are a Conflict; a missing object is NotFound.
func (c *Client) Delete(_ context.Context, obj client.Object, opts ...client.DeleteOption) error {
	info, err := c.infoFor(obj)
	if err != nil {
		return err
	}
	do := client.DeleteOptions{}
	do.ApplyOptions(opts)
	key := keyFor(info, obj)
	c.mu.Lock()
	found := false
	if ks := c.stores[info.gvk]; ks != nil {
		if s := ks.get(key); s != nil {
			found = true
			err = c.deleteLocked(ks, s, deleteOptions(&do))
		}
	}
	c.unlockAndNotify()
	if err != nil {
		return err
	}
	if !found {
		return apierrors.NewNotFound(info.gr, key.Name)
	}
	return nil
}

// deleteOpts are the delete options the store honours.
type deleteOpts struct {
	grace         *int64
	propagation   *metav1.DeletionPropagation
	preconditions *metav1.Preconditions
	dryRun        bool
}

func deleteOptions(do *client.DeleteOptions) deleteOpts {
	o := deleteOpts{grace: do.GracePeriodSeconds, propagation: do.PropagationPolicy, preconditions: do.Preconditions, dryRun: len(do.DryRun) > 0}
	if raw := do.Raw; raw != nil {
		if o.grace == nil {
			o.grace = raw.GracePeriodSeconds
		}
		if o.propagation == nil {
			o.propagation = raw.PropagationPolicy
			if o.propagation == nil && raw.OrphanDependents != nil {
				p := metav1.DeletePropagationBackground
				if *raw.OrphanDependents {
					p = metav1.DeletePropagationOrphan
				}
				o.propagation = &p
			}
		}
		if o.preconditions == nil {
			o.preconditions = raw.Preconditions
		}
		if len(raw.DryRun) > 0 {
			o.dryRun = true
		}
	}
	return o
}

// deleteLocked deletes the object in s. Callers hold mu.
func (c *Client) deleteLocked(ks *kindStore, s *slot, o deleteOpts) error {
	info, cur := ks.info, s.obj
	m := objectMeta(cur)
	if p := o.preconditions; p != nil {
		if p.UID != nil && *p.UID != m.UID {
			return apierrors.NewConflict(info.gr, s.key.Name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.UID))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != m.ResourceVersion {
			return apierrors.NewConflict(info.gr, s.key.Name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.ResourceVersion))
		}
	}
	if o.dryRun {
		return nil
	}
	if m.DeletionTimestamp != nil {
		return c.redeleteLocked(ks, s, o)
	}
	grace := gracePeriod(cur, o.grace)
	finalizers := slices.Clone(m.Finalizers)
	policy := metav1.DeletePropagationBackground
	if slices.Contains(finalizers, metav1.FinalizerOrphanDependents) {
		policy = metav1.DeletePropagationOrphan
	}
	if o.propagation != nil {
		policy = *o.propagation
	}
	switch policy {
	case metav1.DeletePropagationOrphan:
		finalizers = withFinalizer(finalizers, metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents)
	case metav1.DeletePropagationForeground:
		finalizers = withFinalizer(finalizers, metav1.FinalizerDeleteDependents, metav1.FinalizerOrphanDependents)
	default:
		finalizers = slices.DeleteFunc(finalizers, func(f string) bool {
			return f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents
		})
	}
	ns, isNamespace := cur.(*corev1.Namespace)
	if grace == 0 && len(finalizers) == 0 && !(isNamespace && len(ns.Spec.Finalizers) > 0) {
		c.removeLocked(ks, s, cur)
		return nil
	}
	next := shallowClone(cur)
	nm := objectMeta(next)
	dt := metav1.NewTime(c.now().Add(time.Duration(grace) * time.Second))
	nm.DeletionTimestamp, nm.DeletionGracePeriodSeconds, nm.Finalizers = &dt, &grace, finalizers
	if nm.Generation > 0 {
		nm.Generation++
	}
	if isNamespace {
		terminating := *next.(*corev1.Namespace)
		terminating.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}
		next = &terminating
	}
	c.commitLocked(ks, s, next)
	switch {
	case isNamespace:
		c.drainNamespaceLocked(s.key.Name)
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		c.orphanLocked(ks, s)
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		c.foregroundLocked(ks, s)
	}
	return nil
}

// redeleteLocked deletes an object already being deleted: without a pending grace period it is
// removed when no finalizers remain; with one, only a shorter grace period changes anything.
func (c *Client) redeleteLocked(ks *kindStore, s *slot, o deleteOpts) error {
	m := objectMeta(s.obj)
	pending := m.DeletionGracePeriodSeconds
	if pending == nil || *pending == 0 {
		if len(m.Finalizers) == 0 {
			if ns, ok := s.obj.(*corev1.Namespace); !ok || len(ns.Spec.Finalizers) == 0 {
				c.removeLocked(ks, s, s.obj)
			}
		}
		return nil
	}
	if o.grace == nil || *o.grace >= *pending {
		return nil
	}
	grace := max(*o.grace, 0)
	next := shallowClone(s.obj)
	nm := objectMeta(next)
	dt := metav1.NewTime(m.DeletionTimestamp.Add(time.Duration(grace-*pending) * time.Second))
	nm.DeletionTimestamp, nm.DeletionGracePeriodSeconds = &dt, &grace
	if grace == 0 && len(nm.Finalizers) == 0 {
		c.removeLocked(ks, s, next)
		return nil
	}
	c.commitLocked(ks, s, next)
	return nil
}

// gracePeriod is the grace period of deleting obj: for a Pod, the requested one, else its
// terminationGracePeriodSeconds, and zero when it is not bound to a node or has finished; zero
// for every other kind.
func gracePeriod(obj client.Object, requested *int64) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0
	}
	var grace int64
	switch {
	case requested != nil:
		grace = *requested
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if grace < 0 {
		grace = 1
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		grace = 0
	}
	return grace
}

// withFinalizer returns finalizers with add and without remove.
func withFinalizer(finalizers []string, add, remove string) []string {
	finalizers = slices.DeleteFunc(finalizers, func(f string) bool { return f == remove })
	if !slices.Contains(finalizers, add) {
		finalizers = append(finalizers, add)
	}
	return finalizers
}

// DeleteAllOf deletes, as Delete does, every object of obj's kind matching the options'
// namespace and label and field selectors.
func (c *Client) DeleteAllOf(_ context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	info, err := c.infoFor(obj)
	if err != nil {
		return err
	}
	dao := client.DeleteAllOfOptions{}
	dao.ApplyOptions(opts)
	c.mu.Lock()
	if ks := c.stores[info.gvk]; ks != nil {
		var slots []*slot
		if slots, err = c.selectLocked(ks, dao.Namespace, dao.LabelSelector, dao.FieldSelector); err == nil {
			o := deleteOptions(&dao.DeleteOptions)
			for _, s := range slots {
				if ks.get(s.key) != s {
					continue // removed by an earlier deletion's garbage collection
				}
				if err = c.deleteLocked(ks, s, o); err != nil {
					break
				}
			}
		}
	}
	c.unlockAndNotify()
	return err
}

// hasFinalizer reports whether obj lists finalizer.
func hasFinalizer(obj client.Object, finalizer string) bool {
	return slices.Contains(obj.GetFinalizers(), finalizer)
}
