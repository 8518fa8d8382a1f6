package memory

import (
	"cmp"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// slot holds the current version of one stored object. Its address is stable for the
// object's lifetime, so indexes and sorted listings point at slots and survive updates.
type slot struct {
	// obj is the current version; it is never modified, only replaced.
	obj client.Object
	key client.ObjectKey
	// indexed are the values each field index holds for obj, by field.
	indexed map[string][]string
}

// bucket holds one kind's objects in one namespace ("" for cluster-scoped kinds).
type bucket struct {
	byName map[string]*slot
	// sorted orders the slots by name, for deterministic listings.
	sorted []*slot
}

// fieldIndex maps the values an extractor returns to the slots holding them.
type fieldIndex struct {
	extract client.IndexerFunc
	// builtin marks the indexes the store keeps on its own; a caller's IndexField replaces them.
	builtin bool
	values  map[string]map[*slot]struct{}
}

// kindStore holds every object of one kind.
type kindStore struct {
	info    *kindInfo
	buckets map[string]*bucket
	// namespaces sorts the keys of buckets.
	namespaces []string
	count      int
	indexes    map[string]*fieldIndex
}

func newKindStore(info *kindInfo) *kindStore {
	ks := &kindStore{info: info, buckets: map[string]*bucket{}, indexes: map[string]*fieldIndex{}}
	for field, extract := range builtinIndexes[info.gvk.GroupKind()] {
		ks.indexes[field] = &fieldIndex{extract: extract, builtin: true, values: map[string]map[*slot]struct{}{}}
	}
	return ks
}

// get returns the slot of key, or nil.
func (ks *kindStore) get(key client.ObjectKey) *slot {
	b := ks.buckets[key.Namespace]
	if b == nil {
		return nil
	}
	return b.byName[key.Name]
}

// insert adds a new slot.
func (ks *kindStore) insert(s *slot) {
	b := ks.buckets[s.key.Namespace]
	if b == nil {
		b = &bucket{byName: map[string]*slot{}}
		ks.buckets[s.key.Namespace] = b
		i, _ := slices.BinarySearchFunc(ks.namespaces, s.key.Namespace, compareNamespaces)
		ks.namespaces = slices.Insert(ks.namespaces, i, s.key.Namespace)
	}
	b.byName[s.key.Name] = s
	i, _ := slices.BinarySearchFunc(b.sorted, s.key.Name, func(e *slot, name string) int { return strings.Compare(e.key.Name, name) })
	b.sorted = slices.Insert(b.sorted, i, s)
	ks.count++
	ks.index(s)
}

// remove drops a slot.
func (ks *kindStore) remove(s *slot) {
	ks.unindex(s)
	b := ks.buckets[s.key.Namespace]
	delete(b.byName, s.key.Name)
	if i, ok := slices.BinarySearchFunc(b.sorted, s.key.Name, func(e *slot, name string) int { return strings.Compare(e.key.Name, name) }); ok {
		b.sorted = slices.Delete(b.sorted, i, i+1)
	}
	if len(b.byName) == 0 {
		delete(ks.buckets, s.key.Namespace)
		if i, ok := slices.BinarySearchFunc(ks.namespaces, s.key.Namespace, compareNamespaces); ok {
			ks.namespaces = slices.Delete(ks.namespaces, i, i+1)
		}
	}
	ks.count--
}

// replace makes obj the slot's current version.
func (ks *kindStore) replace(s *slot, obj client.Object) {
	ks.unindex(s)
	s.obj = obj
	ks.index(s)
}

// index records the slot's field values in every index.
func (ks *kindStore) index(s *slot) {
	if len(ks.indexes) == 0 {
		return
	}
	if s.indexed == nil {
		s.indexed = make(map[string][]string, len(ks.indexes))
	}
	for field, idx := range ks.indexes {
		values := idx.extract(s.obj)
		s.indexed[field] = values
		for _, v := range values {
			set := idx.values[v]
			if set == nil {
				set = map[*slot]struct{}{}
				idx.values[v] = set
			}
			set[s] = struct{}{}
		}
	}
}

// unindex forgets the slot's field values.
func (ks *kindStore) unindex(s *slot) {
	for field, values := range s.indexed {
		idx := ks.indexes[field]
		if idx == nil {
			continue
		}
		for _, v := range values {
			if set := idx.values[v]; set != nil {
				delete(set, s)
				if len(set) == 0 {
					delete(idx.values, v)
				}
			}
		}
		delete(s.indexed, field)
	}
}

// addIndex installs an index on field and indexes the stored objects.
func (ks *kindStore) addIndex(field string, extract client.IndexerFunc) {
	if old := ks.indexes[field]; old != nil {
		ks.each("", func(s *slot) bool {
			for _, v := range s.indexed[field] {
				delete(old.values[v], s)
			}
			delete(s.indexed, field)
			return true
		})
	}
	idx := &fieldIndex{extract: extract, values: map[string]map[*slot]struct{}{}}
	ks.indexes[field] = idx
	ks.each("", func(s *slot) bool {
		if s.indexed == nil {
			s.indexed = map[string][]string{}
		}
		values := extract(s.obj)
		s.indexed[field] = values
		for _, v := range values {
			set := idx.values[v]
			if set == nil {
				set = map[*slot]struct{}{}
				idx.values[v] = set
			}
			set[s] = struct{}{}
		}
		return true
	})
}

// each calls fn with the slots of namespace (every namespace when ""; ignored for
// cluster-scoped kinds), in namespace and name order, until fn returns false.
func (ks *kindStore) each(namespace string, fn func(*slot) bool) {
	if !ks.info.namespaced {
		namespace = ""
	}
	if namespace != "" || !ks.info.namespaced {
		if b := ks.buckets[namespace]; b != nil {
			for _, s := range b.sorted {
				if !fn(s) {
					return
				}
			}
		}
		return
	}
	for _, ns := range ks.namespaces {
		for _, s := range ks.buckets[ns].sorted {
			if !fn(s) {
				return
			}
		}
	}
}

// compareKeys orders keys as etcd orders kube-apiserver's keys ("<namespace>/<name>"), which
// is the order of List results.
func compareKeys(a, b client.ObjectKey) int {
	if c := compareNamespaces(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// compareNamespaces compares a+"/" with b+"/" without building them: "ns-other" sorts before
// "ns" followed by a slash.
func compareNamespaces(a, b string) int {
	n := min(len(a), len(b))
	if c := strings.Compare(a[:n], b[:n]); c != 0 {
		return c
	}
	switch {
	case len(a) == len(b):
		return 0
	case len(a) < len(b):
		return cmp.Compare('/', b[n])
	default:
		return cmp.Compare(a[n], '/')
	}
}

// sortSlots orders slots as List returns them.
func sortSlots(slots []*slot) {
	slices.SortFunc(slots, func(a, b *slot) int { return compareKeys(a.key, b.key) })
}
