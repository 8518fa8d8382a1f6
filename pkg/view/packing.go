package view

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/openkarpenter/karpenter/pkg/packing"
)

// PackingCache remembers the last packing a snapshot computed (Summary.Packing) and a
// fingerprint of what it was computed from: the NodePools and DaemonSets (their generations),
// the zones, and each NodePool's nodes, cost and pods (their UIDs and resource versions), in
// whatever order they were listed. A live view
// re-packs only when one of them changed. Its zero value is ready to use; it is safe for
// concurrent use.
type PackingCache struct {
	mu     sync.Mutex
	key    uint64
	result *packing.Result
	// settled is the last packing measured with no pod pending and no NodeClaim launching,
	// at settledAt.
	settled   *packing.Result
	settledAt time.Time
}

// hold returns the packing to show: p, remembered as the settled one, when the cluster is
// settled; else the last settled packing and when it was measured, or p (with a zero time)
// when there is none yet.
func (c *PackingCache) hold(p *packing.Result, unsettled bool, now time.Time) (*packing.Result, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !unsettled {
		c.settled, c.settledAt = p, now
		return p, time.Time{}
	}
	if c.settled != nil {
		return c.settled, c.settledAt
	}
	return p, time.Time{}
}

// get returns the packing of in, computing it unless the last call was for the same fleet.
func (c *PackingCache) get(objs Objects, zones []string, in packing.Input) *packing.Result {
	h := fnv.New64a()
	word := func(s string) {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	number := func(v uint64) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], v)
		_, _ = h.Write(b[:])
	}
	// Informers list in no particular order: each part is hashed sorted, so that the same
	// fleet read in another order has the same key. Specs are what the packing reads, so the
	// NodePools and DaemonSets count by generation, not by every status write.
	sortedWords := func(items []string) {
		slices.Sort(items)
		for _, s := range items {
			word(s)
		}
	}
	var specs []string
	for i := range objs.NodePools {
		np := &objs.NodePools[i]
		specs = append(specs, fmt.Sprintf("nodepool/%s/%d", np.Name, np.Generation))
	}
	for i := range objs.DaemonSets {
		ds := &objs.DaemonSets[i]
		specs = append(specs, fmt.Sprintf("daemonset/%s/%s/%d", ds.Namespace, ds.Name, ds.Generation))
	}
	sortedWords(specs)
	for _, z := range zones {
		word(z)
	}
	for _, p := range in.Pools {
		word(p.NodePool.Name)
		number(uint64(p.Nodes))
		number(math.Float64bits(p.Current))
		pods := make([]string, len(p.Pods))
		for i, pod := range p.Pods {
			pods[i] = string(pod.UID) + "/" + pod.ResourceVersion
		}
		sortedWords(pods)
	}
	key := h.Sum64()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.result != nil && c.key == key {
		return c.result
	}
	c.key, c.result = key, packing.Compute(in)
	return c.result
}
