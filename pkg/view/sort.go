package view

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// SortKey is what the rows of a snapshot are ordered by: one of the named keys below, a
// computed label key (NodeAgeLabel, UsageLabel), or any label key. Rows are ordered by a
// label's values naturally (numbers in them by value: 2 before 10), the rows without the
// label last whatever the order. Ties are broken by name, so the order is total.
type SortKey string

// The named sort keys.
const (
	// SortCreation orders by age, as eks-node-viewer's creation does: oldest first by default,
	// newest first ascending.
	SortCreation SortKey = "creation"
	// SortPrice orders by $/hour: most expensive first by default; unpriced rows last.
	SortPrice SortKey = "price"
	// SortName orders by name, A to Z by default.
	SortName SortKey = "name"
	// SortCPU orders by the share of CPU requested: fullest first by default; claims last.
	SortCPU SortKey = "cpu"
	// SortMemory orders by the share of memory requested: fullest first by default; claims
	// last.
	SortMemory SortKey = "memory"
)

// SortKeys are the named sort keys, the default first.
var SortKeys = []SortKey{SortCreation, SortPrice, SortName, SortCPU, SortMemory}

// SortOrder is the direction of a sort, named as eks-node-viewer's --node-sort names it.
type SortOrder string

// The sort orders.
const (
	// SortAscending puts the smallest value first: the newest node for SortCreation.
	SortAscending SortOrder = "asc"
	// SortDescending puts the largest value first: the oldest node for SortCreation.
	SortDescending SortOrder = "dsc"
)

// DefaultOrder is the order k sorts in when none is given: descending for creation (oldest
// first), price and the named usage keys (cpu, memory), ascending for the others, as
// eks-node-viewer sorts labels.
func (k SortKey) DefaultOrder() SortOrder {
	switch k {
	case "", SortCreation, SortPrice, SortCPU, SortMemory:
		return SortDescending
	default:
		return SortAscending
	}
}

// ParseSort parses eks-node-viewer's --node-sort syntax: a sort key, optionally followed by
// =asc or =dsc, such as creation=dsc, price, eks-node-viewer/node-cpu-usage=asc or
// topology.kubernetes.io/zone=dsc. Without a direction the order is the key's DefaultOrder.
func ParseSort(s string) (SortKey, SortOrder, error) {
	key, order := SortKey(s), SortOrder("")
	if i := strings.LastIndexByte(s, '='); i >= 0 {
		key, order = SortKey(s[:i]), SortOrder(s[i+1:])
		if order != SortAscending && order != SortDescending {
			return "", "", fmt.Errorf("unknown sort order %q in %q: want %s or %s, as in %s=%s",
				order, s, SortAscending, SortDescending, key, SortDescending)
		}
	}
	if key == "" {
		return "", "", fmt.Errorf("no sort key in %q: want one of %s, or a label key", s, sortKeyNames())
	}
	if !slices.Contains(SortKeys, key) {
		if err := validateLabelKey(string(key)); err != nil {
			return "", "", fmt.Errorf("unknown sort %q: want one of %s, or a label key: %w", key, sortKeyNames(), err)
		}
	}
	if order == "" {
		order = key.DefaultOrder()
	}
	return key, order, nil
}

// sortKeyNames lists the named sort keys, comma-separated.
func sortKeyNames() string {
	names := make([]string, len(SortKeys))
	for i, k := range SortKeys {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// sortResource is the resource whose usage key orders by, or "" when it orders by something
// else.
func sortResource(key SortKey) corev1.ResourceName {
	switch key {
	case SortCPU:
		return corev1.ResourceCPU
	case SortMemory:
		return corev1.ResourceMemory
	}
	name, _ := usageLabelResource(string(key))
	return name
}

// sortRows orders s.Rows by key in order (the key's DefaultOrder when empty). Rows without a
// value for the key go last; ties go by name.
func sortRows(s *Snapshot, key SortKey, order SortOrder) {
	if key == "" {
		key = SortCreation
	}
	if order == "" {
		order = key.DefaultOrder()
	}
	compare, missing := rowComparison(s, key)
	sign := 1
	if order == SortDescending {
		sign = -1
	}
	// Sort pointers, then place the rows once: rows are large to swap, and comparing copies
	// would move each to the heap.
	rows := make([]*Row, len(s.Rows))
	for i := range s.Rows {
		rows[i] = &s.Rows[i]
	}
	slices.SortStableFunc(rows, func(a, b *Row) int {
		aMissing, bMissing := missing != nil && missing(a), missing != nil && missing(b)
		switch {
		case aMissing && !bMissing:
			return 1
		case bMissing && !aMissing:
			return -1
		case !aMissing:
			if c := sign * compare(a, b); c != 0 {
				return c
			}
		}
		return strings.Compare(a.Name, b.Name)
	})
	sorted := make([]Row, len(rows))
	for i, r := range rows {
		sorted[i] = *r
	}
	s.Rows = sorted
}

// rowComparison returns how key orders two rows ascending, and which rows have no value for
// it (nil when all have one).
func rowComparison(s *Snapshot, key SortKey) (compare func(a, b *Row) int, missing func(*Row) bool) {
	switch key {
	case SortCreation, NodeAgeLabel:
		// By age: the later created, the younger.
		return func(a, b *Row) int { return b.Created.Compare(a.Created) }, nil
	case SortPrice:
		return func(a, b *Row) int { return cmp.Compare(a.Price, b.Price) }, func(r *Row) bool { return !r.Priced }
	case SortName:
		return func(a, b *Row) int { return strings.Compare(a.Name, b.Name) }, nil
	}
	if name := sortResource(key); name != "" {
		i := slices.Index(s.Measured, name)
		return func(a, b *Row) int { return cmp.Compare(a.Usage[i].Fraction(), b.Usage[i].Fraction()) },
			func(r *Row) bool { return r.Usage == nil }
	}
	label := string(key)
	return func(a, b *Row) int { return naturalCompare(a.Labels[label], b.Labels[label]) },
		func(r *Row) bool { _, ok := r.Labels[label]; return !ok }
}

// naturalCompare orders strings as people do: runs of digits by their value, so that node-2
// comes before node-10, and the rest byte by byte.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		if isDigit(a[0]) && isDigit(b[0]) {
			da, db := digitRun(a), digitRun(b)
			na, nb := strings.TrimLeft(da, "0"), strings.TrimLeft(db, "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digitRun is the run of digits s starts with.
func digitRun(s string) string {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i]
}
