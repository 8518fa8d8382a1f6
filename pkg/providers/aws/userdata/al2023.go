package userdata

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// NodeConfig identity nodeadm reads (AL2023).
const (
	nodeConfigAPIVersion = "node.eks.aws/v1alpha1"
	nodeConfigKind       = "NodeConfig"
)

// AL2023 renders a MIME multi-part document for nodeadm: the parts of spec.userData first (a
// NodeConfig YAML document becomes an application/node.eks.aws part, a "#!" script a
// text/x-shellscript part, a "#cloud-config" a text/cloud-config part, and an already-MIME
// document contributes its parts unchanged), then Karpenter's NodeConfig. nodeadm merges the
// NodeConfigs in order, so Karpenter's cluster settings, node labels, taints and the kubelet
// settings set on the EC2NodeClass (every field of its kubelet configuration, those Karpenter
// does not read as written) win, and everything else the user configured is kept. The
// computed defaults (Options.MaxPods, Options.ClusterDNS) are left out when a user NodeConfig
// already sets maxPods or clusterDNS, so the user's value stands.
func AL2023(o Options) (string, error) {
	parts, err := al2023UserParts(o.userData())
	if err != nil {
		return "", err
	}
	var userConfigs []map[string]any
	for i, p := range parts {
		if p.mediaType() != contentTypeNodeConfig {
			continue
		}
		cfg, err := parseNodeConfig(p.body)
		if err != nil {
			// Only parts of a user MIME document can fail here: a bare NodeConfig was checked.
			return "", userDataErr("MIME part %d (%s): %v", i+1, contentTypeNodeConfig, err)
		}
		userConfigs = append(userConfigs, cfg)
	}
	doc, err := yaml.Marshal(karpenterNodeConfig(o, userConfigs))
	if err != nil {
		return "", err
	}
	return writeMIME(append(parts, newPart(contentTypeNodeConfig, doc)))
}

// al2023UserParts turns spec.userData into MIME parts.
func al2023UserParts(s string) ([]part, error) {
	trimmed := strings.TrimSpace(s)
	switch {
	case trimmed == "":
		return nil, nil
	case looksLikeMIME(s):
		return parseMIME(s)
	case strings.HasPrefix(trimmed, "#!"):
		return []part{newPart(contentTypeShellScript, []byte(s))}, nil
	case strings.HasPrefix(trimmed, "#cloud-config"):
		return []part{newPart(contentTypeCloudConfig, []byte(s))}, nil
	}
	if _, err := parseNodeConfig([]byte(s)); err != nil {
		if strings.Contains(s, "node.eks.aws") || strings.Contains(s, nodeConfigKind) {
			return nil, userDataErr("%v", err)
		}
		return nil, userDataErr("for AL2023 it must be a NodeConfig YAML document (apiVersion %s, kind %s), "+
			"a shell script starting with #!, a #cloud-config document, or a MIME multi-part document; "+
			"it is none of these (%v)", nodeConfigAPIVersion, nodeConfigKind, err)
	}
	return []part{newPart(contentTypeNodeConfig, []byte(s))}, nil
}

// parseNodeConfig checks that b is a YAML NodeConfig and returns it as a map.
func parseNodeConfig(b []byte) (map[string]any, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("NodeConfig is not valid YAML: %v", err)
	}
	apiVersion, _ := cfg["apiVersion"].(string)
	kind, _ := cfg["kind"].(string)
	if !strings.HasPrefix(apiVersion, "node.eks.aws/") || kind != nodeConfigKind {
		return nil, fmt.Errorf("YAML document is not a NodeConfig: got apiVersion %q, kind %q, want apiVersion %s, kind %s",
			apiVersion, kind, nodeConfigAPIVersion, nodeConfigKind)
	}
	return cfg, nil
}

