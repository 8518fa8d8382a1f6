package memory

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/openkarpenter/karpenter/config/crd"
)

// Client is an in-memory API server behind controller-runtime's client.Client: the embedded
// cluster of `karpenter simulate`. It is safe for concurrent use. Create it with New.
type Client struct {
	scheme     *runtime.Scheme
	clock      clock.PassiveClock
	mapper     meta.RESTMapper
	byGVK      map[schema.GroupVersionKind]*kindInfo
	byType     map[reflect.Type]*kindInfo
	byListType map[reflect.Type]*kindInfo
	autoNS     bool

	// mu guards everything below. Stored objects are never modified once stored, so readers
	// copy them after releasing the lock.
	mu     sync.RWMutex
	rv     uint64
	stores map[schema.GroupVersionKind]*kindStore
	// dependents maps an owner's UID to the objects whose ownerReferences name it.
	dependents map[types.UID]map[*slot]*kindStore
	// nsObjects counts the namespaced objects of each namespace.
	nsObjects map[string]int
	// suspects are the objects CollectGarbage must look at: those whose owners were missing
	// when written, pods in graceful deletion, pods bound to missing nodes.
	suspects map[*slot]*kindStore
	// groupVersions caches parsed ownerReference apiVersions.
	groupVersions map[string]schema.GroupVersion
	names         *rand.Rand
	uids          *rand.Rand
	// pending are the changes of the write in progress, delivered once mu is released.
	pending  []Change
	hooks    []hook
	nextHook int
	events   map[eventKey]client.ObjectKey
}

var (
	_ client.Client       = (*Client)(nil)
	_ client.FieldIndexer = (*Client)(nil)
)

// Option configures New.
type Option func(*options)

type options struct {
	seed   uint64
	crds   []*apiextensionsv1.CustomResourceDefinition
	autoNS bool
}

// WithSeed seeds the generated names (generateName suffixes) and UIDs; two clients with the same
// seed that receive the same calls produce the same objects. The default seed is 0.
func WithSeed(seed uint64) Option { return func(o *options) { o.seed = seed } }

// WithCustomResourceDefinitions tells the client about CRDs beyond the project's own (which it
// always knows): their scope, whether they have a status subresource and their structural
// defaults.
func WithCustomResourceDefinitions(crds ...*apiextensionsv1.CustomResourceDefinition) Option {
	return func(o *options) { o.crds = append(o.crds, crds...) }
}

// WithAutoCreateNamespaces makes Create of an object in a namespace that does not exist create
// the namespace first, where kube-apiserver would refuse with NotFound.
func WithAutoCreateNamespaces() Option { return func(o *options) { o.autoNS = true } }

// projectCRDs are the project's CRDs, parsed once.
var projectCRDs = sync.OnceValues(crd.All)

// New returns an empty cluster holding the objects of every kind scheme registers, reading time
// from clk. Like kube-apiserver it starts with the namespaces default, kube-node-lease,
// kube-public and kube-system. It panics when the project's embedded CRDs cannot be parsed.
func New(scheme *runtime.Scheme, clk clock.PassiveClock, opts ...Option) *Client {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	crds, err := projectCRDs()
	if err != nil {
		panic(fmt.Sprintf("memory: parsing the project's CRDs: %v", err))
	}
	byGVK, byType := buildKinds(scheme, crdInfos(append(slices.Clone(crds), o.crds...)))
	c := &Client{
		scheme:        scheme,
		clock:         clk,
		byGVK:         byGVK,
		byType:        byType,
		byListType:    map[reflect.Type]*kindInfo{},
		autoNS:        o.autoNS,
		stores:        map[schema.GroupVersionKind]*kindStore{},
		dependents:    map[types.UID]map[*slot]*kindStore{},
		nsObjects:     map[string]int{},
		suspects:      map[*slot]*kindStore{},
		groupVersions: map[string]schema.GroupVersion{},
		names:         rand.New(rand.NewPCG(o.seed, 0x6e616d6573)),
		uids:          rand.New(rand.NewPCG(o.seed, 0x75696473)),
		events:        map[eventKey]client.ObjectKey{},
	}
	for gvk, info := range byGVK {
		if list, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List")); err == nil {
			c.byListType[reflect.TypeOf(list).Elem()] = info
		}
	}
	c.mapper = newRESTMapper(scheme, byGVK)
	if info := byGVK[corev1.SchemeGroupVersion.WithKind("Namespace")]; info != nil {
		c.mu.Lock()
		for _, name := range []string{metav1.NamespaceDefault, corev1.NamespaceNodeLease, metav1.NamespacePublic, metav1.NamespaceSystem} {
			if _, err := c.createLocked(info, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, false); err != nil {
				panic(fmt.Sprintf("memory: creating namespace %s: %v", name, err))
			}
		}
		c.mu.Unlock()
	}
	return c
}

