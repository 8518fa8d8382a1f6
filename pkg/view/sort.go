package view

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// SortKey orders the rows of a snapshot. Ties are broken by name, so the order is total.
type SortKey string

// The sort keys.
const (
	// SortCreation puts the oldest node first.
	SortCreation SortKey = "creation"
	// SortPrice puts the most expensive node first and unpriced ones last.
	SortPrice SortKey = "price"
	// SortName orders by name.
	SortName SortKey = "name"
	// SortCPU puts the node with the largest share of its CPU requested first.
	SortCPU SortKey = "cpu"
	// SortMemory puts the node with the largest share of its memory requested first.
	SortMemory SortKey = "memory"
)

// SortKeys are the valid sort keys, the default first.
var SortKeys = []SortKey{SortCreation, SortPrice, SortName, SortCPU, SortMemory}

// ParseSortKey returns the sort key named s, or an error listing the valid ones.
func ParseSortKey(s string) (SortKey, error) {
	for _, k := range SortKeys {
		if string(k) == s {
			return k, nil
		}
	}
	names := make([]string, len(SortKeys))
	for i, k := range SortKeys {
		names[i] = string(k)
	}
	return "", fmt.Errorf("unknown sort %q: want one of %s", s, strings.Join(names, ", "))
}

func sortRows(rows []Row, key SortKey) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		var c int
		switch key {
		case SortPrice:
			c = cmpPrice(&a, &b)
		case SortName:
		case SortCPU:
			c = cmp.Compare(b.CPU.Fraction(), a.CPU.Fraction())
		case SortMemory:
			c = cmp.Compare(b.Memory.Fraction(), a.Memory.Fraction())
		default:
			c = a.Created.Compare(b.Created)
		}
		if c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// cmpPrice orders the more expensive first and the unpriced last.
func cmpPrice(a, b *Row) int {
	switch {
	case a.Priced && b.Priced:
		return cmp.Compare(b.Price, a.Price)
	case a.Priced:
		return -1
	case b.Priced:
		return 1
	default:
		return 0
	}
}
