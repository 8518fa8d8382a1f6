package memory

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Get copies the object named key into obj (typed, unstructured or metadata-only). It returns a
// NotFound error when there is none. client.UnsafeDisableDeepCopy makes a typed obj share
// memory with the store: the caller must not modify what it points at.
func (c *Client) Get(_ context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	info, err := c.infoFor(obj)
	if err != nil {
		return err
	}
	if !info.namespaced {
		key.Namespace = ""
	}
	var cur client.Object
	c.mu.RLock()
	if ks := c.stores[info.gvk]; ks != nil {
		if s := ks.get(key); s != nil {
			cur = s.obj
		}
	}
	c.mu.RUnlock()
	if cur == nil {
		return apierrors.NewNotFound(info.gr, key.Name)
	}
	getOpts := client.GetOptions{}
	getOpts.ApplyOptions(opts)
	if getOpts.UnsafeDisableDeepCopy != nil && *getOpts.UnsafeDisableDeepCopy && reflect.TypeOf(obj).Elem() == info.typ {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(cur).Elem())
		return nil
	}
	return copyOut(info, cur, obj)
}

// List copies into list the objects of its item kind that match opts: namespace, label
// selector, field selector (metadata.name, metadata.namespace, the built-in field selectors
// kube-apiserver supports and any field registered with IndexField), Limit and Continue.
// Items come sorted by namespace and name. An unsupported field selector is a BadRequest error.
func (c *Client) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	info, err := c.listInfo(list)
	if err != nil {
		return err
	}
	lo := client.ListOptions{}
	lo.ApplyOptions(opts)
	start, err := decodeContinue(lo.Continue)
	if err != nil {
		return err
	}
	c.mu.RLock()
	rv := c.rv
	ks := c.stores[info.gvk]
	if ks == nil {
		ks = newKindStore(info)
	}
	slots, err := c.selectLocked(ks, lo.Namespace, lo.LabelSelector, lo.FieldSelector)
	objs := make([]client.Object, 0, len(slots))
	var next string
	for _, s := range slots {
		if start != nil && compareKeys(s.key, *start) <= 0 {
			continue
		}
		if lo.Limit > 0 && int64(len(objs)) == lo.Limit {
			next = encodeContinue(objs[len(objs)-1])
			break
		}
		objs = append(objs, s.obj)
	}
	c.mu.RUnlock()
	if err != nil {
		return err
	}
	deep := lo.UnsafeDisableDeepCopy == nil || !*lo.UnsafeDisableDeepCopy
	if err := fillList(info, list, objs, deep); err != nil {
		return err
	}
	list.SetResourceVersion(strconv.FormatUint(rv, 10))
	list.SetContinue(next)
	return nil
}

// Range calls fn with each stored object of list's item kind that opts select (namespace,
// label and field selectors, as List), in List's order, without copying it, until fn returns
// false. The objects are the store's: fn must not modify them. It may keep them, since the store
// never changes an object once stored (a write stores a new version). list only names the
// kind; it is left unchanged. Limit and Continue are refused: Range does not page.
func (c *Client) Range(list client.ObjectList, fn func(client.Object) bool, opts ...client.ListOption) error {
	info, err := c.listInfo(list)
	if err != nil {
		return err
	}
	lo := client.ListOptions{}
	lo.ApplyOptions(opts)
	if lo.Limit > 0 || lo.Continue != "" {
		return apierrors.NewBadRequest("memory.Client.Range does not page: drop Limit and Continue, or use List")
	}
	c.mu.RLock()
	ks := c.stores[info.gvk]
	if ks == nil {
		ks = newKindStore(info)
	}
	slots, err := c.selectLocked(ks, lo.Namespace, lo.LabelSelector, lo.FieldSelector)
	objs := make([]client.Object, len(slots))
	for i, s := range slots {
		objs[i] = s.obj
	}
	c.mu.RUnlock()
	if err != nil {
		return err
	}
	for _, o := range objs {
		if !fn(o) {
			break
		}
	}
	return nil
}

// selectLocked returns the slots of ks in namespace (all when "") matching both selectors, in
// namespace and name order. Callers hold mu.
func (c *Client) selectLocked(ks *kindStore, namespace string, ls labels.Selector, fs fields.Selector) ([]*slot, error) {
	fm, err := newFieldMatcher(ks, fs)
	if err != nil {
		return nil, err
	}
	if !ks.info.namespaced {
		namespace = ""
	}
	if ls != nil && ls.Empty() {
		ls = nil
	}
	match := func(s *slot) bool {
		if namespace != "" && s.key.Namespace != namespace {
			return false
		}
		if ls != nil && !ls.Matches(labels.Set(s.obj.GetLabels())) {
			return false
		}
		return fm.matches(s)
	}
	if candidates, ok := fm.candidates(namespace); ok {
		if namespace == "" && ls == nil && !fm.needsMatching() {
			return candidates, nil
		}
		out := candidates[:0]
		for _, s := range candidates {
			if match(s) {
				out = append(out, s)
			}
		}
		return out, nil
	}
	var out []*slot
	ks.each(namespace, func(s *slot) bool {
		if match(s) {
			out = append(out, s)
		}
		return true
	})
	return out, nil
}

// encodeContinue makes the continue token that resumes a listing after obj.
func encodeContinue(obj client.Object) string {
	return base64.RawURLEncoding.EncodeToString([]byte(obj.GetNamespace() + "/" + obj.GetName()))
}

// decodeContinue reads a continue token; nil means from the start.
func decodeContinue(token string) (*client.ObjectKey, error) {
	if token == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	ns, name, ok := strings.Cut(string(raw), "/")
	if err != nil || !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token %q", token))
	}
	return &client.ObjectKey{Namespace: ns, Name: name}, nil
}

// IndexField registers an index on field for obj's kind, as controller-runtime's cache does:
// afterwards List accepts client.MatchingFields{field: value} (and field selectors on field)
// for that kind, matching objects for which extract returns value. Registering a field twice
// for a kind is an error, unless it replaces one of the store's built-in indexes.
func (c *Client) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	info, err := c.infoFor(obj)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ks := c.storeLocked(info)
	if idx := ks.indexes[field]; idx != nil && !idx.builtin {
		return fmt.Errorf("indexer conflict: field %q is already indexed for %s", field, info)
	}
	ks.addIndex(field, extract)
	return nil
}
