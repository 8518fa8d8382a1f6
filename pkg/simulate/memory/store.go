package memory

import (
	"cmp"
	"slices"
	"strings"

	"github.com/google/btree"
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
	// sorted orders the slots by name, for deterministic listings; a B-tree, so that adding
	// or removing one of 100,000 pods does not move the others.
	sorted *slotSet
}

// slotSet is a set of slots in List's order (namespace, then name): index entries and
// buckets, listed without sorting and changed in O(log n).
type slotSet = btree.BTreeG[*slot]

// newSlotSet returns an empty slotSet.
func newSlotSet() *slotSet {
	return btree.NewG(16, func(a, b *slot) bool { return compareKeys(a.key, b.key) < 0 })
}

// slotsOf returns the slots of set in order.
func slotsOf(set *slotSet) []*slot {
	out := make([]*slot, 0, set.Len())
	set.Ascend(func(s *slot) bool {
		out = append(out, s)
		return true
	})
	return out
}

// fieldIndex maps the values an extractor returns to the slots holding them.
type fieldIndex struct {
	extract client.IndexerFunc
	// builtin marks the indexes the store keeps on its own; a caller's IndexField replaces them.
	builtin bool
	values  map[string]*slotSet
}

// add records that s holds value v.
func (idx *fieldIndex) add(v string, s *slot) {
	set := idx.values[v]
	if set == nil {
		set = newSlotSet()
		idx.values[v] = set
	}
	set.ReplaceOrInsert(s)
}

// drop forgets that s holds value v.
func (idx *fieldIndex) drop(v string, s *slot) {
	if set := idx.values[v]; set != nil {
		set.Delete(s)
		if set.Len() == 0 {
			delete(idx.values, v)
		}
	}
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
		ks.indexes[field] = &fieldIndex{extract: extract, builtin: true, values: map[string]*slotSet{}}
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
		b = &bucket{byName: map[string]*slot{}, sorted: newSlotSet()}
		ks.buckets[s.key.Namespace] = b
		i, _ := slices.BinarySearchFunc(ks.namespaces, s.key.Namespace, compareNamespaces)
		ks.namespaces = slices.Insert(ks.namespaces, i, s.key.Namespace)
	}
	b.byName[s.key.Name] = s
	b.sorted.ReplaceOrInsert(s)
	ks.count++
	ks.index(s)
}

// remove drops a slot.
func (ks *kindStore) remove(s *slot) {
	ks.unindex(s)
	b := ks.buckets[s.key.Namespace]
	delete(b.byName, s.key.Name)
	b.sorted.Delete(s)
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
			idx.add(v, s)
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
			idx.drop(v, s)
		}
		delete(s.indexed, field)
	}
}

// addIndex installs an index on field and indexes the stored objects.
func (ks *kindStore) addIndex(field string, extract client.IndexerFunc) {
	if old := ks.indexes[field]; old != nil {
		ks.each("", func(s *slot) bool {
			for _, v := range s.indexed[field] {
				old.drop(v, s)
			}
			delete(s.indexed, field)
			return true
		})
	}
	idx := &fieldIndex{extract: extract, values: map[string]*slotSet{}}
	ks.indexes[field] = idx
	ks.each("", func(s *slot) bool {
		if s.indexed == nil {
			s.indexed = map[string][]string{}
		}
		values := extract(s.obj)
		s.indexed[field] = values
		for _, v := range values {
			idx.add(v, s)
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
			b.sorted.Ascend(fn)
		}
		return
	}
	for _, ns := range ks.namespaces {
		stopped := false
		ks.buckets[ns].sorted.Ascend(func(s *slot) bool {
			stopped = !fn(s)
			return !stopped
		})
		if stopped {
			return
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