// newRESTMapper maps every kind of the store to its resource and scope.
func newRESTMapper(scheme *runtime.Scheme, kinds map[schema.GroupVersionKind]*kindInfo) meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(scheme.PrioritizedVersionsAllGroups())
	gvks := make([]schema.GroupVersionKind, 0, len(kinds))
	for gvk := range kinds {
		gvks = append(gvks, gvk)
	}
	slices.SortFunc(gvks, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	for _, gvk := range gvks {
		info := kinds[gvk]
		scope := meta.RESTScopeRoot
		if info.namespaced {
			scope = meta.RESTScopeNamespace
		}
		m.AddSpecific(gvk, gvk.GroupVersion().WithResource(info.gr.Resource), gvk.GroupVersion().WithResource(info.singular), scope)
	}
	return m
}

// Scheme returns the scheme the client was built with.
func (c *Client) Scheme() *runtime.Scheme { return c.scheme }

// RESTMapper returns a mapper between every kind of the scheme and its resource and scope.
func (c *Client) RESTMapper() meta.RESTMapper { return c.mapper }

// GroupVersionKindFor returns the group, version and kind of obj.
func (c *Client) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return apiutil.GVKForObject(obj, c.scheme)
}

// IsObjectNamespaced reports whether objects of obj's kind live in namespaces.
func (c *Client) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	info, err := c.infoFor(obj)
	if err != nil {
		return false, err
	}
	return info.namespaced, nil
}

// ResourceVersion returns the latest resource version the store handed out; every write
// increases it by one.
func (c *Client) ResourceVersion() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rv
}

// infoFor finds the kind of a typed, unstructured or metadata-only object.
func (c *Client) infoFor(obj runtime.Object) (*kindInfo, error) {
	switch obj.(type) {
	case *unstructured.Unstructured, *metav1.PartialObjectMetadata:
		gvk := obj.GetObjectKind().GroupVersionKind()
		if info := c.byGVK[gvk]; info != nil {
			return info, nil
		}
		return nil, runtime.NewNotRegisteredErrForKind(c.scheme.Name(), gvk)
	}
	typ := reflect.TypeOf(obj)
	if typ.Kind() == reflect.Pointer {
		if info := c.byType[typ.Elem()]; info != nil {
			return info, nil
		}
	}
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return nil, err
	}
	if info := c.byGVK[gvk]; info != nil {
		return info, nil
	}
	return nil, runtime.NewNotRegisteredErrForKind(c.scheme.Name(), gvk)
}

