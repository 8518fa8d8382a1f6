package sim

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// State is what a Store keeps of a cloud: its live instances and the counters that keep new
// instance IDs and addresses from repeating earlier ones.
type State struct {
	// Launches counts the instances ever launched; IDs derive from it.
	Launches uint64 `json:"launches"`
	// Addresses counts the addresses handed out per zone; private IPs and so Node names derive
	// from it.
	Addresses map[string]int `json:"addresses,omitempty"`
	// Instances are the live instances, in launch order.
	Instances []Instance `json:"instances"`
}

// Store keeps a cloud's State outside the process, so that a controller that restarts, or a
// standby replica that takes over leadership, finds the instances launched before it instead
// of an empty cloud (whose NodeClaims it would garbage collect and launch again). Load is
// called once, on the cloud's first use; Save after every launch and termination.
type Store interface {
	// Load returns the stored state; a store never written returns the zero State.
	Load(ctx context.Context) (State, error)
	// Save replaces the stored state.
	Save(ctx context.Context, s State) error
}

// ConfigMapStore keeps the state in a ConfigMap, gzipped JSON under the binary key
// ConfigMapStateKey: the API server the controllers already use is the one place every
// replica of an in-cluster simulated cloud can reach. Only the leader writes it.
type ConfigMapStore struct {
	kube            client.Client
	namespace, name string
}

// ConfigMapStateKey is the ConfigMap's binaryData key that holds the state.
const ConfigMapStateKey = "state.json.gz"

// NewConfigMapStore returns a store in the ConfigMap namespace/name.
func NewConfigMapStore(kube client.Client, namespace, name string) *ConfigMapStore {
	return &ConfigMapStore{kube: kube, namespace: namespace, name: name}
}

// ErrUnusableState is wrapped by the errors of a state ConfigMap that exists but cannot be
// the simulated cloud's: another program's ConfigMap of the same name, or a corrupt state.
// Unlike a failed read it does not pass by retrying; the error says how to fix it.
var ErrUnusableState = errors.New("unusable simulated cloud state")

// Load reads the ConfigMap; a missing one is an empty cloud.
func (s *ConfigMapStore) Load(ctx context.Context) (State, error) {
	return LoadConfigMapState(ctx, s.kube, s.namespace, s.name)
}

// LoadConfigMapState reads the state a ConfigMapStore keeps in the ConfigMap namespace/name
// through reader; a missing ConfigMap is an empty cloud. A ConfigMap without the state, or with
// a state that cannot be decoded, is an ErrUnusableState naming the fix: the simulated cloud
// never takes another program's ConfigMap for an empty cloud and overwrites it.
func LoadConfigMapState(ctx context.Context, reader client.Reader, namespace, name string) (State, error) {
	cm := &corev1.ConfigMap{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return State{}, nil
		}
		return State{}, fmt.Errorf("reading configmap %s/%s: %w", namespace, name, err)
	}
	fix := fmt.Sprintf("delete it (kubectl delete configmap -n %s %s) to start with an empty simulated cloud, or name another ConfigMap with --sim-state-configmap (SIM_STATE_CONFIGMAP)", namespace, name)
	data, ok := cm.BinaryData[ConfigMapStateKey]
	if !ok {
		return State{}, fmt.Errorf("%w: configmap %s/%s has no binaryData key %s: it is not the simulated cloud's state (another program's ConfigMap of that name?); %s",
			ErrUnusableState, namespace, name, ConfigMapStateKey, fix)
	}
	st, err := DecodeState(data)
	if err != nil {
		return State{}, fmt.Errorf("%w: configmap %s/%s: %v; %s", ErrUnusableState, namespace, name, err, fix)
	}
	return st, nil
}

// Save writes the ConfigMap, creating it when missing.
func (s *ConfigMapStore) Save(ctx context.Context, st State) error {
	data, err := EncodeState(st)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: s.namespace, Name: s.name}
	switch err := s.kube.Get(ctx, key, cm); {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name, Labels: map[string]string{"app.kubernetes.io/managed-by": "karpenter"}},
			BinaryData: map[string][]byte{ConfigMapStateKey: data},
		}
		if err := s.kube.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating configmap %s/%s: %w", s.namespace, s.name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading configmap %s/%s: %w", s.namespace, s.name, err)
	}
	if cm.BinaryData == nil {
		cm.BinaryData = map[string][]byte{}
	}
	cm.BinaryData[ConfigMapStateKey] = data
	if err := s.kube.Update(ctx, cm); err != nil {
		return fmt.Errorf("writing configmap %s/%s: %w", s.namespace, s.name, err)
	}
	return nil
}

