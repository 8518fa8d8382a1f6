package userdata

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// bottlerocketRAID0Command is the settings.bootstrap-commands entry that assembles the
// instance-store disks into one array and puts the container runtime, kubelet and pod logs on
// it (instanceStorePolicy RAID0).
const bottlerocketRAID0Command = "000-mount-instance-storage"

// Bottlerocket renders Bottlerocket's TOML settings. spec.userData is parsed as TOML, then
// Karpenter's settings are merged into settings.kubernetes:
//
//   - cluster-name, api-server and cluster-certificate (when a CA bundle is known) are
//     Karpenter's and replace the user's;
//   - node-labels and node-taints are merged, Karpenter's labels and taint keys replacing the
//     user's entries with the same key (taints render as key = ["value:Effect", ...]);
//   - every kubelet setting set on the EC2NodeClass (max-pods, cluster-dns-ip, pods-per-core,
//     system-reserved, kube-reserved, eviction-hard, eviction-soft,
//     eviction-soft-grace-period, eviction-max-pod-grace-period,
//     image-gc-high/low-threshold-percent, cpu-cfs-quota-enforced) replaces the user's;
//   - the computed defaults (Options.MaxPods, Options.ClusterDNS) only fill max-pods and
//     cluster-dns-ip when the user did not set them;
//   - instanceStorePolicy RAID0 adds settings.bootstrap-commands."000-mount-instance-storage",
//     which runs apiclient ephemeral-storage init and bind.
//
// Everything else the user wrote is kept. The output is TOML with sorted keys.
func Bottlerocket(o Options) (string, error) {
	doc := map[string]any{}
	if _, err := toml.Decode(o.userData(), &doc); err != nil {
		return "", userDataErr("is not valid TOML for Bottlerocket: %v", err)
	}
	settings, err := subTable(doc, "settings")
	if err != nil {
		return "", err
	}
	kube, err := subTable(settings, "settings", "kubernetes")
	if err != nil {
		return "", err
	}

	kube["cluster-name"] = o.ClusterName
	kube["api-server"] = o.ClusterEndpoint
	if len(o.CABundle) > 0 {
		kube["cluster-certificate"] = base64String(o.CABundle)
	}
	if dns, explicit := o.clusterDNS(); len(dns) > 0 {
		if _, userSet := kube["cluster-dns-ip"]; explicit || !userSet {
			if len(dns) == 1 {
				kube["cluster-dns-ip"] = dns[0]
			} else {
				kube["cluster-dns-ip"] = dns
			}
		}
	}
	if mp, explicit := o.maxPods(); mp != nil {
		if _, userSet := kube["max-pods"]; explicit || !userSet {
			kube["max-pods"] = int64(*mp)
		}
	}

	if len(o.Labels) > 0 {
		labels, err := subTable(kube, "settings", "kubernetes", "node-labels")
		if err != nil {
			return "", err
		}
		for k, v := range o.Labels {
			labels[k] = v
		}
	}
	if len(o.Taints) > 0 {
		taints, err := subTable(kube, "settings", "kubernetes", "node-taints")
		if err != nil {
			return "", err
		}
		ours := map[string][]string{}
		for _, t := range o.Taints {
			ours[t.Key] = append(ours[t.Key], fmt.Sprintf("%s:%s", t.Value, t.Effect))
		}
		for k, v := range ours {
			taints[k] = v
		}
	}

	k := o.kubelet()
	if k.PodsPerCore != nil {
		kube["pods-per-core"] = int64(*k.PodsPerCore)
	}
	setMap := func(key string, m map[string]string) {
		if len(m) > 0 {
			kube[key] = m
		}
	}
	setMap("system-reserved", k.SystemReserved)
	setMap("kube-reserved", k.KubeReserved)
	setMap("eviction-hard", k.EvictionHard)
	setMap("eviction-soft", k.EvictionSoft)
	setMap("eviction-soft-grace-period", durations(k.EvictionSoftGracePeriod))
	if k.EvictionMaxPodGracePeriod != nil {
		kube["eviction-max-pod-grace-period"] = int64(*k.EvictionMaxPodGracePeriod)
	}
	// Bottlerocket's image GC thresholds are strings in its settings model.
	if k.ImageGCHighThresholdPercent != nil {
		kube["image-gc-high-threshold-percent"] = strconv.Itoa(int(*k.ImageGCHighThresholdPercent))
	}
	if k.ImageGCLowThresholdPercent != nil {
		kube["image-gc-low-threshold-percent"] = strconv.Itoa(int(*k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		kube["cpu-cfs-quota-enforced"] = *k.CPUCFSQuota
	}

	if o.raid0() {
		cmds, err := subTable(settings, "settings", "bootstrap-commands")
		if err != nil {
			return "", err
		}
		cmds[bottlerocketRAID0Command] = map[string]any{
			"commands": [][]string{
				{"apiclient", "ephemeral-storage", "init"},
				{"apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"},
			},
			"mode":      "always",
			"essential": true,
		}
	}

	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	if err := enc.Encode(doc); err != nil {
		return "", fmt.Errorf("encoding Bottlerocket settings: %w", err)
	}
	return buf.String(), nil
}

// subTable returns parent[path[len(path)-1]] as a table, creating it when absent. path is the
// full dotted path, for the error when the user's TOML has something other than a table there.
func subTable(parent map[string]any, path ...string) (map[string]any, error) {
	key := path[len(path)-1]
	v, ok := parent[key]
	if !ok {
		t := map[string]any{}
		parent[key] = t
		return t, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, userDataErr("%s must be a TOML table, not %T", strings.Join(path, "."), v)
	}
	return t, nil
}