// userKubeletConfigSets reports whether any of the user's NodeConfigs sets
// spec.kubelet.config.<key>.
func userKubeletConfigSets(cfgs []map[string]any, key string) bool {
	for _, cfg := range cfgs {
		spec, _ := cfg["spec"].(map[string]any)
		kubelet, _ := spec["kubelet"].(map[string]any)
		config, _ := kubelet["config"].(map[string]any)
		if _, ok := config[key]; ok {
			return true
		}
	}
	return false
}

// karpenterNodeConfig builds Karpenter's NodeConfig.
func karpenterNodeConfig(o Options, userConfigs []map[string]any) map[string]any {
	cluster := map[string]any{
		"name":              o.ClusterName,
		"apiServerEndpoint": o.ClusterEndpoint,
	}
	if len(o.CABundle) > 0 {
		cluster["certificateAuthority"] = base64.StdEncoding.EncodeToString(o.CABundle)
	}
	if o.ClusterCIDR != "" {
		cluster["cidr"] = o.ClusterCIDR
	}

	k := o.kubelet()
	config := map[string]any{}
	// The kubelet fields Karpenter does not read, as the EC2NodeClass writes them: nodeadm
	// passes the whole configuration to the kubelet, so AL2023 takes any field (the other
	// families' NodeClasses are refused them). Karpenter's own settings below win.
	for _, name := range k.Unmanaged() {
		config[name] = json.RawMessage(k.Other[name].Raw)
	}
	if mp, explicit := o.maxPods(); mp != nil && (explicit || !userKubeletConfigSets(userConfigs, "maxPods")) {
		config["maxPods"] = *mp
	}
	if dns, explicit := o.clusterDNS(); len(dns) > 0 && (explicit || !userKubeletConfigSets(userConfigs, "clusterDNS")) {
		config["clusterDNS"] = dns
	}
	if k.PodsPerCore != nil {
		config["podsPerCore"] = *k.PodsPerCore
	}
	setMap := func(key string, m map[string]string) {
		if len(m) > 0 {
			config[key] = m
		}
	}
	setMap("systemReserved", k.SystemReserved)
	setMap("kubeReserved", k.KubeReserved)
	setMap("evictionHard", k.EvictionHard)
	setMap("evictionSoft", k.EvictionSoft)
	setMap("evictionSoftGracePeriod", durations(k.EvictionSoftGracePeriod))
	if k.EvictionMaxPodGracePeriod != nil {
		config["evictionMaxPodGracePeriod"] = *k.EvictionMaxPodGracePeriod
	}
	if k.ImageGCHighThresholdPercent != nil {
		config["imageGCHighThresholdPercent"] = *k.ImageGCHighThresholdPercent
	}
	if k.ImageGCLowThresholdPercent != nil {
		config["imageGCLowThresholdPercent"] = *k.ImageGCLowThresholdPercent
	}
	if k.CPUCFSQuota != nil {
		config["cpuCFSQuota"] = *k.CPUCFSQuota
	}
	if len(o.Taints) > 0 {
		taints := make([]map[string]any, 0, len(o.Taints))
		for _, t := range o.Taints {
			taint := map[string]any{"key": t.Key, "effect": string(t.Effect)}
			if t.Value != "" {
				taint["value"] = t.Value
			}
			taints = append(taints, taint)
		}
		config["registerWithTaints"] = taints
	}

	kubelet := map[string]any{}
	if len(config) > 0 {
		kubelet["config"] = config
	}
	if len(o.Labels) > 0 {
		kubelet["flags"] = []string{"--node-labels=" + nodeLabels(o.Labels)}
	}

	spec := map[string]any{"cluster": cluster}
	if len(kubelet) > 0 {
		spec["kubelet"] = kubelet
	}
	if o.raid0() {
		spec["instance"] = map[string]any{"localStorage": map[string]any{"strategy": "RAID0"}}
	}
	return map[string]any{
		"apiVersion": nodeConfigAPIVersion,
		"kind":       nodeConfigKind,
		"spec":       spec,
	}
}