// DecodeState reads the stored form of a State (gzipped JSON); empty data is the zero State.
func DecodeState(data []byte) (State, error) {
	var st State
	if len(data) == 0 {
		return st, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return st, fmt.Errorf("decoding the simulated cloud's state: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return st, fmt.Errorf("decoding the simulated cloud's state: %w", err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("decoding the simulated cloud's state: %w", err)
	}
	return st, nil
}

// EncodeState writes the stored form of a State (gzipped JSON), which DecodeState reads: what
// a ConfigMapStore keeps under ConfigMapStateKey.
func EncodeState(st State) ([]byte, error) {
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// restoreLocked loads the stored state on first use: the live instances it names are adopted
// as if this cloud had launched them. Until a load succeeds every call that depends on the
// instances fails, so that an unreadable store never looks like an empty cloud.
func (c *Cloud) restoreLocked(ctx context.Context) error {
	if c.store == nil || c.restored {
		return nil
	}
	st, err := c.store.Load(ctx)
	if err != nil {
		return fmt.Errorf("restoring the simulated cloud's instances: %w", err)
	}
	c.launches = max(c.launches, st.Launches)
	for zone, n := range st.Addresses {
		c.addresses[zone] = max(c.addresses[zone], n)
	}
	for i, s := range st.Instances {
		if c.instances[s.ID] != nil || s.State == InstanceStateTerminated {
			continue
		}
		in := &instance{
			// seq keeps the launch order, ahead of every launch of this cloud.
			seq: uint64(i + 1), id: s.ID, providerID: s.ProviderID,
			instanceType: s.InstanceType, zone: s.Zone, capacityType: s.CapacityType,
			arch: s.Labels[corev1.LabelArchStable], price: s.Price, imageID: s.ImageID,
			hostname: s.Hostname, privateIP: s.PrivateIP,
			launchTime: s.LaunchTime, runningTime: s.RunningTime, interruptAt: s.InterruptionTime, lossAt: s.LossTime,
			claimName: s.NodeClaimName, nodePoolName: s.NodePoolName, nodeClassName: s.NodeClassName,
			labels: maps.Clone(s.Labels), capacity: s.Capacity.DeepCopy(), allocatable: s.Allocatable.DeepCopy(),
			subnetHash: s.SubnetHash, securityGroupHash: s.SecurityGroupHash, bootstrap: s.Bootstrap,
			conditions: slices.Clone(s.Conditions), failAt: s.FailureTime,
			reboots: s.Reboots, rebootedUntil: s.RebootedUntil, rebootOperation: s.RebootOperation,
			reservationID: s.ReservationID, reservationEnd: s.ReservationEnd, reservedPrice: s.ReservedPrice, onDemandSince: s.OnDemandSince,
		}
		if ip, err := netip.ParseAddr(s.PrivateIP); err == nil && ip.Is4() {
			b := ip.As4()
			c.addresses[s.Zone] = max(c.addresses[s.Zone], (int(b[1]&15)<<16|int(b[2])<<8|int(b[3]))-9)
		}
		c.instances[in.id] = in
		c.history = append(c.history, in)
		c.live[in.id] = in
		c.byClaim[in.claimName] = in
		c.used[in.offering()]++
		if !in.interruptAt.IsZero() {
			c.scheduleLocked(in.interruptAt)
		}
		if !in.lossAt.IsZero() {
			c.scheduleLocked(in.lossAt)
		}
		if !in.reservationEnd.IsZero() {
			c.scheduleLocked(in.reservationEnd)
		}
	}
	c.restored = true
	return nil
}

// persistLocked saves the state when a launch or termination changed it since the last save.
func (c *Cloud) persistLocked(ctx context.Context) error {
	if c.store == nil || !c.dirty {
		return nil
	}
	live := slices.SortedFunc(maps.Values(c.live), func(a, b *instance) int { return cmp.Compare(a.seq, b.seq) })
	now := c.clock.Now()
	st := State{Launches: c.launches, Addresses: maps.Clone(c.addresses), Instances: make([]Instance, len(live))}
	for i, in := range live {
		st.Instances[i] = in.snapshot(now, c.nodeFailure())
	}
	if err := c.store.Save(ctx, st); err != nil {
		return fmt.Errorf("saving the simulated cloud's instances: %w", err)
	}
	c.dirty = false
	return nil
}