// listInfo finds the item kind of a list.
func (c *Client) listInfo(list client.ObjectList) (*kindInfo, error) {
	switch list.(type) {
	case *unstructured.UnstructuredList, *metav1.PartialObjectMetadataList:
		gvk := list.GetObjectKind().GroupVersionKind()
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
		if info := c.byGVK[gvk]; info != nil {
			return info, nil
		}
		return nil, runtime.NewNotRegisteredErrForKind(c.scheme.Name(), gvk)
	}
	if typ := reflect.TypeOf(list); typ.Kind() == reflect.Pointer {
		if info := c.byListType[typ.Elem()]; info != nil {
			return info, nil
		}
	}
	gvk, err := apiutil.GVKForObject(list, c.scheme)
	if err != nil {
		return nil, err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	if info := c.byGVK[gvk]; info != nil {
		return info, nil
	}
	return nil, runtime.NewNotRegisteredErrForKind(c.scheme.Name(), gvk)
}

// storeLocked returns the kind's store, creating it on first use. Callers hold mu for writing.
func (c *Client) storeLocked(info *kindInfo) *kindStore {
	ks := c.stores[info.gvk]
	if ks == nil {
		ks = newKindStore(info)
		c.stores[info.gvk] = ks
	}
	return ks
}

// keyFor returns obj's key, without a namespace for cluster-scoped kinds.
func keyFor(info *kindInfo, obj client.Object) client.ObjectKey {
	key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if !info.namespaced {
		key.Namespace = ""
	}
	return key
}

// now returns the clock's time as kube-apiserver stores timestamps: whole seconds.
func (c *Client) now() metav1.Time {
	return metav1.NewTime(c.clock.Now().Truncate(time.Second).Local())
}

// nextRVLocked hands out the next resource version.
func (c *Client) nextRVLocked() string {
	c.rv++
	return strconv.FormatUint(c.rv, 10)
}

// nameAlphabet is the alphabet of kube-apiserver's generated name suffixes (no vowels, no
// look-alike characters).
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// generateNameLocked returns prefix plus a 5-character random suffix not yet taken in the
// namespace, as kube-apiserver does for metadata.generateName, from the seeded generator.
func (c *Client) generateNameLocked(ks *kindStore, namespace, prefix string) string {
	const maxPrefix = 63 - 5
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	var suffix [5]byte
	for {
		for i := range suffix {
			suffix[i] = nameAlphabet[c.names.IntN(len(nameAlphabet))]
		}
		name := prefix + string(suffix[:])
		if ks.get(client.ObjectKey{Namespace: namespace, Name: name}) == nil {
			return name
		}
	}
}

// newUIDLocked returns a random (version 4 format) UID from the seeded generator.
func (c *Client) newUIDLocked() types.UID {
	hi, lo := c.uids.Uint64(), c.uids.Uint64()
	hi = hi&^0xf000 | 0x4000
	lo = lo&^(0xc<<60) | 0x8<<60
	return types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", hi>>32, hi>>16&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff))
}

// Change is one write to the store, as a watch would report it.
type Change struct {
	// Type is watch.Added, watch.Modified or watch.Deleted.
	Type watch.EventType
	// GVK is the object's kind.
	GVK schema.GroupVersionKind
	// Key is the object's namespace and name.
	Key client.ObjectKey
	// ResourceVersion orders changes; it is the store's resource version after the write.
	ResourceVersion uint64
	// Object is the object after the change (for Deleted, its last version). It is the
	// store's own copy: read it, never modify it (DeepCopy first).
	Object client.Object
	// Old is the previous version for Modified, nil otherwise; read-only like Object.
	Old client.Object
}

type hook struct {
	id int
	fn func(Change)
}

// OnChange calls fn after every write with each object it added, modified or deleted (a
// write may change several objects, as a deletion cascading to dependents does), in order.
// fn runs on the writing goroutine after the store's lock is released, so it may call the
// client; with concurrent writers, calls may interleave. The returned function unsubscribes.
func (c *Client) OnChange(fn func(Change)) (cancel func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextHook++
	id := c.nextHook
	c.hooks = append(slices.Clip(c.hooks), hook{id: id, fn: fn})
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.hooks = slices.DeleteFunc(slices.Clone(c.hooks), func(h hook) bool { return h.id == id })
	}
}

// recordLocked notes a change for the hooks.
func (c *Client) recordLocked(t watch.EventType, info *kindInfo, key client.ObjectKey, obj, old client.Object) {
	if len(c.hooks) == 0 {
		return
	}
	c.pending = append(c.pending, Change{Type: t, GVK: info.gvk, Key: key, ResourceVersion: c.rv, Object: obj, Old: old})
}

// unlockAndNotify releases mu and delivers the pending changes.
func (c *Client) unlockAndNotify() {
	changes, hooks := c.pending, c.hooks
	c.pending = nil
	c.mu.Unlock()
	for _, ch := range changes {
		for _, h := range hooks {
			h.fn(ch)
		}
	}
}
